package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
)

func init() {
	register(command{"watch", "follow a conversation's events live until its agent is done", runWatch})
}

func runWatch(ctx context.Context, a *app, args []string) error {
	fs := a.flags("watch", "watch <conversation-id> [--json]",
		"Prints the conversation's events: its history first, then live as they happen (user and agent\n"+
			"messages, each command and its output, file edits as diffs, errors, status changes), until\n"+
			"the agent is done and the service has recorded it. A dropped connection is resumed without losing or repeating an event.\n"+
			"Exits 0 when the agent finishes (or waits: idle, paused, waiting for confirmation), 1 when it\n"+
			"ends in error. --json prints the raw events, one JSON object a line.",
		"acs watch 6f1c0e9a2b3d4c5e8f7a6b5c4d3e2f1a\nacs watch 6f1c0e9a2b3d4c5e8f7a6b5c4d3e2f1a --json | jq .kind")
	pos, err := a.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := a.connect(); err != nil {
		return err
	}
	return a.follow(ctx, pos[0])
}

// doneStatuses are the execution statuses at which watching ends, and
// whether they are a failure.
var doneStatuses = map[string]bool{
	"idle": false, "finished": false, "paused": false, "waiting_for_confirmation": false,
	"error": true, "stuck": true,
}

// watcher prints a conversation's events once each.
type watcher struct {
	a    *app
	id   string
	r    *Renderer
	seen map[string]bool
	// status is the agent's execution status as last seen live.
	status string
	// statusAt is the time of the newest status event shown or applied:
	// an older one (a snapshot taken before events the agent's log already
	// showed) is stale.
	statusAt time.Time
}

// emit prints ev unless it was printed before; live events also update
// the status (also when the event was printed already, from the log). A
// status older than the newest one seen is neither shown nor applied: a
// connection's first snapshot can be taken before events that the log,
// read after it, showed.
func (w *watcher) emit(ev events.Event, live bool) {
	id := ev.EventBase().ID
	if st := StatusOf(ev); st != "" {
		at := ev.EventBase().Timestamp.Time
		if at.Before(w.statusAt) {
			w.seen[id] = true
			return
		}
		w.statusAt = at
		if live {
			w.status = st
		}
	}
	if w.seen[id] {
		return
	}
	w.seen[id] = true
	if w.a.json {
		b, err := events.Encode(ev)
		if err == nil {
			w.a.io.Stdout.Write(append(b, '\n'))
		}
		return
	}
	w.r.Render(ev)
}

// follow prints the conversation's history (the control plane's events),
// then its agent's events live (the agent server's WebSocket; after each
// subscription is open, the agent's own event log fills what happened
// before it, so nothing is missed, and every event is printed once). It
// returns when the agent is done (nil; a *silentError with exit 1 when it
// ended in error or stuck), when the sandbox is not running (nil, after
// saying so), or with ctx's error.
func (a *app) follow(ctx context.Context, id string) error { return a.followFrom(ctx, id, nil) }

// eventIDs are the ids of the conversation's events in the control
// plane's store.
func (a *app) eventIDs(ctx context.Context, id string) (map[string]bool, error) {
	ids := map[string]bool{}
	for ev, err := range a.c.Events(ctx, id, client.Filter{"limit": {"100"}}) {
		if err != nil {
			return nil, fmt.Errorf("read the conversation's events: %w", err)
		}
		ids[ev.EventBase().ID] = true
	}
	return ids, nil
}

