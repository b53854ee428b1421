package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/eventlog"
	"github.com/acs-project/acs/sandbox/llm"
)

// Interrupt cancels the run in progress, including an LLM call or tool in
// flight. Actions left without a result get an AgentErrorEvent, a PauseEvent
// records the interruption (the spec has no InterruptEvent), the status
// becomes paused and a full_state snapshot goes to subscribers. Without a run
// it pauses an idle conversation. The run records its interruption as it
// ends, so a run started after it is not touched.
func (c *Conversation) Interrupt(ctx context.Context) error {
	var (
		cancel context.CancelFunc
		done   chan struct{}
	)
	if err := call(c, func() error {
		if c.closed {
			return ErrClosed
		}
		// The interrupt wins over a message that asked to run before it.
		c.rerun = false
		cancel, done = c.cancelRun, c.runDone
		if cancel != nil {
			c.interrupted = done
		}
		return nil
	}); err != nil {
		return err
	}
	if cancel != nil {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			c.lg.Warn("interrupt: the run did not stop within 5s")
		}
	}
	recorded, err := call2(c, func() (bool, error) {
		if cancel != nil && c.interrupted != done {
			return false, nil // endRun recorded the interruption
		}
		c.interrupted = nil
		return true, c.recordInterrupt(ctx)
	})
	if recorded {
		c.broadcastFullState()
	}
	return err
}

// recordInterrupt records an interruption: an AgentErrorEvent for
// each action left without a result, a PauseEvent and status paused.
func (c *Conversation) recordInterrupt(ctx context.Context) error {
	var orphans []events.Event
	for _, a := range c.hist.Unanswered() {
		if c.st.ExecutionStatus == agentwire.StatusWaitingForConfirmation {
			break // waiting actions never started; they stay pending
		}
		orphans = append(orphans, &events.AgentErrorEvent{ToolName: a.ToolName, ToolCallID: a.ToolCallID,
			Error: "Tool call interrupted before completion: the user interrupted the agent."})
	}
	if err := c.emit(ctx, append(orphans, &events.PauseEvent{})...); err != nil {
		return err
	}
	return c.setStatus(ctx, agentwire.StatusPaused)
}

// Update changes the title and (replacing them all) the tags. Each change is
// persisted and emitted as a state update. A title holding a secret's value
// is a *TitleSecretError and changes nothing.
func (c *Conversation) Update(ctx context.Context, req agentwire.UpdateConversationRequest) error {
	return call(c, func() error {
		if c.closed {
			return ErrClosed
		}
		if req.Title != nil {
			if err := c.checkTitle(*req.Title); err != nil {
				return err
			}
			c.meta.Title = req.Title
		}
		if req.Tags != nil {
			c.meta.Tags = copyMap(req.Tags)
		}
		if err := c.writeMeta(); err != nil {
			return err
		}
		if req.Title != nil {
			if err := c.emitState(ctx, "title", *req.Title); err != nil {
				return err
			}
		}
		if req.Tags != nil {
			if err := c.emitState(ctx, "tags", c.meta.Tags); err != nil {
				return err
			}
		}
		c.markChanged()
		return nil
	})
}

// AskAgent answers a question about the conversation with the agent's LLM,
// without changing the conversation or writing events.
func (c *Conversation) AskAgent(ctx context.Context, question string) (string, error) {
	var (
		view []events.Message
		cfg  llm.Config
	)
	c.do(func() { view, cfg = c.view(), c.client.Config() })
	cfg.UsageID, cfg.Stream = "ask-agent-llm", false
	view = append(view, events.Message{Role: events.RoleUser, Content: []events.Content{events.TextItem(
		"Answer this question about the conversation so far, briefly and without using tools:\n" + question)}})
	sctx, span := c.llmSpan(ctx, cfg, "ask_agent")
	resp, err := llm.New(cfg).Complete(sctx, llm.Request{Messages: view}, nil)
	endLLMSpan(span, resp, err)
	if err != nil {
		return "", err
	}
	return resp.Content, nil
}

// FinalResponse is the message of the last finish action, else the text of
// the last agent message, else "".
func (c *Conversation) FinalResponse() string {
	return call(c, func() string { return c.hist.FinalResponse() })
}

