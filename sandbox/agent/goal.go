package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm"
)

// A goal loop pursues an objective inside the conversation: it sends the
// objective as a user message and runs the agent; after each run a judge
// (the agent's LLM, asked with usage_id goal-judge) audits the transcript
// against the objective. When the judge finds it complete the loop ends
// (complete); when the rounds reach max_iterations it ends (capped);
// otherwise it sends a follow-up naming what is missing and runs again. A
// run that ends paused, in error or waiting for confirmation, a judge call
// that fails, StopGoal and a user message all end the loop as interrupted,
// which ResumeGoal continues from the round it reached. Every change of the
// goal's status is a ConversationStateUpdateEvent with key "goal" and is
// kept in the conversation's state (ConversationInfo.goal), so it survives
// a restart (a loop that was active comes back interrupted).

// Errors of the goal operations.
var (
	ErrGoalRunning     = errors.New("Conversation run or goal loop already running.")
	ErrNoResumableGoal = errors.New("no_resumable_goal")
	ErrEmptyObjective  = errors.New("Goal objective must not be empty.")
)

// DefaultGoalIterations is the number of judge rounds when the request
// gives none.
const DefaultGoalIterations = 10

// goalJudgeUsageID keys the judge's LLM usage in the conversation's stats.
const goalJudgeUsageID = "goal-judge"

const judgePrompt = `You are auditing whether a long-running GOAL has been COMPLETED by an AI software agent.

<objective>
%s
</objective>

Derive the concrete requirements implied by the objective. For each requirement, look for authoritative evidence in the transcript below: file contents, command output or test results produced by the agent. Treat missing, uncertain or merely claimed but unverified evidence as not satisfied.

<transcript>
%s
</transcript>

Respond with strict JSON and nothing else, in exactly this shape:
{"score": <number 0.0-1.0, the probability the full objective is provably done>, "complete": <true|false>, "missing": "<what remains, briefly, or an empty string if complete>"}`

const followupPrompt = `The goal is not yet complete (audit round %d).
Outstanding: %s

Inspect the real current state of the workspace (do not rely on memory). For each remaining requirement, make concrete progress and gather authoritative evidence by running the relevant tests or commands. Keep the full objective intact and finish only once every requirement is provably satisfied.`

const resumePrompt = `Resuming a goal that was stopped or interrupted. Re-check the real current state of the workspace (do not rely on memory) and continue making concrete, verified progress toward the original objective. Finish only once every requirement is provably satisfied.`

// goalRun is a goal loop in progress.
type goalRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// goalRunning reports whether a goal loop is in progress.
func (c *Conversation) goalRunning() bool { return c.goalLoopRun != nil }

// Goal returns a copy of the goal's status (nil when the conversation never
// had a goal).
func (c *Conversation) Goal() *agentwire.GoalStatus {
	return call(c, func() *agentwire.GoalStatus { return copyGoal(c.st.Goal) })
}

func copyGoal(g *agentwire.GoalStatus) *agentwire.GoalStatus {
	if g == nil {
		return nil
	}
	out := *g
	if g.Verdict != nil {
		v := *g.Verdict
		out.Verdict = &v
	}
	return &out
}

// StartGoal starts a goal loop toward objective with at most maxIterations
// judge rounds (DefaultGoalIterations when 0, at most
// agentwire.MaxGoalIterations) and returns once it is
// started. Errors: ErrEmptyObjective, ErrGoalRunning while a run or another
// goal loop is in progress, ErrClosed.
func (c *Conversation) StartGoal(ctx context.Context, objective string, maxIterations int) error {
	if strings.TrimSpace(objective) == "" {
		return ErrEmptyObjective
	}
	if maxIterations == 0 {
		maxIterations = DefaultGoalIterations
	}
	if maxIterations < 1 || maxIterations > agentwire.MaxGoalIterations {
		return fmt.Errorf("start goal: max_iterations must be 1 to %d", agentwire.MaxGoalIterations)
	}
	if err := c.awaitSetup(ctx); err != nil {
		return err
	}
	return call(c, func() error {
		if err := c.goalStartable(); err != nil {
			return err
		}
		st := &agentwire.GoalStatus{Active: true, Status: agentwire.GoalRunning, MaxIterations: maxIterations, Objective: objective}
		return c.startGoal(ctx, st, objective)
	})
}

