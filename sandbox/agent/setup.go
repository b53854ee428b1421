package agent

import (
	"context"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/wire"
)

// A conversation's setup is the work that makes the agent ready beyond its
// built-in tools: fetching lookup secrets, then (with those values) the
// extensions. Work that can be slow runs in the background so that creating
// or loading a conversation never waits for a remote server; SendMessage and
// Run wait for it (setup is bounded by its own timeouts), so the agent never
// acts before its secrets and tools are in place.

// setupResult is what the background part produced, applied under c.mu.
type setupResult struct {
	secretVals map[string]string
	problems   []setupProblem
}

// setupProblem is reported as a ConversationErrorEvent; the conversation
// continues without the failed part.
type setupProblem struct {
	code, detail string
}

// startSetup runs the setup: inline when nothing in it can be slow, else in
// the background. Called from open with c.mu not yet shared.
func (c *Conversation) startSetup(ctx context.Context, lookups map[string]wire.SecretSource) {
	c.setupDone = make(chan struct{})
	if len(lookups) == 0 {
		c.applySetupLocked(ctx, setupResult{})
		close(c.setupDone)
		return
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.setupCancel = cancel
	go func() {
		defer close(c.setupDone)
		res := c.prepare(sctx, lookups)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return
		}
		c.applySetupLocked(sctx, res)
	}()
}

// awaitSetup blocks until the setup is applied or ctx ends. It must not be
// called with c.mu held.
func (c *Conversation) awaitSetup(ctx context.Context) error {
	select {
	case <-c.setupDone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// prepare does the slow part of the setup without holding c.mu.
func (c *Conversation) prepare(ctx context.Context, lookups map[string]wire.SecretSource) setupResult {
	var res setupResult
	vals, problems := c.lookupSecrets(ctx, lookups)
	res.secretVals = vals
	for _, p := range problems {
		res.problems = append(res.problems, setupProblem{code: "SecretUnavailable", detail: p})
	}
	return res
}

// applySetupLocked installs the setup's result and reports its problems.
func (c *Conversation) applySetupLocked(ctx context.Context, res setupResult) {
	c.exportLocked(ctx, res.secretVals)
	for _, p := range res.problems {
		c.logErr(c.emitLocked(ctx, &events.ConversationErrorEvent{Base: events.Base{Source: events.SourceEnvironment},
			Code: p.code, Detail: p.detail}))
	}
	if len(res.secretVals) > 0 && c.opts.OnSecrets != nil {
		go c.opts.OnSecrets(c)
	}
}

// closeExtensions releases what the setup started.
func (c *Conversation) closeExtensions() {}