// followFrom is follow, leaving out the events of skip (already shown).
func (a *app) followFrom(ctx context.Context, id string, skip map[string]bool) error {
	conv, err := a.c.GetConversation(ctx, id)
	if err != nil {
		return err
	}
	w := &watcher{a: a, id: id, r: NewRenderer(a.io.Stdout, a.color), seen: map[string]bool{}}
	for k := range skip {
		w.seen[k] = true
	}
	for ev, err := range a.c.Events(ctx, id, client.Filter{"limit": {"100"}}) {
		if err != nil {
			return fmt.Errorf("read the conversation's events: %w", err)
		}
		w.emit(ev, false)
	}
	var lastErr error
	failures := 0
	for {
		if conv.ConversationURL == nil || conv.SessionAPIKey == nil {
			if conv.SandboxStatus == "STARTING" {
				if err := sleep(ctx, time.Second); err != nil {
					return err
				}
				if conv, err = a.c.GetConversation(ctx, id); err != nil {
					return err
				}
				continue
			}
			a.note(fmt.Sprintf("the sandbox %s is %s: its agent is not running (resume it with \"acs resume %s\")", conv.SandboxID, conv.SandboxStatus, id))
			if conv.SandboxStatus == "ERROR" {
				return &silentError{code: ExitFailure}
			}
			return nil
		}
		agent, err := client.AgentOf(conv, a.httpOpts()...)
		if err != nil {
			return err
		}
		done, delivered, err := w.live(ctx, agent)
		if done || ctx.Err() != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			w.settle(ctx)
			return w.finish()
		}
		if delivered {
			failures = 0
		}
		if err != nil {
			lastErr = err
		}
		if failures++; failures > 5 {
			return fmt.Errorf("follow conversation %s: %w", id, lastErr)
		}
		if err := sleep(ctx, time.Duration(failures)*500*time.Millisecond); err != nil {
			return err
		}
		if conv, err = a.c.GetConversation(ctx, id); err != nil {
			return err
		}
	}
}

// live subscribes to the agent's events until it is done (done true) or
// the subscription ends (its error, if any).
func (w *watcher) live(ctx context.Context, agent *client.Agent) (done, delivered bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for ev, serr := range agent.Subscribe(ctx, w.id, client.SubscribeOptions{}) {
		if serr != nil {
			err = serr
			continue
		}
		delivered = true
		if e, ok := ev.(*events.ConversationStateUpdateEvent); ok && e.Key == "full_state" {
			// Each connection (the first, and each after a drop) starts
			// with a snapshot of the current state: what happened before
			// it and was not shown yet is in the agent's log, shown first
			// so the snapshot's status comes after the events that led to
			// it.
			if cerr := w.catchUp(ctx, agent); cerr != nil {
				return false, delivered, cerr
			}
		}
		w.emit(ev, true)
		if _, ok := doneStatuses[w.status]; ok {
			if cerr := w.catchUp(ctx, agent); cerr != nil {
				return false, delivered, cerr
			}
			return true, delivered, nil
		}
	}
	return false, delivered, err
}

// catchUp prints the agent's logged events not printed yet.
func (w *watcher) catchUp(ctx context.Context, agent *client.Agent) error {
	for ev, err := range agent.Events(ctx, w.id, client.Filter{"limit": {"100"}}) {
		if err != nil {
			return fmt.Errorf("read the agent's events: %w", err)
		}
		w.emit(ev, false)
	}
	return nil
}

// settleWait bounds how long settle waits for the control plane.
const settleWait = 5 * time.Second

// settle waits until the control plane's record of the conversation shows
// the status the agent ended with, so a show or ls right after watch
// agrees with what watch printed. The agent's events reach the control
// plane a moment after they reach a watcher. It gives up after settleWait,
// on an error, or when ctx ends: the status printed stands either way.
func (w *watcher) settle(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, settleWait)
	defer cancel()
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, 500*time.Millisecond) {
		conv, err := w.a.c.GetConversation(ctx, w.id)
		if err != nil || conv.ExecutionStatus != nil && *conv.ExecutionStatus == w.status {
			return
		}
		if sleep(ctx, pause) != nil {
			return
		}
	}
}

// finish reports how the agent ended.
func (w *watcher) finish() error {
	failed := doneStatuses[w.status]
	switch w.status {
	case "waiting_for_confirmation":
		w.a.note("the agent waits for your confirmation of its next action")
	case "paused":
		w.a.note(fmt.Sprintf("the agent is paused (continue with \"acs resume %s\")", w.id))
	}
	if failed {
		w.a.note("the conversation ended with status " + w.status)
		return &silentError{code: ExitFailure}
	}
	return nil
}

// note writes a remark for the person (stderr in --json mode, so stdout
// stays parseable).
func (a *app) note(s string) {
	out := a.io.Stdout
	if a.json {
		out = a.io.Stderr
	}
	fmt.Fprintln(out, a.paint(styleDim, s))
}

func (a *app) paint(style, s string) string {
	if !a.color {
		return s
	}
	return style + s + styleReset
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
