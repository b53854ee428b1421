package agent

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agentwire"
)

// ErrNotWaiting is returned when a confirmation answer arrives while nothing
// waits for one.
var ErrNotWaiting = errors.New("the conversation is not waiting for confirmation")

// analyzerKind returns the security analyzer's kind ("" when none).
func analyzerKind(raw json.RawMessage) string {
	var a struct {
		Kind string `json:"kind"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &a) != nil {
		return ""
	}
	return a.Kind
}

// risk is the risk recorded on an action: the LLM's own assessment when
// an LLMSecurityAnalyzer is configured, LOW for read-only tools (they change
// nothing), otherwise UNKNOWN.
func (c *Conversation) risk(tool string, predicted events.SecurityRisk) events.SecurityRisk {
	if t, ok := c.kit.tool(tool); ok && t.ReadOnly() {
		return events.RiskLow
	}
	if predicted != "" && analyzerKind(c.st.SecurityAnalyzer) == "LLMSecurityAnalyzer" {
		return predicted
	}
	return events.RiskUnknown
}

// needsConfirmation applies the confirmation policy to a batch of
// executable actions. A batch that is a single finish or think never waits;
// otherwise one action needing confirmation holds the whole batch.
func (c *Conversation) needsConfirmation(actions []*events.ActionEvent) bool {
	if len(actions) == 1 {
		switch actions[0].Action.(type) {
		case *events.FinishAction, *events.ThinkAction:
			return false
		}
	}
	p := c.st.ConfirmationPolicy
	switch p.Kind {
	case "AlwaysConfirm":
		return true
	case "ConfirmRisky":
		threshold := events.RiskHigh
		if p.Threshold != nil {
			threshold = *p.Threshold
		}
		confirmUnknown := p.ConfirmUnknown == nil || *p.ConfirmUnknown
		for _, a := range actions {
			if a.SecurityRisk == events.RiskUnknown {
				if confirmUnknown {
					return true
				}
				continue
			}
			if a.SecurityRisk.Level() >= threshold.Level() {
				return true
			}
		}
	}
	return false
}

// RespondToConfirmation answers a waiting conversation. Accepting runs the
// pending actions (and the agent after them); rejecting records one
// UserRejectObservation (rejection_source user) per pending action and makes
// the conversation idle. ErrNotWaiting when nothing waits.
func (c *Conversation) RespondToConfirmation(ctx context.Context, accept bool, reason string) error {
	return call(c, func() error {
		if c.closed {
			return ErrClosed
		}
		if c.st.ExecutionStatus != agentwire.StatusWaitingForConfirmation {
			if accept && c.running {
				return nil
			}
			return ErrNotWaiting
		}
		if accept {
			if c.running {
				// The run that waits is ending (see endRun): it starts the next.
				c.rerun = true
				return nil
			}
			return c.startRun(ctx)
		}
		var rejections []events.Event
		for _, a := range c.hist.Unanswered() {
			rejections = append(rejections, &events.UserRejectObservation{ToolName: a.ToolName, ToolCallID: a.ToolCallID,
				ActionID: a.ID, RejectionReason: reason, RejectionSource: events.RejectedByUser})
		}
		if err := c.emit(ctx, rejections...); err != nil {
			return err
		}
		return c.setStatus(ctx, agentwire.StatusIdle)
	})
}

// SetConfirmationPolicy changes the policy at once; the change is persisted
// and emitted as a confirmation_policy state update.
func (c *Conversation) SetConfirmationPolicy(ctx context.Context, p agentwire.ConfirmationPolicy) error {
	return call(c, func() error {
		if c.closed {
			return ErrClosed
		}
		c.st.ConfirmationPolicy = p
		if err := c.saveState(); err != nil {
			return err
		}
		c.markChanged()
		return c.emitState(ctx, "confirmation_policy", p)
	})
}

// SetSecurityAnalyzer sets (or, with nil, removes) the security analyzer.
func (c *Conversation) SetSecurityAnalyzer(ctx context.Context, raw json.RawMessage) error {
	return call(c, func() error {
		if c.closed {
			return ErrClosed
		}
		c.st.SecurityAnalyzer = raw
		if err := c.saveState(); err != nil {
			return err
		}
		if raw == nil {
			raw = json.RawMessage("null")
		}
		return c.emitState(ctx, "security_analyzer", raw)
	})
}