// ResumeGoal continues the last goal that ended interrupted (or was active
// when the server stopped), from the round it had reached, with a resume
// message. Errors: ErrNoResumableGoal when there is none (no goal, or it
// ended complete or capped), ErrGoalRunning, ErrClosed.
func (c *Conversation) ResumeGoal(ctx context.Context) error {
	if err := c.awaitSetup(ctx); err != nil {
		return err
	}
	return call(c, func() error {
		if err := c.goalStartable(); err != nil {
			return err
		}
		g := c.st.Goal
		if g == nil || g.Status == agentwire.GoalComplete || g.Status == agentwire.GoalCapped {
			return ErrNoResumableGoal
		}
		st := copyGoal(g)
		st.Active, st.Status = true, agentwire.GoalRunning
		return c.startGoal(ctx, st, resumePrompt)
	})
}

// StopGoal ends the goal loop in progress (none: a no-op) and returns once
// it has ended, its status interrupted. A run of the agent in progress is
// not interrupted (Pause and Interrupt do that); the loop starts no further
// round.
func (c *Conversation) StopGoal(ctx context.Context) error {
	g, err := call2(c, func() (*goalRun, error) {
		if c.closed {
			return nil, ErrClosed
		}
		return c.goalLoopRun, nil
	})
	if err != nil || g == nil {
		return err
	}
	g.cancel()
	select {
	case <-g.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Conversation) goalStartable() error {
	if c.closed {
		return ErrClosed
	}
	if c.running || c.goalLoopRun != nil {
		return ErrGoalRunning
	}
	return nil
}

// startGoal records st and starts the loop, whose first message is
// first.
func (c *Conversation) startGoal(ctx context.Context, st *agentwire.GoalStatus, first string) error {
	if err := c.setGoal(ctx, st); err != nil {
		return err
	}
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g := &goalRun{cancel: cancel, done: make(chan struct{})}
	c.goalLoopRun = g
	c.goAsync(func() { c.goalLoop(gctx, g, first) }) // c.closed is false on the owner: never refused
	return nil
}

// setGoal stores the goal's status and emits it as a "goal" state
// update.
func (c *Conversation) setGoal(ctx context.Context, st *agentwire.GoalStatus) error {
	c.st.Goal = copyGoal(st)
	if err := c.saveState(); err != nil {
		return err
	}
	if err := c.emitState(ctx, "goal", st); err != nil {
		return err
	}
	c.markChanged()
	return nil
}

// goalLoop drives one goal loop until it ends (see the comment at the top).
func (c *Conversation) goalLoop(ctx context.Context, g *goalRun, message string) {
	defer func() {
		c.do(func() {
			if c.goalLoopRun == g {
				c.goalLoopRun = nil
			}
		})
		g.cancel()
		close(g.done)
	}()
	// update changes the goal's status unless the conversation is closing.
	update := func(f func(*agentwire.GoalStatus)) {
		c.do(func() {
			if c.closed || c.st.Goal == nil {
				return
			}
			st := copyGoal(c.st.Goal)
			f(st)
			c.logErr(c.setGoal(context.WithoutCancel(ctx), st))
		})
	}
	interrupted := func(why string, err error) {
		c.lg.Info("goal loop interrupted", "reason", why, "error", err)
		update(func(st *agentwire.GoalStatus) { st.Active, st.Status = false, agentwire.GoalInterrupted })
	}
	for {
		req := agentwire.SendMessageRequest{Role: "user", Content: []events.Content{events.TextItem(message)}}
		if _, err := c.sendMessage(ctx, req); err != nil {
			interrupted("send message", err)
			return
		}
		if err := c.Run(ctx); err != nil && !errors.Is(err, ErrAlreadyRunning) {
			interrupted("run", err)
			return
		}
		if err := c.WaitIdle(ctx); err != nil {
			interrupted("stopped", err)
			return
		}
		if ctx.Err() != nil {
			interrupted("stopped", ctx.Err())
			return
		}
		switch s := c.Status(); s {
		case agentwire.StatusPaused, agentwire.StatusError, agentwire.StatusWaitingForConfirmation:
			interrupted("run ended "+string(s), nil)
			return
		}
		objective := call(c, func() string { return c.st.Goal.Objective })
		verdict, err := c.judgeGoal(ctx, objective)
		if err != nil {
			interrupted("judge", err)
			return
		}
		var round, limit int
		done := false
		update(func(st *agentwire.GoalStatus) {
			st.Iteration++
			round, limit = st.Iteration, st.MaxIterations
			st.Verdict = &verdict
			switch {
			case verdict.Complete:
				st.Active, st.Status, done = false, agentwire.GoalComplete, true
			case st.Iteration >= st.MaxIterations:
				st.Active, st.Status, done = false, agentwire.GoalCapped, true
			}
		})
		if done || round == 0 {
			c.lg.Info("goal loop ended", "rounds", round, "max", limit, "complete", verdict.Complete)
			return
		}
		missing := verdict.Missing
		if missing == "" {
			missing = "Some requirements are not yet verified."
		}
		message = fmt.Sprintf(followupPrompt, round, missing)
	}
}

// judgeGoal asks the judge whether the objective is complete, from the
// transcript of the active branch. Its usage is added to the stats under
// goalJudgeUsageID.
func (c *Conversation) judgeGoal(ctx context.Context, objective string) (agentwire.GoalVerdict, error) {
	var (
		view []events.Message
		cfg  llm.Config
	)
	c.do(func() { view, cfg = c.view(), c.client.Config() })
	cfg.UsageID, cfg.Stream = goalJudgeUsageID, false
	prompt := fmt.Sprintf(judgePrompt, objective, renderTranscript(view))
	sctx, span := c.llmSpan(ctx, cfg, "goal_judge")
	resp, err := llm.New(cfg).Complete(sctx, llm.Request{Messages: []events.Message{
		{Role: events.RoleUser, Content: []events.Content{events.TextItem(prompt)}}}}, nil)
	endLLMSpan(span, resp, err)
	if err != nil {
		return agentwire.GoalVerdict{}, fmt.Errorf("goal judge: %w", err)
	}
	uerr := call(c, func() error {
		usage, uerr := c.usageEvents(cfg, resp)
		err = c.emit(ctx, usage...)
		return uerr
	})
	if err = errors.Join(err, uerr); err != nil {
		return agentwire.GoalVerdict{}, err
	}
	return parseVerdict(resp.Content), nil
}

// renderTranscript renders the LLM view (without its system message) as
// "role: text" turns for the judge; tool calls are shown with their
// arguments.
func renderTranscript(view []events.Message) string {
	var turns []string
	for _, m := range view {
		if m.Role == events.RoleSystem {
			continue
		}
		text := strings.TrimSpace(m.Text())
		for _, tc := range m.ToolCalls {
			text = strings.TrimSpace(text + "\n[calls " + tc.Name + " " + tc.Arguments + "]")
		}
		if text != "" {
			turns = append(turns, string(m.Role)+": "+text)
		}
	}
	return strings.Join(turns, "\n\n")
}

var jsonObject = regexp.MustCompile(`(?s)\{.*\}`)

// parseVerdict reads the judge's JSON answer (alone or inside other text).
// An answer that cannot be read is a conservative "not complete".
func parseVerdict(text string) agentwire.GoalVerdict {
	var data map[string]any
	text = strings.TrimSpace(text)
	if json.Unmarshal([]byte(text), &data) != nil {
		if m := jsonObject.FindString(text); m == "" || json.Unmarshal([]byte(m), &data) != nil {
			return agentwire.GoalVerdict{Missing: "Judge verdict could not be parsed."}
		}
	}
	v := agentwire.GoalVerdict{}
	if s, ok := data["score"].(float64); ok {
		v.Score = min(1, max(0, s))
	}
	if b, ok := data["complete"].(bool); ok {
		v.Complete = b
	} else {
		v.Complete = v.Score >= 1
	}
	if s, ok := data["missing"].(string); ok {
		v.Missing = s
	}
	return v
}

// recoverGoal marks a goal that was active when the server stopped
// as interrupted (it can be resumed).
func (c *Conversation) recoverGoal(ctx context.Context) error {
	if g := c.st.Goal; g != nil && g.Active {
		st := copyGoal(g)
		st.Active, st.Status = false, agentwire.GoalInterrupted
		return c.setGoal(ctx, st)
	}
	return nil
}
