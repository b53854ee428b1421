package agent

import (
	"context"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/hooks"
)

// A conversation's setup is the work that makes the agent ready beyond its
// built-in tools: fetching lookup secrets, then (with those values) loading
// plugins, skills and hooks and connecting MCP tool servers. When any of it
// can wait on something remote it runs in the background, so creating or
// loading a conversation never waits for a remote server; SendMessage and
// Run wait for it (it is bounded by its own timeouts), so the agent never
// acts before its secrets and tools are in place. Problems are reported as
// ConversationErrorEvents and the conversation continues without the part
// that failed.

// setupResult is what the preparation produced, applied on the owner.
type setupResult struct {
	secretVals map[string]string
	problems   []setupProblem
	ext        extensions
}

// setupProblem is reported as a ConversationErrorEvent.
type setupProblem struct {
	code, detail string
}

// startSetup runs the setup: inline when nothing in it can be slow, else in
// the background. Called from open, before the conversation is shared.
func (c *Conversation) startSetup(ctx context.Context, lookups map[string]agentwire.SecretSource) {
	c.setupDone = make(chan struct{})
	plan := c.plan(lookups)
	if !plan.slow() {
		c.applySetup(ctx, c.prepare(ctx, plan))
		close(c.setupDone)
		return
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.setupCancel = cancel
	c.goAsync(func() { // c is not shared yet: never refused
		defer close(c.setupDone)
		res := c.prepare(sctx, plan)
		c.do(func() {
			if c.closed {
				if res.ext.mcp != nil {
					res.ext.mcp.Close()
				}
				return
			}
			c.applySetup(sctx, res)
		})
	})
}

// awaitSetup blocks until the setup is applied or ctx ends. It must not
// run on the owner.
func (c *Conversation) awaitSetup(ctx context.Context) error {
	select {
	case <-c.setupDone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// prepare does the setup's work. It does not run on the owner.
func (c *Conversation) prepare(ctx context.Context, plan *setupPlan) setupResult {
	var res setupResult
	vals, problems := c.lookupSecrets(ctx, plan.lookups)
	res.secretVals = vals
	for _, p := range problems {
		res.problems = append(res.problems, setupProblem{code: "SecretUnavailable", detail: p})
	}
	c.prepareExtensions(ctx, plan, &res)
	return res
}

// applySetup installs the setup's result and reports its problems.
func (c *Conversation) applySetup(ctx context.Context, res setupResult) {
	c.export(ctx, res.secretVals)
	k, dups := c.kit.with(res.ext)
	c.kit = k
	problems := append(res.problems, dups...)
	for _, p := range problems {
		c.lg.Warn("conversation setup problem", "code", p.code, "detail", p.detail)
		c.logErr(c.emit(ctx, &events.ConversationErrorEvent{Base: events.Base{Source: events.SourceEnvironment},
			Code: p.code, Detail: p.detail}))
	}
	if len(res.secretVals) > 0 {
		c.onSecrets.notify()
	}
	if k.hooks != nil {
		started := make(chan struct{})
		c.sessionStarted = started
		c.hookWG.Add(1) // before Close can wait
		// c.closed is false on the owner: never refused.
		c.goAsync(func() {
			defer c.hookWG.Done()
			defer close(started)
			c.runHooks(context.WithoutCancel(ctx), hooks.SessionStart, hooks.Input{})
		})
	}
}
