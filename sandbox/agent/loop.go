package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agent/history"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/hooks"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/skills"
	"github.com/acs-project/acs/sandbox/tools"
)

// SendMessage appends a user message. A finished or stuck conversation
// becomes idle. With run=true a run starts, or, when one is in progress, the
// running loop picks the message up (it is never lost).
//
// A goal loop in progress is stopped first: the user's message supersedes
// it (it can be resumed).
func (c *Conversation) SendMessage(ctx context.Context, req agentwire.SendMessageRequest) (*events.MessageEvent, error) {
	if err := c.StopGoal(ctx); err != nil {
		return nil, err
	}
	return c.sendMessage(ctx, req)
}

// sendMessage is SendMessage without stopping the goal loop (the loop's own
// messages).
func (c *Conversation) sendMessage(ctx context.Context, req agentwire.SendMessageRequest) (*events.MessageEvent, error) {
	if err := c.awaitSetup(ctx); err != nil {
		return nil, err
	}
	msg := &events.MessageEvent{Base: events.Base{Source: events.SourceUser},
		LLMMessage: events.Message{Role: events.RoleUser, Content: req.Content}}
	msg.ID = events.NewID()
	text := msg.LLMMessage.Text()
	prompt := c.runHooksFor(ctx, hooks.UserPromptSubmit, hooks.Input{Message: text}, msg.ID)
	return call2(c, func() (*events.MessageEvent, error) {
		if c.closed {
			return nil, ErrClosed
		}
		if err := c.ensureSystemPrompt(ctx); err != nil {
			return nil, err
		}
		if s := c.meta.Request.Agent.AgentContext; s != nil && s.UserMessageSuffix != nil && *s.UserMessageSuffix != "" {
			msg.ExtendedContent = append(msg.ExtendedContent, events.Text(*s.UserMessageSuffix))
		}
		if prompt.AdditionalContext != "" {
			msg.ExtendedContent = append(msg.ExtendedContent, events.Text(prompt.AdditionalContext))
		}
		var activated []string
		if !prompt.Blocked {
			fired := map[string]bool{}
			for _, n := range c.st.ActivatedKnowledgeSkills {
				fired[n] = true
			}
			if acts := skills.Match(c.kit.skills, text, fired); len(acts) > 0 {
				msg.ExtendedContent = append(msg.ExtendedContent, events.Text(skills.ExtraInfo(acts)))
				for _, a := range acts {
					activated = append(activated, a.Skill.Name)
				}
				msg.ActivatedSkills = activated
			}
			if len(c.st.UnannouncedSecrets) > 0 {
				msg.ExtendedContent = append(msg.ExtendedContent, events.Text(secretsReminder(c.st.UnannouncedSecrets)))
			}
		}
		if err := c.emit(ctx, msg); err != nil {
			return nil, err
		}
		if !prompt.Blocked {
			c.st.UnannouncedSecrets = nil // saved with last_user_message_id below
		}
		id := msg.ID
		c.st.LastUserMessageID = &id
		if err := c.saveState(); err != nil {
			return nil, err
		}
		if err := c.emitState(ctx, "last_user_message_id", id); err != nil {
			return nil, err
		}
		if len(activated) > 0 {
			c.st.ActivatedKnowledgeSkills = append(c.st.ActivatedKnowledgeSkills, activated...)
			if err := c.emitState(ctx, "activated_knowledge_skills", c.st.ActivatedKnowledgeSkills); err != nil {
				return nil, err
			}
		}
		if prompt.Blocked {
			// The message stays in the log for the user but never reaches the
			// LLM, and starts no run.
			c.st.BlockedMessages[id] = prompt.Reason
			if err := c.emitState(ctx, "blocked_messages", c.st.BlockedMessages); err != nil {
				return nil, err
			}
			c.markChanged()
			return msg, nil
		}
		if s := c.st.ExecutionStatus; s == agentwire.StatusFinished || s == agentwire.StatusStuck {
			if err := c.setStatus(ctx, agentwire.StatusIdle); err != nil {
				return nil, err
			}
		}
		if req.Run {
			if c.running {
				c.rerun = true
			} else if err := c.startRun(ctx); err != nil {
				return nil, err
			}
		}
		c.markChanged()
		return msg, nil
	})
}

