package conversations_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/conversations"
)

func TestApplyState(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	later, earlier := t0.Add(time.Minute), t0.Add(-time.Minute)
	limit := "2026-01-02T04:00:00Z"
	limitT, _ := time.Parse(time.RFC3339, limit)
	stats2 := `{"usage_to_metrics":{"agent":{"accumulated_cost":2}}}`
	cost := func(c acs.Conversation) float64 {
		var m struct {
			Cost float64 `json:"accumulated_cost"`
		}
		if err := json.Unmarshal(c.Metrics, &m); err != nil {
			t.Fatal(err)
		}
		return m.Cost
	}
	base := func() acs.Conversation {
		return acs.Conversation{ExecutionStatus: "running", ExecutionStatusAt: t0, AgentStateAt: t0, RateLimitedUntil: &limitT,
			Metrics: json.RawMessage(`{"accumulated_cost":1}`), MetricsAt: t0}
	}
	for _, tc := range []struct {
		name  string
		key   string
		value string
		at    time.Time
		check func(c acs.Conversation) bool
	}{
		{"a newer status applies", "execution_status", `"finished"`, later,
			func(c acs.Conversation) bool {
				return c.ExecutionStatus == "finished" && c.ExecutionStatusAt.Equal(later)
			}},
		{"a status at the same time applies", "execution_status", `"paused"`, t0,
			func(c acs.Conversation) bool { return c.ExecutionStatus == "paused" }},
		{"an older status does not undo a newer one", "execution_status", `"idle"`, earlier,
			func(c acs.Conversation) bool { return c.ExecutionStatus == "running" && c.ExecutionStatusAt.Equal(t0) }},
		{"an unknown status is ignored", "execution_status", `"bogus"`, later,
			func(c acs.Conversation) bool { return c.ExecutionStatus == "running" }},
		{"deleting is never stored", "execution_status", `"deleting"`, later,
			func(c acs.Conversation) bool { return c.ExecutionStatus == "running" }},
		{"a status that is not a string is ignored", "execution_status", `1`, later,
			func(c acs.Conversation) bool { return c.ExecutionStatus == "running" }},
		{"a newer agent state without a limit clears it", "agent_state", `{}`, later,
			func(c acs.Conversation) bool { return c.RateLimitedUntil == nil && c.AgentStateAt.Equal(later) }},
		{"an older agent state does not undo a newer one", "agent_state", `{}`, earlier,
			func(c acs.Conversation) bool { return c.RateLimitedUntil != nil && c.AgentStateAt.Equal(t0) }},
		{"a rate limit is kept", "agent_state", `{"llm_rate_limited_until":"2026-01-02T05:00:00Z"}`, later,
			func(c acs.Conversation) bool {
				return c.RateLimitedUntil != nil && c.RateLimitedUntil.Equal(limitT.Add(time.Hour))
			}},
		{"full state applies each part", "full_state", `{"execution_status":"finished","agent_state":{}}`, later,
			func(c acs.Conversation) bool { return c.ExecutionStatus == "finished" && c.RateLimitedUntil == nil }},
		{"full state older than the last status keeps it", "full_state", `{"execution_status":"idle"}`, earlier,
			func(c acs.Conversation) bool { return c.ExecutionStatus == "running" }},
		{"newer stats apply", "stats", stats2, later,
			func(c acs.Conversation) bool { return cost(c) == 2 && c.MetricsAt.Equal(later) }},
		{"stats at the same time apply", "stats", stats2, t0,
			func(c acs.Conversation) bool { return cost(c) == 2 }},
		{"older stats do not undo newer ones", "stats", stats2, earlier,
			func(c acs.Conversation) bool { return cost(c) == 1 && c.MetricsAt.Equal(t0) }},
		{"full state older than the last stats keeps them", "full_state", `{"execution_status":"running","stats":` + stats2 + `}`, earlier,
			func(c acs.Conversation) bool { return cost(c) == 1 }},
		{"an unknown key changes nothing", "other", `"x"`, later,
			func(c acs.Conversation) bool { return c.ExecutionStatus == "running" && c.RateLimitedUntil != nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			conversations.ApplyState(&c, tc.key, json.RawMessage(tc.value), tc.at)
			if !tc.check(c) {
				t.Fatalf("after %s=%s at %v: %+v", tc.key, tc.value, tc.at, c)
			}
		})
	}
}

func TestReportApplyTags(t *testing.T) {
	c := acs.Conversation{Tags: map[string]string{}}
	for i := range conversations.MaxTags {
		c.Tags[strings.Repeat("k", i+1)] = "v"
	}
	(&conversations.Report{Tags: map[string]string{"k": "changed", "new": "x"}}).Apply(&c, time.Now())
	if c.Tags["k"] != "changed" {
		t.Errorf("an existing tag was not updated: %q", c.Tags["k"])
	}
	if _, ok := c.Tags["new"]; ok || len(c.Tags) != conversations.MaxTags {
		t.Errorf("a tag beyond %d was added: %d tags", conversations.MaxTags, len(c.Tags))
	}
}

