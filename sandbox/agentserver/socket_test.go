package agentserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

func (e *env) dial(t *testing.T, id, query string, header http.Header) (*websocket.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(e.http.URL, "http") + "/sockets/events/" + id
	if query != "" {
		u += "?" + query
	}
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: header})
	return c, err
}

func readFrame(t *testing.T, c *websocket.Conn) (map[string]any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, data, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("frame is not JSON: %s", data)
	}
	return m, nil
}

func auth(t *testing.T, c *websocket.Conn, key string) {
	t.Helper()
	if err := c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"auth","session_api_key":"`+key+`"}`)); err != nil {
		t.Fatal(err)
	}
}

func closeStatus(t *testing.T, c *websocket.Conn) websocket.StatusCode {
	t.Helper()
	for {
		if _, err := readFrame(t, c); err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

func TestSocketAuthAndCloseCodes(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	cases := []struct {
		name   string
		id     string
		query  string
		header http.Header
		frame  string
		want   websocket.StatusCode
	}{
		{"bad first frame key", id, "", nil, "wrong", 4001},
		{"bad query key", id, "session_api_key=wrong", nil, "", 4001},
		{"bad header key", id, "", http.Header{"X-Session-Api-Key": {"wrong"}}, "", 4001},
		{"unknown conversation", strings.Repeat("3", 32), "", nil, testKey, 4004},
		{"malformed conversation id", "nope", "", nil, testKey, 4004},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := e.dial(t, tc.id, tc.query, tc.header)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			if tc.frame != "" {
				auth(t, c, tc.frame)
			}
			if got := closeStatus(t, c); got != tc.want {
				t.Fatalf("close status %d, want %d", got, tc.want)
			}
		})
	}
	t.Run("no auth frame in time is refused", func(t *testing.T) {
		if testing.Short() {
			t.Skip("waits for the 10s auth window")
		}
		c, err := e.dial(t, id, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		if got := closeStatus(t, c); got != 4001 {
			t.Fatalf("close status %d", got)
		}
	})
}

func TestSocketStreamsEvents(t *testing.T) {
	e := newEnv(t,
		llmtest.Reply{MatchText: "first", Text: "first reply"},
		llmtest.Reply{MatchText: "over the socket", ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "socket done"}}}},
	)
	id := e.create(map[string]any{"initial_message": userMessage("first", true)})
	e.waitStatus(id, "finished")
	history := e.allEvents(id)

	for _, mode := range []string{"first frame", "query", "header"} {
		t.Run("replay all with "+mode+" auth", func(t *testing.T) {
			var c *websocket.Conn
			var err error
			switch mode {
			case "first frame":
				c, err = e.dial(t, id, "resend_mode=all", nil)
			case "query":
				c, err = e.dial(t, id, "resend_all=true&session_api_key="+testKey, nil)
			case "header":
				c, err = e.dial(t, id, "resend_mode=all", http.Header{"X-Session-Api-Key": {testKey}})
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			if mode == "first frame" {
				auth(t, c, testKey)
			}
			first, err := readFrame(t, c)
			if err != nil {
				t.Fatal(err)
			}
			if first["kind"] != "ConversationStateUpdateEvent" || first["key"] != "full_state" {
				t.Fatalf("first frame must be full_state: %v", first)
			}
			if first["value"].(map[string]any)["execution_status"] != "finished" {
				t.Fatalf("full_state value %v", first["value"])
			}
			for i, want := range history {
				got, err := readFrame(t, c)
				if err != nil {
					t.Fatal(err)
				}
				if got["id"] != want["id"] {
					t.Fatalf("replay frame %d: %v, want %v", i, got["id"], want["id"])
				}
			}
		})
	}

	t.Run("since", func(t *testing.T) {
		ts := history[3]["timestamp"].(string)
		c, err := e.dial(t, id, "resend_mode=since&after_timestamp="+ts, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		auth(t, c, testKey)
		readFrame(t, c) // full_state
		got, _ := readFrame(t, c)
		if got["id"] != history[3]["id"] {
			t.Fatalf("since replay starts at %v, want %v", got["id"], history[3]["id"])
		}
	})

	t.Run("live events and inbound message", func(t *testing.T) {
		c, err := e.dial(t, id, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		auth(t, c, testKey)
		if f, _ := readFrame(t, c); f["key"] != "full_state" {
			t.Fatalf("first frame %v", f)
		}
		// A stray auth frame is ignored; a malformed message gets a ServerErrorEvent.
		auth(t, c, testKey)
		c.Write(context.Background(), websocket.MessageText, []byte(`{"role":"user","content":[{"type":"text","text":"x"}],"bogus":1}`))
		f, _ := readFrame(t, c)
		if f["kind"] != "ServerErrorEvent" {
			t.Fatalf("want ServerErrorEvent, got %v", f)
		}
		c.Write(context.Background(), websocket.MessageText, []byte(`{"role":"user","content":[{"type":"text","text":"reply over the socket"}]}`))
		var kinds []string
		sawFinish, sawFinalState := false, false
		for !sawFinalState {
			f, err := readFrame(t, c)
			if err != nil {
				t.Fatalf("after %v: %v", kinds, err)
			}
			kinds = append(kinds, f["kind"].(string))
			if f["kind"] == "ObservationEvent" && f["tool_name"] == "finish" {
				sawFinish = true
			}
			if f["key"] == "full_state" {
				if !sawFinish {
					t.Fatalf("full_state arrived before the run's events were flushed: %v", kinds)
				}
				if f["value"].(map[string]any)["execution_status"] == "running" {
					t.Fatal("post-run full_state still running")
				}
				sawFinalState = true
			}
		}
		if kinds[0] != "MessageEvent" {
			t.Fatalf("live events %v", kinds)
		}
	})
}

func TestSocketSubscriberLimit(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	var conns []*websocket.Conn
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
	}()
	for i := 0; i < 50; i++ {
		c, err := e.dial(t, id, "session_api_key="+testKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := readFrame(t, c); err != nil {
			t.Fatalf("subscriber %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	c, err := e.dial(t, id, "session_api_key="+testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if got := closeStatus(t, c); got != 1013 {
		t.Fatalf("51st subscriber: close %d", got)
	}
}
