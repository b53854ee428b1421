package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/sandbox/tools/browser"
)

// TestV1ConversationBrowses: a conversation started through /api/v1 gets
// the browser tools when the sandbox can run Chromium (as OpenHands V1
// starts conversations), its tools say so, and the agent navigates to a
// local page and reads it; with ACS_BROWSER_TOOLS=false it gets none.
func TestV1ConversationBrowses(t *testing.T) {
	if _, err := browser.FindChromium(); err != nil {
		if os.Getenv("ACS_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("no Chromium binary found (%v), and ACS_REQUIRE_CHROMIUM=1 requires one", err)
		}
		t.Skipf("skipping: no Chromium binary found (%v)", err)
	}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>Field notes</title><h1>Field notes</h1><p>The bird of the day is the pelican-7f3e.</p>")
	}))
	defer page.Close()

	// run starts a conversation on a fresh acs serve (with env) whose
	// scripted LLM answers replies, waits for it to finish, and returns
	// its tools, its events and the LLM's requests.
	run := func(t *testing.T, replies []llmtest.Reply, env ...string) ([]string, []events.Event, []*llmtest.Request) {
		llm := llmtest.New(replies...)
		defer llm.Close()
		s := startServe(t, t.TempDir(), llm.URL, env...)
		ctx := t.Context()
		c := s.api(apiKey)
		tk, err := c.StartConversation(ctx, startBody(t, `{"initial_message":{"role":"user","content":[{"type":"text","text":"What is the bird of the day on `+page.URL+`?"}],"run":true}}`))
		if err != nil {
			t.Fatal(err)
		}
		tk = s.waitTask(apiKey, tk.ID)
		if tk.Status != "READY" {
			t.Fatalf("start: %s %s\n%s", tk.Status, deref(tk.Detail), s.log)
		}
		convID := *tk.AppConversationID
		var conv = s.waitConv(apiKey, convID, "finished", func(c *convInfo) bool {
			return c.ExecutionStatus != nil && *c.ExecutionStatus == "finished"
		})
		ag, err := client.AgentOf(*conv)
		if err != nil {
			t.Fatal(err)
		}
		info, err := ag.GetConversation(ctx, convID)
		if err != nil {
			t.Fatal(err)
		}
		var tools []string
		for _, tr := range info.Agent.Tools {
			tools = append(tools, tr.Name)
		}
		var evs []events.Event
		testwait.For(t, 10*time.Second, "the events", func() bool {
			evs = eventsOf(t, ag.Events(ctx, convID, nil))
			return len(evs) > 0
		})
		return tools, evs, llm.Requests()
	}

	t.Run("on by default", func(t *testing.T) {
		tools, evs, reqs := run(t, []llmtest.Reply{
			{ToolCalls: []llmtest.ToolCall{{Name: "browser_navigate", Arguments: map[string]any{"url": page.URL}}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "browser_get_content", Arguments: map[string]any{}}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "The pelican."}}}},
		})
		if !slices.Contains(tools, "browser_tool_set") || !slices.Contains(tools, "terminal") {
			t.Fatalf("conversation tools %v lack browser_tool_set", tools)
		}
		if len(reqs) == 0 || !slices.Contains(reqs[0].ToolNames(), "browser_navigate") {
			t.Fatalf("the LLM was not offered browser_navigate")
		}
		var read string
		for _, ev := range evs {
			if o, ok := ev.(*events.ObservationEvent); ok && o.ToolName == "browser_get_content" {
				b, _ := json.Marshal(o.Observation)
				read += string(b)
			}
		}
		if !strings.Contains(read, "pelican-7f3e") {
			t.Fatalf("browser_get_content did not read the page: %q", read)
		}
	})
	t.Run("turned off", func(t *testing.T) {
		tools, _, reqs := run(t, []llmtest.Reply{
			{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "No browser."}}}},
		}, "ACS_BROWSER_TOOLS=false")
		if slices.Contains(tools, "browser_tool_set") || len(reqs) == 0 || slices.Contains(reqs[0].ToolNames(), "browser_navigate") {
			t.Fatalf("ACS_BROWSER_TOOLS=false: tools %v", tools)
		}
	})
}
