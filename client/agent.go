package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/v1wire"
)

// Agent calls the API of one agent server (a sandbox's AGENT_SERVER
// exposed URL, or a conversation's conversation_url without
// /api/conversations/<id>), authenticated with the sandbox's session key
// (X-Session-API-Key). It is safe for concurrent use.
type Agent struct {
	t   transport
	key string
}

// NewAgent returns a client of the agent server at baseURL that presents
// sessionKey ("" sends none).
func NewAgent(baseURL, sessionKey string, opts ...Option) *Agent {
	t := transport{base: strings.TrimRight(baseURL, "/"), http: http.DefaultClient, retry: DefaultRetry}
	if sessionKey != "" {
		t.auth = func(r *http.Request) { r.Header.Set(agentwire.SessionKeyHeader, sessionKey) }
	}
	for _, o := range opts {
		o(&t)
	}
	return &Agent{t: t, key: sessionKey}
}

// AgentOf returns a client of the agent server of a conversation the
// control plane reports running (ConversationURL and SessionAPIKey set).
func AgentOf(c v1wire.Conversation, opts ...Option) (*Agent, error) {
	if c.ConversationURL == nil || c.SessionAPIKey == nil {
		return nil, fmt.Errorf("conversation %s has no running agent server (sandbox %s)", c.ID, c.SandboxStatus)
	}
	base := strings.TrimSuffix(*c.ConversationURL, "/api/conversations/"+c.ID)
	return NewAgent(base, *c.SessionAPIKey, opts...), nil
}

func (a *Agent) get(ctx context.Context, path string, q url.Values, out any) error {
	return a.t.call(ctx, request{method: http.MethodGet, path: path, query: q, idempotent: true}, out)
}

// CreateConversation starts a conversation on the agent server.
func (a *Agent) CreateConversation(ctx context.Context, req *agentwire.StartConversationRequest) (agentwire.ConversationInfo, error) {
	var out agentwire.ConversationInfo
	err := a.t.call(ctx, request{method: http.MethodPost, path: "/api/conversations", body: req}, &out)
	return out, err
}

// GetConversation returns one conversation (ENOTFOUND when unknown).
func (a *Agent) GetConversation(ctx context.Context, id string) (agentwire.ConversationInfo, error) {
	var out agentwire.ConversationInfo
	err := a.get(ctx, "/api/conversations/"+escape(id), nil, &out)
	return out, err
}

// GetConversations returns the conversations of ids in their order (nil:
// unknown).
func (a *Agent) GetConversations(ctx context.Context, convIDs ...string) ([]*agentwire.ConversationInfo, error) {
	var out []*agentwire.ConversationInfo
	err := a.get(ctx, "/api/conversations", url.Values{"ids": convIDs}, &out)
	return out, err
}

// SearchConversations returns one page of the server's conversations.
func (a *Agent) SearchConversations(ctx context.Context, f Filter) (v1wire.Page[agentwire.ConversationInfo], error) {
	var p v1wire.Page[agentwire.ConversationInfo]
	err := a.get(ctx, "/api/conversations/search", f, &p)
	return p, err
}

// CountConversations counts the server's conversations.
func (a *Agent) CountConversations(ctx context.Context, f Filter) (int, error) {
	var n int
	err := a.get(ctx, "/api/conversations/count", f, &n)
	return n, err
}

// SendMessage sends a message to a conversation. It is never retried.
func (a *Agent) SendMessage(ctx context.Context, id string, req *agentwire.SendMessageRequest) error {
	return a.t.call(ctx, request{method: http.MethodPost, path: "/api/conversations/" + escape(id) + "/events", body: req}, nil)
}

// FinalResponse returns the text the agent finished the conversation
// with ("" while it has not finished).
func (a *Agent) FinalResponse(ctx context.Context, id string) (string, error) {
	var out agentwire.FinalResponse
	err := a.get(ctx, "/api/conversations/"+escape(id)+"/agent_final_response", nil, &out)
	return out.Response, err
}

// SearchEvents returns one page of a conversation's events.
func (a *Agent) SearchEvents(ctx context.Context, convID string, f Filter) (EventPage, error) {
	return a.t.eventPage(ctx, "/api/conversations/"+escape(convID)+"/events/search", f)
}

// Events yields every event of a conversation that matches f, following
// next_page_id.
func (a *Agent) Events(ctx context.Context, convID string, f Filter) iter.Seq2[events.Event, error] {
	return eventPages(f, func(q Filter) (EventPage, error) { return a.SearchEvents(ctx, convID, q) })
}

// CountEvents counts a conversation's events that match f.
func (a *Agent) CountEvents(ctx context.Context, convID string, f Filter) (int, error) {
	var n int
	err := a.get(ctx, "/api/conversations/"+escape(convID)+"/events/count", f, &n)
	return n, err
}

// ExecuteBash runs a command in the sandbox and waits for it (bounded by
// its timeout). An HTTP client with a timeout waits for the command's
// timeout plus 30 s instead. It is never retried.
func (a *Agent) ExecuteBash(ctx context.Context, req *agentwire.ExecuteBashRequest) (agentwire.BashOutput, error) {
	var out agentwire.BashOutput
	err := a.t.call(ctx, request{method: http.MethodPost, path: "/api/bash/execute_bash_command", body: req,
		timeout: time.Duration(req.Timeout+30) * time.Second}, &out)
	return out, err
}