// Run starts the agent loop in the background. It returns ErrAlreadyRunning
// when a run is in progress. A finished conversation stays finished until a
// new message arrives.
func (c *Conversation) Run(ctx context.Context) error {
	if err := c.awaitSetup(ctx); err != nil {
		return err
	}
	return call(c, func() error {
		if c.closed {
			return ErrClosed
		}
		if c.running {
			return ErrAlreadyRunning
		}
		if c.st.ExecutionStatus == agentwire.StatusFinished {
			return nil
		}
		if err := c.ensureSystemPrompt(ctx); err != nil {
			return err
		}
		return c.startRun(ctx)
	})
}

// Pause stops the agent at the next step boundary (an LLM call in flight
// completes first). It emits a PauseEvent and sets the status paused; it is a
// no-op unless the conversation is idle or running.
func (c *Conversation) Pause(ctx context.Context) error {
	paused, err := call2(c, func() (bool, error) { return c.pause(ctx) })
	if paused {
		c.broadcastFullState()
	}
	return err
}

// pause is Pause on the owner. It reports whether it got as far as
// setting the status.
func (c *Conversation) pause(ctx context.Context) (bool, error) {
	if c.closed {
		return false, ErrClosed
	}
	s := c.st.ExecutionStatus
	if s != agentwire.StatusIdle && s != agentwire.StatusRunning {
		return false, nil
	}
	if err := c.emit(ctx, &events.PauseEvent{}); err != nil {
		return false, err
	}
	if c.running {
		// The pause wins over a message that asked to run before it.
		c.pauseAsked, c.rerun = true, false
	}
	return true, c.setStatus(ctx, agentwire.StatusPaused)
}

