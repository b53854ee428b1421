package agent

import (
	"context"
	"encoding/json"
	"maps"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/hooks"
)

// Hooks run at these points (reference semantics):
//   - user_prompt_submit before a user message is logged: a block keeps the
//     message from the LLM (it is logged and listed in blocked_messages, and
//     no run starts for it); additionalContext joins extended_content;
//   - pre_tool_use after the actions of a response are logged, before they
//     run or are confirmed: a block turns the action into a
//     UserRejectObservation with rejection_source "hook" (a blocked finish
//     does not finish);
//   - post_tool_use after the results are logged (observability only);
//   - stop when the agent is about to finish: a block sends the reason back
//     to the agent as a message and the run continues (at most
//     maxStopDenials times per run);
//   - session_start when the conversation is ready, session_end when it is
//     closed.
//
// Every run of hooks that executed something is logged as a
// ConversationStateUpdateEvent with key "hook_execution" (the spec has no
// hook event kind).

// maxStopDenials bounds how often stop hooks may keep a run going.
const maxStopDenials = 3

// sessionEndTimeout bounds session_end hooks when a conversation closes.
const sessionEndTimeout = 10 * time.Second

// hookRecord is the value of a hook_execution state update.
type hookRecord struct {
	EventType         string            `json:"event_type"`
	ToolName          string            `json:"tool_name,omitempty"`
	ActionID          string            `json:"action_id,omitempty"`
	Blocked           bool              `json:"blocked"`
	Reason            string            `json:"reason,omitempty"`
	AdditionalContext string            `json:"additional_context,omitempty"`
	Executions        []hooks.Execution `json:"executions"`
}

// runHooks runs the hooks of event and logs what ran. It does not run on
// the owner.
// It returns the zero Result when the conversation has no hooks.
func (c *Conversation) runHooks(ctx context.Context, event hooks.EventType, in hooks.Input) hooks.Result {
	return c.runHooksFor(ctx, event, in, "")
}

func (c *Conversation) runHooksFor(ctx context.Context, event hooks.EventType, in hooks.Input, actionID string) hooks.Result {
	r := c.kit.hooks
	if r == nil {
		return hooks.Result{}
	}
	c.hookWG.Add(1)
	defer c.hookWG.Done()
	ctx, stop := c.untilClosed(ctx)
	defer stop()
	res := r.Run(ctx, event, in)
	if len(res.Executions) == 0 {
		return res
	}
	rec := hookRecord{EventType: event.Name(), ToolName: in.ToolName, ActionID: actionID, Blocked: res.Blocked,
		Reason: res.Reason, AdditionalContext: res.AdditionalContext, Executions: res.Executions}
	return call(c, func() hooks.Result {
		if !c.logClosed {
			c.logErr(c.emitState(context.WithoutCancel(ctx), "hook_execution", rec))
		}
		return res
	})
}

// preToolHooks runs pre_tool_use hooks for actions and records the
// blocked ones. It runs in the run's goroutine.
func (c *Conversation) preToolHooks(ctx context.Context, actions []*events.ActionEvent) {
	blocked := map[string]string{}
	for _, ae := range actions {
		res := c.runHooksFor(ctx, hooks.PreToolUse, hooks.Input{ToolName: ae.ToolName, ToolInput: actionJSON(ae)}, ae.ID)
		if res.Blocked {
			blocked[ae.ID] = res.Reason
		}
	}
	if len(blocked) == 0 {
		return
	}
	c.do(func() {
		maps.Copy(c.st.BlockedActions, blocked)
		c.logErr(c.saveState())
		c.logErr(c.emitState(ctx, "blocked_actions", c.st.BlockedActions))
	})
}

// postToolHooks runs post_tool_use hooks for the results of actions. It
// does not run on the owner.
func (c *Conversation) postToolHooks(ctx context.Context, actions []*events.ActionEvent, results []events.Event) {
	for i, ae := range actions {
		resp, _ := events.Encode(results[i])
		c.runHooksFor(ctx, hooks.PostToolUse, hooks.Input{ToolName: ae.ToolName, ToolInput: actionJSON(ae),
			ToolResponse: c.masker.MaskBytes(resp)}, ae.ID)
	}
}

// actionJSON is the tool input given to hooks: the arguments of the call.
func actionJSON(ae *events.ActionEvent) json.RawMessage {
	return json.RawMessage(ae.ToolCall.Arguments)
}

// finish ends the run as finished unless a stop hook asks the agent to
// go on; it reports whether the run finished. It runs in the run's
// goroutine.
func (c *Conversation) finish(ctx context.Context) (bool, error) {
	r := call(c, func() reaction { return c.tryFinish(ctx) })
	if r.stopHook {
		return c.askStopHooks(ctx, r.final)
	}
	return r.finished, r.err
}

// tryFinish ends the run as finished, unless stop hooks are to be asked
// first: it then leaves that to the run's goroutine (stopHook).
func (c *Conversation) tryFinish(ctx context.Context) reaction {
	if c.kit.hooked(hooks.Stop) && c.stopDenials < maxStopDenials {
		return reaction{stopHook: true, final: c.hist.FinalResponse()}
	}
	return reaction{done: true, finished: true, err: c.setStatus(ctx, agentwire.StatusFinished)}
}

// askStopHooks runs the stop hooks on final, the agent's final response,
// then finishes the run unless one of them blocks: the agent is then told
// why and the run goes on. It reports whether the run finished. It runs
// in the run's goroutine.
func (c *Conversation) askStopHooks(ctx context.Context, final string) (bool, error) {
	res := c.runHooks(ctx, hooks.Stop, hooks.Input{Message: final})
	return call2(c, func() (bool, error) {
		if res.Blocked {
			c.stopDenials++
			return false, c.emit(ctx, &events.MessageEvent{Base: events.Base{Source: events.SourceEnvironment},
				LLMMessage: events.Message{Role: events.RoleUser, Content: []events.Content{events.TextItem(
					"A stop hook asked you to continue before finishing: " + res.Reason)}}})
		}
		return true, c.setStatus(ctx, agentwire.StatusFinished)
	})
}
