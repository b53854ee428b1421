// Package wsauth is the session-key handshake of the agent server's
// WebSockets: a key in the session_api_key query parameter or the
// X-Session-API-Key header, or else a first text frame
// {"type":"auth","session_api_key":"..."}.
package wsauth

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/acs-project/acs/sandbox/agentwire"
)

// Timeout is how long a socket has to send its auth frame.
const Timeout = 10 * time.Second

// Presented returns the key given with the upgrade request (query parameter
// first, then header), or "".
func Presented(r *http.Request) string {
	if k := r.URL.Query().Get(agentwire.SessionKeyQuery); k != "" {
		return k
	}
	return r.Header.Get(agentwire.SessionKeyHeader)
}

// ReadFrame waits up to timeout for the auth frame and returns its key, or
// "" on timeout, a read error or any other frame. The read has no deadline
// context: cancelling a read closes the socket before the caller can send
// its 4001 close frame; a timer bounds the wait instead.
func ReadFrame(ctx context.Context, conn *websocket.Conn, timeout time.Duration) string {
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
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var r result
	select {
	case r = <-ch:
	case <-timer.C:
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

// IsFrame reports whether data is an auth frame (and nothing else), which a
// socket ignores once authenticated.
func IsFrame(data []byte) bool {
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