// SearchBashEvents returns one page of the bash events (BashCommand,
// BashOutput, BashError, each as its JSON; "kind__eq", "command_id__eq",
// "limit", "page_id").
func (a *Agent) SearchBashEvents(ctx context.Context, f Filter) (v1wire.Page[json.RawMessage], error) {
	var p v1wire.Page[json.RawMessage]
	err := a.get(ctx, "/api/bash/bash_events/search", f, &p)
	return p, err
}

// Download reads a file of the sandbox (an absolute path).
func (a *Agent) Download(ctx context.Context, path string) ([]byte, error) {
	return a.t.bytes(ctx, request{method: http.MethodGet, path: "/api/file/download", query: url.Values{"path": {path}}, idempotent: true})
}

// SubscribeOptions configure Subscribe.
type SubscribeOptions struct {
	// All replays the conversation's events from its first one before
	// the live ones (resend_mode=all); otherwise only events after the
	// subscription are sent.
	All bool
	// Reconnects bounds how many times in a row a dropped connection is
	// re-established (0: 5). A connection that delivered an event resets
	// the count.
	Reconnects int
	// Backoff is the wait before a reconnection (0: 200 ms), doubled up
	// to 5 s while reconnections fail.
	Backoff time.Duration
	// HTTPClient dials the WebSocket (the Agent's own client otherwise).
	HTTPClient *http.Client
}

// Subscribe yields the events of a conversation from the agent server's
// events WebSocket as they happen: first the server's full_state snapshot
// (a ConversationStateUpdateEvent with Key "full_state"), then events.
// When the connection drops, it reconnects and continues after the last
// event it yielded (resend_mode=since), yielding no event twice; the
// full_state snapshots of later connections are yielded too (they are new
// events, with their own ids). It ends when ctx ends (no error), when the
// server closes the socket for good (unknown conversation, failed
// authentication: an *websocket.CloseError) or when reconnecting failed
// Reconnects times in a row (the last error). A frame that is no event
// (a ServerErrorEvent) is yielded as an error, and the subscription goes
// on if the caller continues.
func (a *Agent) Subscribe(ctx context.Context, convID string, o SubscribeOptions) iter.Seq2[events.Event, error] {
	if o.Reconnects <= 0 {
		o.Reconnects = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = 200 * time.Millisecond
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = a.t.http
	}
	return func(yield func(events.Event, error) bool) {
		seen := map[string]bool{}
		var resumeAt *events.Time // the last logged event's timestamp
		failures, backoff := 0, o.Backoff
		for {
			q := url.Values{}
			switch {
			case resumeAt != nil:
				q.Set("resend_mode", "since")
				q.Set("after_timestamp", resumeAt.String())
			case o.All:
				q.Set("resend_mode", "all")
			}
			u := strings.Replace(a.t.base, "http", "ws", 1) + "/sockets/events/" + escape(convID) + "?" + q.Encode()
			h := http.Header{}
			if a.key != "" {
				h.Set(agentwire.SessionKeyHeader, a.key)
			}
			conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: hc, HTTPHeader: h})
			if err == nil {
				conn.SetReadLimit(-1)
				var delivered bool
				var stop bool
				delivered, stop, err = a.read(ctx, conn, seen, &resumeAt, o.All, yield)
				conn.CloseNow()
				if stop {
					return
				}
				if delivered {
					failures, backoff = 0, o.Backoff
				}
			}
			if ctx.Err() != nil {
				return
			}
			var ce websocket.CloseError
			if errors.As(err, &ce) && ce.Code != websocket.StatusGoingAway && ce.Code != websocket.StatusAbnormalClosure &&
				ce.Code != websocket.StatusCode(1013) {
				yield(nil, fmt.Errorf("subscribe to conversation %s: %w", convID, err))
				return
			}
			failures++
			if failures > o.Reconnects {
				yield(nil, fmt.Errorf("subscribe to conversation %s: %d reconnections failed: %w", convID, o.Reconnects, err))
				return
			}
			timer := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			backoff = min(2*backoff, 5*time.Second)
		}
	}
}

// read yields the events of one connection until it fails; stop reports
// that the caller stopped (or ctx ended).
func (a *Agent) read(ctx context.Context, conn *websocket.Conn, seen map[string]bool, resumeAt **events.Time, all bool,
	yield func(events.Event, error) bool) (delivered, stop bool, err error) {
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return delivered, ctx.Err() != nil, err
		}
		if typ != websocket.MessageText {
			continue
		}
		ev, derr := events.Decode(data)
		if derr != nil {
			if !yield(nil, fmt.Errorf("events socket: %s", data)) {
				return delivered, true, nil
			}
			continue
		}
		b := ev.EventBase()
		if seen[b.ID] {
			continue
		}
		seen[b.ID] = true
		// Resume after the last logged event; before any, after the
		// first snapshot (taken when the subscription began), unless
		// everything was asked for.
		if ts := b.Timestamp; !transient(ev) || (*resumeAt == nil && !all) {
			*resumeAt = &ts
		}
		delivered = true
		if !yield(ev, nil) {
			return delivered, true, nil
		}
	}
}

// transient reports an event the agent server sends on its sockets but
// does not log (so it cannot resume after it).
func transient(ev events.Event) bool {
	switch e := ev.(type) {
	case *events.ConversationStateUpdateEvent:
		return e.Key == "full_state"
	case *events.TokenEvent:
		return true
	}
	return false
}
