package bashapi

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/wsauth"
)

// Close codes of the bash events socket.
const (
	CloseAuthFailed = websocket.StatusCode(4001)
)

// authTimeout is how long a socket may take to send its auth frame (10 s;
// tests shorten it).
var authTimeout atomic.Int64

func init() { authTimeout.Store(int64(10 * time.Second)) }

const writeTimeout = 30 * time.Second

// SocketHandler serves WS /sockets/bash-events.
//
// Auth: when authOK("") is false a key is required; it is taken from the
// query parameter session_api_key, else the X-Session-API-Key header, else a
// first text frame {"type":"auth","session_api_key":"..."} sent within 10 s. A missing or rejected key closes the socket with 4001
// "Authentication failed". A nil authOK accepts every socket.
//
// Then, with resend_mode=all (or resend_all=true), every stored event is sent
// in timestamp order, followed by every new event, one JSON text frame per
// event, each exactly once. Inbound text frames other than auth frames are
// ExecuteBashRequest JSON, each starting a command (whose events arrive like
// any other); a frame that does not decode gets a BashError frame (code
// ValidationError, sent to this socket only, not stored). A cwd that is not a
// directory yields a stored BashError that every subscriber sees. When the
// service closes, the socket closes with 1001; a socket that falls too far
// behind is closed with 1013. The caller checks the upgrade's Origin:
// browsers apply no CORS to WebSockets.
func (s *Service) SocketHandler(authOK func(key string) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		presented := wsauth.Presented(r)
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		conn.SetReadLimit(httpjson.MaxBodyBytes)
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()

		if authOK != nil && !authOK("") {
			if presented == "" {
				presented = wsauth.ReadFrame(ctx, conn, time.Duration(authTimeout.Load()))
			}
			if presented == "" || !authOK(presented) {
				conn.Close(CloseAuthFailed, "Authentication failed")
				return
			}
		}
		replay := q.Get("resend_mode") == "all" || q.Get("resend_all") == "true"
		sub, names, err := s.subscribe(replay)
		if err != nil {
			conn.Close(websocket.StatusGoingAway, "The bash service is closed")
			return
		}
		defer s.unsubscribe(sub)

		outbound := make(chan []byte, 16)
		go s.readSocket(ctx, cancel, conn, outbound)

		write := func(frame []byte) error {
			wctx, wcancel := context.WithTimeout(ctx, writeTimeout)
			defer wcancel()
			return conn.Write(wctx, websocket.MessageText, s.maskFrame(frame))
		}
		for _, n := range names {
			b, ok := s.readEvent(n)
			if !ok {
				continue
			}
			if write(b) != nil {
				return
			}
		}
		for {
			select {
			case <-ctx.Done():
				conn.Close(websocket.StatusNormalClosure, "")
				return
			case <-sub.gone:
				// Send what was queued before the drop, then close.
			drain:
				for {
					select {
					case b := <-sub.ch:
						if write(b) != nil {
							return
						}
					default:
						break drain
					}
				}
				s.mu.Lock()
				closed := s.closed
				s.mu.Unlock()
				if closed {
					conn.Close(websocket.StatusGoingAway, "The bash service is closed")
				} else {
					conn.Close(websocket.StatusTryAgainLater, "Subscriber too slow")
				}
				return
			case b := <-sub.ch:
				if write(b) != nil {
					return
				}
			case b := <-outbound:
				if write(b) != nil {
					return
				}
			}
		}
	}
}

// readSocket handles inbound frames until the socket closes.
func (s *Service) readSocket(ctx context.Context, cancel context.CancelFunc, conn *websocket.Conn, out chan<- []byte) {
	defer cancel()
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageText || wsauth.IsFrame(data) {
			continue
		}
		var req agentwire.ExecuteBashRequest
		if err := strictjson.Unmarshal(data, &req); err != nil {
			sendError(ctx, out, agentwire.CodeValidationError, err.Error())
			continue
		}
		if _, err := s.Start(ctx, req); err != nil {
			var be *agentwire.BashError
			if errors.As(err, &be) {
				continue // stored and published to every subscriber
			}
			sendError(ctx, out, agentwire.CodeStartError, err.Error())
		}
	}
}

// sendError queues a BashError frame for this socket only.
func sendError(ctx context.Context, out chan<- []byte, code, detail string) {
	ev := &agentwire.BashError{ID: newID(), Code: code, Detail: detail}
	ev.Timestamp = events.Now()
	select {
	case out <- encodeEvent(ev):
	case <-ctx.Done():
	}
}
