package agentserver

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agent"
	"github.com/acs-project/acs/sandbox/wire"
)

// Close codes of the events socket.
const (
	closeAuthFailed = websocket.StatusCode(4001)
	closeNotFound   = websocket.StatusCode(4004)
	closeTryAgain   = websocket.StatusCode(1013)
)

// maxSubscribers bounds sockets per conversation.
const maxSubscribers = 50

// authTimeout is how long a socket may take to send its auth frame.
const authTimeout = 10 * time.Second

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
	presented := q.Get("session_api_key")
	if presented == "" {
		presented = r.Header.Get("X-Session-API-Key")
	}
	opts := &websocket.AcceptOptions{InsecureSkipVerify: true}
	conn, err := websocket.Accept(w, r, opts)
	if err != nil {
		return
	}
	conn.SetReadLimit(wire.MaxBodyBytes)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	if len(s.cfg.SessionKeys) > 0 {
		if presented == "" {
			presented = readAuthFrame(ctx, conn)
		}
		if !s.keyOK(presented) {
			conn.Close(closeAuthFailed, "Authentication failed")
			return
		}
	}
	id, err := wire.ParseID(r.PathValue("id"))
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
		return conn.Write(wctx, websocket.MessageText, frame)
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

// readAuthFrame waits up to authTimeout for {"type":"auth","session_api_key":
// "..."}. (The read is not given a deadline context: cancelling a read closes
// the connection before the 4001 close frame can be sent.)
func readAuthFrame(ctx context.Context, conn *websocket.Conn) string {
	type result struct {
		typ  websocket.MessageType
		data []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		typ, data, err := conn.Read(ctx)
		ch <- result{typ, data, err}
	}()
	var r result
	select {
	case r = <-ch:
	case <-time.After(authTimeout):
		return ""
	case <-ctx.Done():
		return ""
	}
	if r.err != nil || r.typ != websocket.MessageText {
		return ""
	}
	var f struct {
		Type string `json:"type"`
		Key  string `json:"session_api_key"`
	}
	if json.Unmarshal(r.data, &f) != nil || f.Type != "auth" {
		return ""
	}
	return f.Key
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
		if isAuthFrame(data) {
			continue
		}
		var msg wire.SendMessageRequest
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

func isAuthFrame(data []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	t, ok := m["type"]
	if !ok || string(t) != `"auth"` {
		return false
	}
	for k := range m {
		if k != "type" && k != "session_api_key" {
			return false
		}
	}
	return true
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