// WaitIdle blocks until no run is in progress or ctx ends.
func (c *Conversation) WaitIdle(ctx context.Context) error {
	for {
		var (
			running bool
			done    chan struct{}
		)
		c.do(func() { running, done = c.running, c.runDone })
		if !running {
			return nil
		}
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ensureSystemPrompt emits the SystemPromptEvent once, before the first
// message or run.
func (c *Conversation) ensureSystemPrompt(ctx context.Context) error {
	if c.st.SystemPromptEmitted {
		return nil
	}
	ev := &events.SystemPromptEvent{SystemPrompt: events.Text(c.systemPromptText()),
		Tools: make([]events.ToolDefinition, 0, len(c.kit.tools))}
	for _, t := range c.kit.tools {
		ev.Tools = append(ev.Tools, t.Definition())
	}
	dc := events.Text(dynamicContext(c.meta.Request.Workspace.WorkingDir, c.secretNames(), time.Now()))
	ev.DynamicContext = &dc
	if err := c.emit(ctx, ev); err != nil {
		return err
	}
	c.st.SystemPromptEmitted, c.st.DynamicContext = true, dc.Text
	return c.saveState()
}

func (c *Conversation) systemPromptText() string {
	p := systemPrompt
	if sk := skills.SystemPrompt(c.kit.skills); sk != "" {
		p += "\n\n" + sk
	}
	if s := c.meta.Request.Agent.AgentContext; s != nil && s.SystemMessageSuffix != nil && *s.SystemMessageSuffix != "" {
		p += "\n\n" + *s.SystemMessageSuffix
	}
	return p
}

func (c *Conversation) secretNames() []string {
	var names []string
	for n := range c.meta.Request.Secrets {
		names = append(names, n)
	}
	if ac := c.meta.Request.Agent.AgentContext; ac != nil {
		for n := range ac.Secrets {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

func (c *Conversation) startRun(ctx context.Context) error {
	if err := c.setStatus(ctx, agentwire.StatusRunning); err != nil {
		return err
	}
	c.stopDenials = 0
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.running, c.rerun, c.pauseAsked = true, false, false
	c.cancelRun, c.runDone = cancel, make(chan struct{})
	done := c.runDone
	c.goAsync(func() { c.loop(runCtx, done) }) // c.closed is false on the owner: never refused
	return nil
}

// loop runs steps until the agent finishes, waits, pauses, fails or hits a
// limit. max_iterations counts steps per run. It is the run's goroutine,
// not the owner: each step hands the owner what it produced.
func (c *Conversation) loop(ctx context.Context, done chan struct{}) {
	defer c.endRun(ctx, done)
	var (
		run      runState
		finished bool
	)
	for after := false; ; after = true {
		next := run.next
		if run.next = nil; next == nil {
			p := call(c, func() stepPlan { return c.nextStep(ctx, after, finished, &run.iteration) })
			next = &p
		}
		if next.stop {
			return
		}
		var err error
		if finished, err = c.step(ctx, &run, *next); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.do(func() { c.logErr(c.fail(ctx, errorCode(err), errorDetail(err))) })
			return
		}
	}
}

// runState is what a run carries from step to step.
type runState struct {
	iteration int // steps taken since the run began or a message continued it
	// next is the next step's plan when the owner made it with the last
	// step's results, nil when it is still to make.
	next *stepPlan
}

// stepPlan is what a step starts from: actions left pending, else a
// condensation to do, else the LLM call's input. stop ends the run
// instead.
type stepPlan struct {
	stop    bool
	pending []*events.ActionEvent
	plan    *history.Plan
	view    [][]events.Message // in segments, see history.ViewSegments
	specs   []llm.Tool
	// client is the LLM client as the step begins: SwitchLLM may replace
	// it during the call.
	client *llm.Client
}

// nextStep decides whether the run takes another step, after iteration
// steps, and plans it. after says a step was just taken, and finished
// whether it finished the agent.
func (c *Conversation) nextStep(ctx context.Context, after, finished bool, iteration *int) stepPlan {
	if after {
		if c.rerun {
			// A message arrived during the step: keep going. It came
			// after any pause asked for (a pause clears rerun), so it
			// un-pauses, as it starts a run on a paused conversation.
			c.rerun, c.pauseAsked = false, false
			*iteration = 0
			c.logErr(c.setStatus(ctx, agentwire.StatusRunning))
		} else if finished || c.st.ExecutionStatus != agentwire.StatusRunning {
			return stepPlan{stop: true}
		}
	}
	if !c.beforeStep(ctx, *iteration) {
		return stepPlan{stop: true}
	}
	*iteration++
	if pending := c.hist.Unanswered(); len(pending) > 0 {
		return stepPlan{pending: pending}
	}
	if plan := c.condensationNeeded(); plan != nil {
		return stepPlan{plan: plan}
	}
	return stepPlan{view: c.hist.ViewSegments(c.systemMessage(), c.st.BlockedMessages), specs: c.kit.specs, client: c.client}
}

// beforeStep reports whether the run takes another step, after iteration
// steps: not when a pause was asked for, the run was canceled, the
// conversation closed, the agent is stuck or the run reached
// max_iterations. It nudges an agent that is about to be stuck.
func (c *Conversation) beforeStep(ctx context.Context, iteration int) bool {
	if c.pauseAsked || ctx.Err() != nil || c.closed {
		return false
	}
	if c.meta.Request.StuckDetection {
		s := c.hist.Stuck()
		if s.Stuck {
			c.lg.Info("agent is stuck", "reason", s.Reason)
			c.logErr(c.setStatus(ctx, agentwire.StatusStuck))
			return false
		}
		if s.Nudge != "" && s.NudgeKey != c.st.NudgedFor {
			c.st.NudgedFor = s.NudgeKey
			c.logErr(c.emit(ctx, &events.MessageEvent{Base: events.Base{Source: events.SourceEnvironment},
				LLMMessage: events.Message{Role: events.RoleUser, Content: []events.Content{events.TextItem(s.Nudge)}}}))
			c.logErr(c.saveState())
		}
	}
	if iteration >= c.meta.Request.MaxIterations {
		err := c.fail(ctx, "MaxIterationsReached",
			fmt.Sprintf("Agent reached the maximum of %d iterations without finishing. Send a message to continue.", c.meta.Request.MaxIterations))
		c.logErr(err)
		return false
	}
	return true
}

// endRun ends the run loop's run: it waits for the last step's events to
// be stored (a failed sync ends the run in error), marks the conversation
// not running and closes done. What a message or a condensation request
// asked of the run while it was on its way out (past the loop's last look
// at them, before it is marked not running) is then done as if asked of
// an idle conversation: a message that asked to run starts a new run
// (unless the run was interrupted or the conversation closed), and
// otherwise a CondensationRequest left unhandled condenses the history at
// once. Anything asked later finds the conversation not running and does
// it by itself, so nothing asked is left undone.
func (c *Conversation) endRun(ctx context.Context, done chan struct{}) {
	plan := call(c, func() *history.Plan { return c.markRunEnded(ctx, done) })
	close(done)
	c.broadcastFullState()
	c.changed()
	if plan != nil {
		// The user asked for it: a pause, which cancels the run's
		// context, does not cancel it. Closing the conversation does.
		cctx, stop := c.untilClosed(context.WithoutCancel(ctx))
		if err := c.condense(cctx, plan); cctx.Err() == nil {
			c.logErr(err)
		}
		stop()
	}
}

// markRunEnded is endRun's part on the owner. It returns the plan of a
// condensation left to do, or nil.
func (c *Conversation) markRunEnded(ctx context.Context, done chan struct{}) *history.Plan {
	if err := c.awaitSync(); err != nil && c.st.ExecutionStatus != agentwire.StatusError {
		// The last step's events were never stored: the run ends in
		// error, as a failed emit ends it.
		c.logErr(c.fail(context.WithoutCancel(ctx), errorCode(err), errorDetail(err)))
	}
	if c.interrupted == done {
		// Recorded before the run is marked over, so nothing started
		// after the interrupt is mistaken for the interrupted run.
		c.interrupted = nil
		c.logErr(c.recordInterrupt(context.WithoutCancel(ctx)))
	}
	c.running = false
	c.cancelRun = nil
	var plan *history.Plan
	switch {
	case c.closed:
	case c.rerun && ctx.Err() == nil:
		// The new run's first step handles a condensation request too.
		c.logErr(c.startRun(context.WithoutCancel(ctx)))
	case c.hist.CondensationRequested():
		plan = c.condensationNeeded()
	}
	return plan
}

func (c *Conversation) logErr(err error) {
	if err != nil {
		c.lg.Error("conversation state update failed", "error", err)
	}
}

// fail records a run-loop failure: ConversationErrorEvent, then status
// error. The status changes even when the event cannot be stored (the
// disk is full): the run is over and must not read running.
func (c *Conversation) fail(ctx context.Context, code, detail string) error {
	ev := &events.ConversationErrorEvent{Base: events.Base{Source: events.SourceEnvironment}, Code: code, Detail: detail}
	return errors.Join(c.emit(ctx, ev), c.setStatus(ctx, agentwire.StatusError))
}

// errorDetail is the ConversationErrorEvent detail of a run-loop failure:
// for an LLM failure, what failed and what to change (llm.Error.Detail).
func errorDetail(err error) string {
	var le *llm.Error
	if errors.As(err, &le) {
		return le.Detail()
	}
	return err.Error()
}

func errorCode(err error) string {
	var le *llm.Error
	if errors.As(err, &le) {
		return le.Code()
	}
	var be *budgetError
	if errors.As(err, &be) {
		return "MaxBudgetReached"
	}
	return "AgentRuntimeError"
}

type budgetError struct{ spent, budget float64 }

func (e *budgetError) Error() string {
	return fmt.Sprintf("Agent reached the cost budget: spent $%.4f of $%.4f.", e.spent, e.budget)
}

// step runs one unit of agent work, as planned by nextStep, and reports
// whether the agent finished: it executes actions left pending (after a
// confirmation was accepted), condenses the history when needed, or makes
// one LLM call and acts on its answer. Errors are run-loop failures. It
// runs in the run's goroutine.
func (c *Conversation) step(ctx context.Context, run *runState, p stepPlan) (bool, error) {
	if len(p.pending) > 0 {
		return c.execute(ctx, p.pending)
	}
	if p.plan != nil {
		return false, c.condense(ctx, p.plan)
	}
	cfg := p.client.Config()
	var onDelta func(llm.Delta)
	if cfg.Stream {
		onDelta = func(d llm.Delta) { c.broadcast(streamingDelta(d)) }
	}
	llmStart := time.Now()
	sctx, span := c.llmSpan(ctx, cfg, "agent")
	resp, err := p.client.Complete(sctx, llm.Request{Segments: p.view, Tools: p.specs}, onDelta)
	endLLMSpan(span, resp, err)
	c.llmNanos.Add(int64(time.Since(llmStart)))
	if err != nil {
		return false, call(c, func() error {
			c.clearRateLimit(ctx)
			if errors.Is(err, llm.ErrContextWindow) && c.condenser() != nil {
				// Too much history: ask for a condensation; the next
				// step does it.
				return c.emit(ctx, &events.CondensationRequest{})
			}
			return err
		})
	}

	r := call(c, func() reaction {
		c.clearRateLimit(ctx)
		r := c.react(ctx, cfg, resp)
		if r.instant && !r.postHooks && !r.finished {
			// Nothing of this step is left to do off the owner: the
			// next step is planned in the same op.
			next := c.nextStep(ctx, true, false, &run.iteration)
			run.next = &next
		}
		return r
	})
	switch {
	case r.err != nil || r.done:
		return r.finished, r.err
	case r.stopHook:
		return c.askStopHooks(ctx, r.final)
	case r.instant:
		if r.postHooks {
			c.postToolHooks(ctx, r.actions, r.results)
		}
		if r.finished {
			return c.finish(ctx)
		}
		return false, nil
	}
	if r.preHooks {
		c.preToolHooks(ctx, r.actions)
	}
	wait, err := call2(c, func() (bool, error) { return c.confirmFirst(ctx, r.actions) })
	if wait || err != nil {
		return false, err
	}
	return c.execute(ctx, r.actions)
}

// reaction is what the owner made of an LLM response (react), for the
// run's goroutine to carry on with.
type reaction struct {
	// done says the step is over: it ended with finished and err.
	done     bool
	finished bool
	err      error
	// stopHook asks for the stop hooks before the run finishes, with the
	// agent's final response.
	stopHook bool
	final    string
	// instant says actions ran on the owner and were logged with their
	// results (runInstant); the post_tool_use hooks are left when
	// postHooks, then a finish when finished.
	instant   bool
	results   []events.Event
	postHooks bool
	// actions are the executable actions of the response, logged. Unless
	// instant, they are left to run: after the pre_tool_use hooks when
	// preHooks, and once confirmed.
	actions  []*events.ActionEvent
	preHooks bool
}

// react logs the LLM response resp, made with cfg, and decides what the
// step does next.
func (c *Conversation) react(ctx context.Context, cfg llm.Config, resp *llm.Response) reaction {
	usage, err := c.usageEvents(cfg, resp)
	if err != nil {
		if emitErr := c.emit(ctx, usage...); emitErr != nil {
			return reaction{done: true, err: emitErr}
		}
		return reaction{done: true, err: err}
	}
	if len(resp.ToolCalls) == 0 {
		msg := &events.MessageEvent{Base: events.Base{Source: events.SourceAgent},
			LLMMessage:    events.Message{Role: events.RoleAssistant, Content: []events.Content{events.TextItem(resp.Content)}},
			LLMResponseID: &resp.ID}
		if resp.ReasoningContent != "" {
			msg.LLMMessage.ReasoningContent = &resp.ReasoningContent
		}
		if len(resp.ThinkingBlocks) > 0 {
			msg.LLMMessage.ThinkingBlocks = resp.ThinkingBlocks
		}
		if err := c.emit(ctx, append(usage, msg)...); err != nil {
			return reaction{done: true, err: err}
		}
		if strings.TrimSpace(resp.Content) == "" {
			// Reasoning only, or nothing: nudge the model instead of finishing.
			return reaction{done: true, err: c.emit(ctx, &events.MessageEvent{Base: events.Base{Source: events.SourceEnvironment},
				LLMMessage: events.Message{Role: events.RoleUser, Content: []events.Content{events.TextItem(
					"Your last response did not include a function call or a message. Please use a tool to proceed with the task, or reply with a message when you are done.")}}})}
		}
		return c.tryFinish(ctx)
	}

	actions := make([]*events.ActionEvent, len(resp.ToolCalls))
	var invalid []events.Event
	batch := make([]events.Event, len(resp.ToolCalls))
	for i, tc := range resp.ToolCalls {
		ae := &events.ActionEvent{ToolName: tc.Name, ToolCallID: tc.ID, ToolCall: tc, LLMResponseID: resp.ID,
			SecurityRisk: events.RiskUnknown}
		if i == 0 {
			if resp.Content != "" {
				ae.Thought = []events.TextContent{events.Text(resp.Content)}
			}
			if resp.ReasoningContent != "" {
				ae.ReasoningContent = &resp.ReasoningContent
			}
			if len(resp.ThinkingBlocks) > 0 {
				ae.ThinkingBlocks = resp.ThinkingBlocks
			}
		}
		action, risk, summary, errText := c.parseCall(tc)
		ae.Action, ae.Summary = action, summary
		ae.SecurityRisk = c.risk(tc.Name, risk)
		if errText != "" {
			invalid = append(invalid, &events.AgentErrorEvent{ToolName: tc.Name, ToolCallID: tc.ID, Error: errText})
		}
		actions[i], batch[i] = ae, ae
	}
	var executable []*events.ActionEvent
	for _, ae := range actions {
		if ae.Action != nil {
			executable = append(executable, ae)
		}
	}
	if c.instant(executable) {
		return c.runInstant(ctx, append(append(usage, batch...), invalid...), executable)
	}
	// The usage, all actions of the response, then the errors of the invalid
	// ones: one durable write.
	if err := c.emit(ctx, append(append(usage, batch...), invalid...)...); err != nil {
		return reaction{done: true, err: err}
	}
	if len(executable) == 0 {
		return reaction{done: true}
	}
	return reaction{actions: executable, preHooks: c.kit.hooked(hooks.PreToolUse)}
}

// confirmFirst reports whether actions, those a pre_tool_use hook did not
// block, wait for the user's confirmation; it then sets the status
// waiting_for_confirmation.
func (c *Conversation) confirmFirst(ctx context.Context, actions []*events.ActionEvent) (bool, error) {
	var unblocked []*events.ActionEvent
	for _, ae := range actions {
		if _, blocked := c.st.BlockedActions[ae.ID]; !blocked {
			unblocked = append(unblocked, ae)
		}
	}
	if len(unblocked) > 0 && c.needsConfirmation(unblocked) {
		return true, c.setStatus(ctx, agentwire.StatusWaitingForConfirmation)
	}
	return false, nil
}

// instant reports whether a response's executable actions may be
// logged together with their results, in one durable write: each runs a
// tool that changes nothing and returns at once (tools.Instant), so there
// is no effect to log ahead of, no PreToolUse hook is to see them first and
// the confirmation policy lets them run.
func (c *Conversation) instant(actions []*events.ActionEvent) bool {
	if len(actions) == 0 {
		return false
	}
	for _, ae := range actions {
		t, ok := c.kit.byName[ae.ToolName].(tools.Instant)
		if !ok || !t.Instant() {
			return false
		}
	}
	if c.kit.hooked(hooks.PreToolUse) {
		return false
	}
	return !c.needsConfirmation(actions)
}

// runInstant runs instant actions (see instant) and appends logged (the
// response's events, the actions among them) and the actions' results in
// one durable write, so a step of instant tools costs one fsync. Until
// that write nothing of the step is visible; a crash before it leaves the
// log as if the LLM call had not returned.
func (c *Conversation) runInstant(ctx context.Context, logged []events.Event, actions []*events.ActionEvent) reaction {
	for _, ae := range actions {
		events.Stamp(ae) // the results name their action's id
	}
	results, finished, err := c.runActions(ctx, c.kit, actions, nil)
	if err != nil {
		return reaction{done: true, err: errors.Join(err, c.emit(ctx, logged...))}
	}
	emit := c.emit
	if !finished && !c.kit.hooked(hooks.PostToolUse) {
		// The next step's LLM call runs while the fsync does: it only
		// reads, nothing of this step is visible before the fsync, and
		// the next emit (or the end of the run) waits for it.
		emit = c.emitNoWait
	}
	if err := emit(ctx, append(logged, results...)...); err != nil {
		return reaction{done: true, err: err}
	}
	return reaction{instant: true, actions: actions, results: results, finished: finished,
		postHooks: c.kit.hooked(hooks.PostToolUse)}
}

// execute runs actions in order (none after a finish) and emits their
// results in the same order once all have run. It reports whether finish
// ran. It runs in the run's goroutine.
func (c *Conversation) execute(ctx context.Context, actions []*events.ActionEvent) (bool, error) {
	var (
		blocked   = map[string]string{}
		k         *kit
		postHooks bool
	)
	c.do(func() {
		for _, ae := range actions {
			if reason, ok := c.st.BlockedActions[ae.ID]; ok {
				blocked[ae.ID] = reason
			}
		}
		k, postHooks = c.kit, c.kit.hooked(hooks.PostToolUse)
	})
	results, finished, err := c.runActions(ctx, k, actions, blocked)
	if err != nil {
		return false, err
	}
	if err := call(c, func() error { return c.emit(ctx, results...) }); err != nil {
		return false, err
	}
	if postHooks {
		c.postToolHooks(ctx, actions, results)
	}
	if finished {
		return c.finish(ctx)
	}
	return false, nil
}

// runActions runs actions in order (none after a finish; a blocked one is
// rejected) with the tools of k, and returns their results in the same
// order, and whether finish ran. Its error is the run's cancellation. It
// reads nothing the owner owns, so it runs on the owner or off it.
func (c *Conversation) runActions(ctx context.Context, k *kit, actions []*events.ActionEvent, blocked map[string]string) ([]events.Event, bool, error) {
	results := make([]events.Event, len(actions))
	finished := false
	for i, ae := range actions {
		if finished {
			results[i] = &events.AgentErrorEvent{ToolName: ae.ToolName, ToolCallID: ae.ToolCallID,
				Error: "Not executed: the finish tool was called earlier in the same response."}
			continue
		}
		if reason, ok := blocked[ae.ID]; ok {
			if reason == "" {
				reason = "Blocked by hook"
			}
			results[i] = &events.UserRejectObservation{ToolName: ae.ToolName, ToolCallID: ae.ToolCallID, ActionID: ae.ID,
				RejectionReason: reason, RejectionSource: events.RejectedByHook}
			continue
		}
		sctx, span := c.toolSpan(ctx, ae)
		obs, err := k.byName[ae.ToolName].Execute(sctx, ae.Action)
		endToolSpan(span, obs, err)
		if err != nil {
			if ctx.Err() != nil {
				return nil, false, ctx.Err()
			}
			results[i] = &events.AgentErrorEvent{ToolName: ae.ToolName, ToolCallID: ae.ToolCallID,
				Error: fmt.Sprintf("The %s tool failed: %v", ae.ToolName, err)}
			continue
		}
		results[i] = &events.ObservationEvent{ToolName: ae.ToolName, ToolCallID: ae.ToolCallID, ActionID: ae.ID, Observation: obs}
		if _, ok := ae.Action.(*events.FinishAction); ok {
			finished = true
		}
	}
	return results, finished, nil
}

// systemMessage is the system message of the LLM view: the system
// prompt and the runtime context.
func (c *Conversation) systemMessage() events.Message {
	text := c.systemPromptText()
	if c.st.DynamicContext != "" {
		text += "\n\n" + c.st.DynamicContext
	}
	return events.Message{Role: events.RoleSystem, Content: []events.Content{events.TextItem(text)}}
}

// parseCall turns a tool call into an action. It strips and returns the
// security_risk and summary arguments every tool accepts. errText, when not
// empty, explains why the call is not executable.
func (c *Conversation) parseCall(tc events.MessageToolCall) (events.Action, events.SecurityRisk, *string, string) {
	tool, ok := c.kit.tool(tc.Name)
	if !ok {
		names := make([]string, 0, len(c.kit.tools))
		for _, t := range c.kit.tools {
			names = append(names, t.Name())
		}
		return nil, "", nil, fmt.Sprintf("Tool '%s' not found. Available tools: %s", tc.Name, strings.Join(names, ", "))
	}
	v, err := strictjson.Parse([]byte(tc.Arguments))
	if err != nil || v.Kind != strictjson.Object {
		return nil, "", nil, fmt.Sprintf("Error parsing the arguments of %s: they must be a JSON object (%v)", tc.Name, errOr(err, "not an object"))
	}
	var risk events.SecurityRisk
	var summary *string
	kept := strictjson.Value{Kind: strictjson.Object, Members: []strictjson.Member{}}
	for _, m := range v.Members {
		switch m.Key {
		case "security_risk":
			if m.Value.Kind != strictjson.String || !validRisk(m.Value.Str) {
				return nil, "", nil, fmt.Sprintf("Error validating the arguments of %s: security_risk: %s", tc.Name,
					strictjson.EnumMessage(events.SecurityRisk("").EnumValues()))
			}
			risk = events.SecurityRisk(m.Value.Str)
		case "summary":
			if m.Value.Kind == strictjson.String {
				s := m.Value.Str
				summary = &s
			}
		default:
			kept.Members = append(kept.Members, m)
		}
	}
	if p, ok := tool.(tools.ActionParser); ok {
		action, err := p.ParseAction(rawObject(kept))
		if err != nil {
			return nil, risk, summary, fmt.Sprintf("Error validating the arguments of %s: %v", tc.Name, err)
		}
		return action, risk, summary, ""
	}
	action, ok := events.NewAction(tool.ActionKind())
	if !ok {
		return nil, "", nil, fmt.Sprintf("Tool %s has no action kind", tc.Name)
	}
	if err := strictjson.DecodeValue(kept, action); err != nil {
		return nil, risk, summary, fmt.Sprintf("Error validating the arguments of %s: %v", tc.Name, err)
	}
	return action, risk, summary, ""
}

// rawObject re-assembles an object value from its members' raw bytes.
func rawObject(v strictjson.Value) json.RawMessage {
	b := []byte{'{'}
	for i, m := range v.Members {
		if i > 0 {
			b = append(b, ',')
		}
		b = strictjson.AppendString(b, m.Key)
		b = append(b, ':')
		b = append(b, m.Value.Raw...)
	}
	return append(b, '}')
}

func validRisk(s string) bool {
	for _, v := range events.SecurityRisk("").EnumValues() {
		if v == s {
			return true
		}
	}
	return false
}

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// usageEvents adds a completion's usage to the stats and returns the
// events that report it (the stats update, token ids and the completion log
// when available), for the caller to append with the step's own events in
// one durable write. It returns a budget error when the cost budget is
// spent.
func (c *Conversation) usageEvents(cfg llm.Config, resp *llm.Response) ([]events.Event, error) {
	m := c.st.Stats.UsageToMetrics[cfg.UsageID]
	if m == nil {
		m = &agentwire.Metrics{ModelName: cfg.Model, MaxBudgetPerTask: cfg.MaxBudgetPerTask}
		c.st.Stats.UsageToMetrics[cfg.UsageID] = m
	}
	m.AccumulatedCost += resp.Cost
	if cfg.UsageID == c.client.Config().UsageID {
		c.st.LastPromptTokens = resp.Usage.PromptTokens
	}
	t := &m.AccumulatedTokenUsage
	t.Model = cfg.Model
	t.PromptTokens += resp.Usage.PromptTokens
	t.CompletionTokens += resp.Usage.CompletionTokens
	t.CacheReadTokens += resp.Usage.CacheReadTokens
	t.CacheWriteTokens += resp.Usage.CacheWriteTokens
	t.ReasoningTokens += resp.Usage.ReasoningTokens
	t.PerTurnToken = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	t.ResponseID = resp.ID
	if cfg.MaxInputTokens != nil {
		t.ContextWindow = int64(*cfg.MaxInputTokens)
	}
	c.saveState()
	raw, err := strictjson.Marshal(c.st.Stats)
	if err != nil {
		return nil, fmt.Errorf("encode stats: %w", err)
	}
	out := []events.Event{&events.ConversationStateUpdateEvent{Key: "stats", Value: raw}}
	if resp.PromptTokenIDs != nil || resp.ResponseTokenIDs != nil {
		out = append(out, &events.TokenEvent{Base: events.Base{Source: events.SourceAgent},
			PromptTokenIDs: orEmpty(resp.PromptTokenIDs), ResponseTokenIDs: orEmpty(resp.ResponseTokenIDs)})
	}
	if cfg.LogCompletions {
		logData, _ := json.Marshal(map[string]any{
			"messages": json.RawMessage(orRaw(resp.RawRequest)), "response": json.RawMessage(orRaw(resp.RawResponse)),
			"cost": resp.Cost, "latency_sec": resp.Latency.Seconds(), "timestamp": time.Now().Unix(),
		})
		out = append(out, &events.LLMCompletionLogEvent{
			Filename: fmt.Sprintf("%s-%d.json", strings.ReplaceAll(cfg.Model, "/", "__"), time.Now().UnixNano()),
			LogData:  string(logData), ModelName: cfg.Model, UsageID: cfg.UsageID,
		})
	}
	c.markChanged()
	if cfg.MaxBudgetPerTask != nil && m.AccumulatedCost >= *cfg.MaxBudgetPerTask {
		return out, &budgetError{spent: m.AccumulatedCost, budget: *cfg.MaxBudgetPerTask}
	}
	return out, nil
}

func orEmpty(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

func orRaw(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// streamingDelta is the transient StreamingDeltaEvent frame (WebSocket only).
func streamingDelta(d llm.Delta) []byte {
	type frame struct {
		Kind             string      `json:"kind"`
		ID               string      `json:"id"`
		Timestamp        events.Time `json:"timestamp"`
		Source           string      `json:"source"`
		Content          *string     `json:"content"`
		ReasoningContent *string     `json:"reasoning_content"`
	}
	f := frame{Kind: "StreamingDeltaEvent", ID: events.NewID(), Timestamp: events.Now(), Source: "agent"}
	if d.Content != "" {
		f.Content = &d.Content
	}
	if d.ReasoningContent != "" {
		f.ReasoningContent = &d.ReasoningContent
	}
	return strictjson.MustMarshal(f)
}

// view is the LLM view of the conversation: the system message, then
// the active branch's messages without those a hook blocked.
func (c *Conversation) view() []events.Message {
	return c.hist.View(c.systemMessage(), c.st.BlockedMessages)
}
