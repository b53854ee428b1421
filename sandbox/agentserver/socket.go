package agentserver

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/agent"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/wsauth"
)

// Close codes of the events socket.
const (
	closeAuthFailed = websocket.StatusCode(4001)
	closeNotFound   = websocket.StatusCode(4004)
	closeTryAgain   = websocket.StatusCode(1013)
)

// maxSubscribers bounds sockets per conversation.
const maxSubscribers = 50

var (
	subMu     sync.Mutex
	subCounts = map[string]int{}
)

// eventsSocket serves /sockets/events/{id}: a full_state snapshot first, then
// the requested replay (resend_mode=all, or since with after_timestamp), then
// every new event, one JSON event per text frame. Inbound frames other than
// auth frames are user messages, sent with run=true.
func (s *Server) eventsSocket(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	presented := wsauth.Presented(r)
	// Handler checked the origin (socketOrigins), with the CORS origins.
	opts := &websocket.AcceptOptions{InsecureSkipVerify: true}
	conn, err := websocket.Accept(w, r, opts)
	if err != nil {
		return
	}
	conn.SetReadLimit(httpjson.MaxBodyBytes)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	if len(s.cfg.SessionKeys) > 0 {
		if presented == "" {
			presented = wsauth.ReadFrame(ctx, conn, wsauth.Timeout)
		}
		if !s.keyOK(presented) {
			conn.Close(closeAuthFailed, "Authentication failed")
			return
		}
	}
	id, err := agentwire.ParseID(r.PathValue("id"))
	var c *agent.Conversation
	if err == nil {
		c = s.lookup(id)
	}
	if c == nil {
		conn.Close(closeNotFound, "Conversation not found")
		return
	}
	key := c.ID().String()
	subMu.Lock()
	if subCounts[key] >= maxSubscribers {
		subMu.Unlock()
		conn.Close(closeTryAgain, "Too many connections for this conversation")
		return
	}
	subCounts[key]++
	subMu.Unlock()
	defer func() {
		subMu.Lock()
		subCounts[key]--
		subMu.Unlock()
	}()
	s.touch()

	log := c.Log()
	start := log.Len()
	switch mode := q.Get("resend_mode"); {
	case mode == "all" || q.Get("resend_all") == "true":
		start = 0
	case mode == "since":
		t, err := events.ParseTime(q.Get("after_timestamp"))
		if err != nil {
			conn.Close(websocket.StatusPolicyViolation, "resend_mode=since needs a valid after_timestamp")
			return
		}
		start = log.PositionAt(t)
	}

	transient, unsubscribe := c.Subscribe()
	defer unsubscribe()
	outbound := make(chan []byte, 16)
	go s.readSocket(ctx, cancel, conn, c, outbound)

	write := func(frame []byte) error {
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		defer wcancel()
		return conn.Write(wctx, websocket.MessageText, s.masker.MaskBytes(frame))
	}
	if err := write(events.MustEncode(c.FullState())); err != nil {
		return
	}
	pos := start
	drain := func(upto int) error {
		for pos < upto {
			items, err := log.ReadFrom(pos, min(100, upto-pos))
			if err != nil || len(items) == 0 {
				return err
			}
			for _, it := range items {
				if err := write(it); err != nil {
					return err
				}
			}
			pos += len(items)
		}
		return nil
	}
	for {
		changed := log.Changed()
		if n := log.Len(); n > pos {
			if err := drain(n); err != nil {
				return
			}
			continue
		}
		select {
		case <-ctx.Done():
			conn.Close(websocket.StatusNormalClosure, "")
			return
		case <-changed:
		case t := <-transient:
			if err := drain(t.AfterLog); err != nil {
				return
			}
			if err := write(t.Frame); err != nil {
				return
			}
		case f := <-outbound:
			if err := write(f); err != nil {
				return
			}
		}
	}
}

// readSocket handles inbound frames until the socket closes.
func (s *Server) readSocket(ctx context.Context, cancel context.CancelFunc, conn *websocket.Conn, c *agent.Conversation, out chan<- []byte) {
	defer cancel()
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			continue
		}
		if wsauth.IsFrame(data) {
			continue
		}
		var msg agentwire.SendMessageRequest
		if err := strictjson.Unmarshal(data, &msg); err != nil {
			sendServerError(ctx, out, "ValidationError", err.Error())
			continue
		}
		msg.Run = true
		if _, err := c.SendMessage(ctx, msg); err != nil {
			sendServerError(ctx, out, "SendMessageError", err.Error())
			continue
		}
		s.touch()
	}
}

// sendServerError queues a ServerErrorEvent frame (socket only, never
// persisted).
func sendServerError(ctx context.Context, out chan<- []byte, code, detail string) {
	f := struct {
		Kind      string      `json:"kind"`
		ID        string      `json:"id"`
		Timestamp events.Time `json:"timestamp"`
		Source    string      `json:"source"`
		Code      string      `json:"code"`
		Detail    string      `json:"detail"`
	}{"ServerErrorEvent", events.NewID(), events.Now(), "environment", code, detail}
	select {
	case out <- strictjson.MustMarshal(f):
	case <-ctx.Done():
	}
}