// EventsUpTo returns the canonical JSON of the events up to and including
// the one with id (all events when id is ""). ErrNotFound for an unknown id.
func (c *Conversation) EventsUpTo(id string) ([][]byte, error) {
	n := c.log.Len()
	if id != "" {
		i, ok := c.log.Position(id)
		if !ok {
			return nil, fmt.Errorf("event %s: %w", id, eventlog.ErrNotFound)
		}
		n = i + 1
	}
	return c.log.ReadFrom(0, n)
}

// Import appends copied events (a fork's history) and derives the state they
// imply: whether the system prompt was sent, the last user message, and (with
// keepStats) the usage.
func (c *Conversation) Import(ctx context.Context, raw [][]byte, keepStats bool) error {
	return call(c, func() error {
		c.infoStale = true // the state changes before the events are stored
		evs := make([]events.Event, 0, len(raw))
		for _, b := range raw {
			ev, err := events.Decode(b)
			if err != nil {
				return fmt.Errorf("import event: %w", err)
			}
			switch e := ev.(type) {
			case *events.SystemPromptEvent:
				c.st.SystemPromptEmitted = true
				if e.DynamicContext != nil {
					c.st.DynamicContext = e.DynamicContext.Text
				}
			case *events.MessageEvent:
				if e.Source == events.SourceUser {
					id := e.ID
					c.st.LastUserMessageID = &id
				}
			case *events.ConversationStateUpdateEvent:
				if e.Key == "stats" && keepStats {
					var st agentwire.Stats
					if err := decodeJSON(e.Value, &st); err == nil && st.UsageToMetrics != nil {
						c.st.Stats = st
					}
				}
			}
			evs = append(evs, ev)
		}
		if err := c.emit(ctx, evs...); err != nil {
			return err
		}
		return c.saveState()
	})
}

// LLMRetryKey is the ConversationStateUpdateEvent key that announces each
// retry of an LLM call (value: LLMRetry) and, with a null value, that the
// call ended (succeeded or failed for good).
const LLMRetryKey = "llm_retry"

// LLMRetry is the value of an llm_retry state update: which retry this is,
// how long the agent waits before it, when it happens, and why (never the
// API key), so a client can show "retrying in 60 s".
type LLMRetry struct {
	Attempt     int     `json:"attempt"`
	MaxRetries  int     `json:"max_retries"`
	WaitSeconds float64 `json:"wait_seconds"`
	RetryAt     string  `json:"retry_at"`
	Code        string  `json:"code"`
	Reason      string  `json:"reason"`
}

// rateLimited announces an LLM retry as an llm_retry state update and, for
// a rate limit, records it in agent_state (the control plane shows the
// conversation PAUSED meanwhile, as the spec's transition table says).
func (c *Conversation) rateLimited(e llm.RetryEvent) {
	if e.Err == nil {
		return
	}
	at := time.Now().Add(e.Wait).UTC()
	c.do(func() {
		ctx := context.Background()
		c.llmRetrying = true
		c.logErr(c.emitState(ctx, LLMRetryKey, LLMRetry{Attempt: e.Attempt, MaxRetries: e.MaxRetries,
			WaitSeconds: e.Wait.Seconds(), RetryAt: at.Format(time.RFC3339), Code: e.Err.Code(), Reason: e.Err.Reason()}))
		if e.Err.Kind == llm.ErrRateLimit {
			c.st.AgentState["llm_rate_limited_until"] = at.Format(time.RFC3339)
			c.logErr(c.saveState())
			c.logErr(c.emitState(ctx, "agent_state", c.st.AgentState))
		}
		c.markChanged()
	})
}

// clearRateLimit ends a retry announcement (llm_retry null) and removes
// the rate-limit mark after an LLM call ends.
func (c *Conversation) clearRateLimit(ctx context.Context) {
	if c.llmRetrying {
		c.llmRetrying = false
		c.logErr(c.emitState(ctx, LLMRetryKey, nil))
	}
	if _, ok := c.st.AgentState["llm_rate_limited_until"]; !ok {
		return
	}
	delete(c.st.AgentState, "llm_rate_limited_until")
	c.logErr(c.saveState())
	c.logErr(c.emitState(ctx, "agent_state", c.st.AgentState))
	c.markChanged()
}