func TestReportConversation(t *testing.T) {
	ctx := context.Background()
	received := time.Now().UTC()
	t.Run("a deleted conversation's report is dropped", func(t *testing.T) {
		s, store := newService(t)
		sb, _, sub, _ := seed(t, store)
		must(t, s.Delete(ctx, sub))
		sb, err := store.GetSandbox(ctx, sb.ID)
		must(t, err)
		err = s.ReportConversation(ctx, sb, conversations.Report{ID: sub.ID, ExecutionStatus: "running"}, received)
		if !errors.Is(err, conversations.ErrTombstone) {
			t.Fatalf("report on a deleted conversation: %v", err)
		}
		if _, err := store.GetConversation(ctx, sub.ID); !errors.Is(err, acs.ErrNotFound) {
			t.Fatalf("the report brought the conversation back: %v", err)
		}
	})
	t.Run("another sandbox's conversation is forbidden", func(t *testing.T) {
		s, store := newService(t)
		sb, _, _, other := seed(t, store)
		err := s.ReportConversation(ctx, sb, conversations.Report{ID: other.ID, ExecutionStatus: "running"}, received)
		if !errors.Is(err, acs.ErrForbidden) {
			t.Fatalf("report on another sandbox's conversation: %v", err)
		}
	})
	t.Run("a user's rename outranks an older reported title", func(t *testing.T) {
		s, store := newService(t)
		sb, parent, _, _ := seed(t, store)
		title := "mine"
		_, err := s.Update(ctx, parent, acs.ConversationUpdate{Title: acs.Field[string]{Set: true, Value: &title}}, nil)
		must(t, err)
		old, agentTitle := received.Add(-time.Hour), "the agent's"
		must(t, s.ReportConversation(ctx, sb, conversations.Report{ID: parent.ID, ExecutionStatus: "finished", Title: &agentTitle, UpdatedAt: &old}, received))
		c, err := store.GetConversation(ctx, parent.ID)
		must(t, err)
		if c.Title == nil || *c.Title != "mine" || c.ExecutionStatus != "finished" {
			t.Fatalf("after an older report: title %v, status %q", c.Title, c.ExecutionStatus)
		}
	})
	t.Run("a conversation made on the agent server is recorded", func(t *testing.T) {
		s, store := newService(t)
		sb, _, _, _ := seed(t, store)
		id := acs.NewID()
		must(t, s.ReportConversation(ctx, sb, conversations.Report{ID: id, ExecutionStatus: "idle"}, received))
		c, err := store.GetConversation(ctx, id)
		must(t, err)
		got, err := store.GetSandbox(ctx, sb.ID)
		must(t, err)
		if c.OwnerID != sb.OwnerID || c.SandboxID != sb.ID || !got.HasSlot(id) {
			t.Fatalf("recorded %+v on %+v", c, got)
		}
	})
	t.Run("a conversation a start is still creating waits for its record", func(t *testing.T) {
		// The start reserved the slot and creates the conversation on the
		// agent server while it stores the record: a report arriving first
		// must not make a record of its own (the start's would then
		// conflict), nor be lost.
		s, store := newService(t)
		sb, _, _, _ := seed(t, store)
		id := acs.NewID()
		task := acs.StartTask{ID: acs.NewID(), OwnerID: sb.OwnerID, Status: acs.TaskStartingConversation, ConversationID: id,
			CreatedAt: received, UpdatedAt: received}
		must(t, store.CreateStartTask(ctx, task))
		sb, err := store.UpdateSandbox(ctx, sb.ID, func(x *acs.Sandbox) error { return x.Reserve(id, 0) })
		must(t, err)
		err = s.ReportConversation(ctx, sb, conversations.Report{ID: id, ExecutionStatus: "idle"}, received)
		if !errors.Is(err, conversations.ErrStarting) || !errors.Is(err, acs.ErrConflict) {
			t.Fatalf("report while starting: %v, want ErrStarting (a conflict, so the sandbox retries)", err)
		}
		if _, err := store.GetConversation(ctx, id); !errors.Is(err, acs.ErrNotFound) {
			t.Fatalf("the report made a record while the start was creating it: %v", err)
		}
		// The start failed before storing its record (and kept the slot):
		// the conversation on the agent server is recorded from its report.
		_, err = store.UpdateStartTask(ctx, task.ID, func(tk *acs.StartTask) error { tk.Fail("boom", received); return nil })
		must(t, err)
		must(t, s.ReportConversation(ctx, sb, conversations.Report{ID: id, ExecutionStatus: "idle"}, received))
		if c, err := store.GetConversation(ctx, id); err != nil || c.SandboxID != sb.ID {
			t.Fatalf("after the start ended: %+v, %v", c, err)
		}
	})
}

func TestReportEventsVerifiesUserMessages(t *testing.T) {
	ctx := context.Background()
	s, store := newService(t)
	sb, parent, _, _ := seed(t, store)
	msg := func(id string) events.Event {
		ev, err := events.Decode([]byte(`{"kind":"MessageEvent","id":"` + id + `","timestamp":"2026-01-02T03:04:05","source":"user",` +
			`"llm_message":{"role":"user","content":[{"type":"text","text":"hello"}]}}`))
		must(t, err)
		return ev
	}
	must(t, s.ReportEvents(ctx, sb, parent.ID, []events.Event{msg("m1")}, time.Now().UTC()))
	got, err := store.GetEvents(ctx, parent.ID, []string{"m1"})
	must(t, err)
	if len(got) != 1 || got[0] == nil || !strings.Contains(string(got[0]), `"source":"environment"`) ||
		!strings.Contains(string(got[0]), conversations.UnverifiedSender) {
		t.Fatalf("an undelivered user message was stored as the user's: %s", got)
	}
}
