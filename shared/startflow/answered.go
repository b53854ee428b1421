package startflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// A start on a sandbox whose agent server this worker has heard from is
// placed without asking it again: the runtime's view (RUNNING, at the
// address and with the session key that answered) stands for the round
// trip, and the skills, which that round trip would have loaded, load
// while the placement is written; the conversation's step records them.

// answerCache remembers, per sandbox, the agent server that last
// answered this worker: its address and session key. It is safe for
// concurrent use. An entry says only that the agent server answered once;
// knownReady checks it against the runtime's view before trusting it, and
// a call that fails without an answer forgets it.
type answerCache struct{ m sync.Map }

// agentAnswer is an agent server that answered: its address and session
// key.
type agentAnswer struct{ url, key string }

// note records that sandboxID's agent server answered c.
func (a *answerCache) note(sandboxID string, c *client.Agent) {
	a.m.Store(sandboxID, agentAnswer{c.BaseURL(), c.SessionKey()})
}

// forget makes the next start on sandboxID ask its agent server again.
func (a *answerCache) forget(sandboxID string) { a.m.Delete(sandboxID) }

// answered reports whether sandboxID's agent server answered last at url
// with session key key.
func (a *answerCache) answered(sandboxID, url, key string) bool {
	known, ok := a.m.Load(sandboxID)
	return ok && known.(agentAnswer) == agentAnswer{strings.TrimRight(url, "/"), key}
}

// has reports whether sandboxID's agent server answered this worker.
func (a *answerCache) has(sandboxID string) bool {
	_, ok := a.m.Load(sandboxID)
	return ok
}

// knownReady reports whether sb's agent server can be used without asking
// it first: the runtime reports sb RUNNING at the address and with the
// session key at which it answered this worker before, and sb has nothing
// to deliver or delete on it (what BuryTombstones and FlushQueued do after
// the answer). It returns sb as refreshed and a client for it.
func (w *Worker) knownReady(ctx context.Context, sb acs.Sandbox) (acs.Sandbox, *client.Agent, bool) {
	if !w.answers.has(sb.ID) {
		return sb, nil, false
	}
	sb, st := w.life.Refresh(ctx, sb)
	if st.Status != acs.SandboxRunning || sb.PendingFlush || len(sb.Tombstones) > 0 ||
		!w.answers.answered(sb.ID, st.AgentURL, st.SessionKey) {
		return sb, nil, false
	}
	return sb, client.NewServiceAgent(st.AgentURL, st.SessionKey), true
}

// readyWithoutAsking is probeReady without the round trip, when sb's agent
// server is knownReady. ok is false otherwise: the caller asks. With
// nothing to prepare, the skills are loaded in the background
// (loadSkillsAhead): the placement records the skills step without its
// detail, and startConversation records it. Should the agent server have
// stopped answering meanwhile, the conversation's creation fails and its
// step is retried, as when it stops between an answer and the creation.
func (w *Worker) readyWithoutAsking(ctx context.Context, dl *delivery, t acs.StartTask, req v1wire.StartRequest, sb acs.Sandbox) (readyProbe, bool) {
	sb, c, ok := w.knownReady(ctx, sb)
	if !ok {
		return readyProbe{}, false
	}
	r := readyProbe{sb: sb, client: c, prepare: !nothingToPrepare(sb, t, req)}
	if !r.prepare {
		placed := t
		emptyWorkDir(sb, req)(&placed)
		dl.loadSkillsAhead(ctx, t.ID, r.client, placed.ProjectDir)
	}
	return r, true
}

// skillsLoad is a loading of a task's skills under way.
type skillsLoad struct {
	task   string
	done   chan struct{}
	detail string
	err    error
}

// startSkillsLoad loads the skills for projectDir in the background.
func startSkillsLoad(ctx context.Context, task string, c *client.Agent, projectDir string) *skillsLoad {
	l := &skillsLoad{task: task, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		l.detail, l.err = loadSkills(ctx, c, projectDir)
	}()
	return l
}

// loadSkillsAhead starts loading task's skills for the rest of the
// delivery (startConversation waits for it); outside a delivery it does
// nothing (startConversation loads them).
func (dl *delivery) loadSkillsAhead(ctx context.Context, task string, c *client.Agent, projectDir string) {
	if dl != nil {
		dl.skills = startSkillsLoad(ctx, task, c, projectDir)
	}
}

// skillsToRecord is, for t placed without its skills step's detail
// (readyWithoutAsking), the wait for its skills' loading, which returns
// the change that records them on the task: the loading the placement
// started in this delivery, or one started now (a later delivery). When
// the skills step has its detail, the wait returns no change.
func (w *Worker) skillsToRecord(ctx context.Context, dl *delivery, t acs.StartTask, c *client.Agent) func() (func(*acs.StartTask), error) {
	if i := lastStep(t, acs.TaskSettingUpSkills); i < 0 || t.Steps[i].Detail != "" {
		return func() (func(*acs.StartTask), error) { return nil, nil }
	}
	var l *skillsLoad
	if dl != nil && dl.skills != nil && dl.skills.task == t.ID {
		l = dl.skills
	} else {
		l = startSkillsLoad(ctx, t.ID, c, t.ProjectDir)
	}
	return func() (func(*acs.StartTask), error) {
		<-l.done
		if l.err != nil {
			return nil, l.err
		}
		return skillsDetail(l.detail), nil
	}
}

// Placer places a start as it is submitted, when that needs no wait
// (Worker.PlaceOnSubmit).
type Placer interface {
	PlaceOnSubmit(ctx context.Context, t acs.StartTask) (acs.StartTask, bool, error)
}

var _ Placer = (*Worker)(nil)

// PlaceOnSubmit stores t, a start task not stored yet (in WORKING), placed,
// when its placement needs neither a wait nor a round trip: no explicit
// sandbox_id, a grouping strategy that chooses among the owner's sandboxes
// (no other start of theirs placing) a RUNNING one whose agent server is
// knownReady, and nothing to prepare. The task, moved through the steps
// with nothing to do to STARTING_CONVERSATION (the skills step's detail is
// recorded by startConversation), and the slot's reservation are one
// write; it returns the task as stored and true. The worker then only
// creates the conversation: a start costs a durable write and a step
// fewer. Otherwise, or when the slot was taken meanwhile, nothing is
// stored and ok is false: the caller stores t and the worker places it.
// err is a failed read or write of the store (nothing stored).
func (w *Worker) PlaceOnSubmit(ctx context.Context, t acs.StartTask) (_ acs.StartTask, ok bool, err error) {
	var req v1wire.StartRequest
	if t.Status != acs.TaskWorking || strictjson.Unmarshal(t.Request, &req) != nil || req.SandboxID != nil {
		return t, false, nil
	}
	settings, err := w.settings(ctx, t.OwnerID)
	if err != nil || !settings.SandboxGroupingStrategy.Groups() {
		return t, false, err
	}
	lock, free, err := w.placementFree(ctx, t)
	if err != nil || !free {
		return t, false, err
	}
	mine, err := w.placer().sandboxes(ctx, t.OwnerID, lock.Created)
	if err != nil {
		return t, false, err
	}
	p := w.placer().decide(settings, mine, acs.PlaceRequest{Owner: t.OwnerID})
	if p.Sandbox == nil || p.Sandbox.Status != acs.SandboxRunning {
		return t, false, nil
	}
	placed := t
	placed.OwnWorkDir = true
	ready, known := w.readyWithoutAsking(ctx, nil, placed, req, *p.Sandbox)
	if !known || ready.prepare {
		return t, false, nil
	}
	id := p.Sandbox.ID
	if err := w.placeOnRunning(req, ready, id, p.Reason, true)(&placed); err != nil {
		return t, false, nil
	}
	_, err = w.Store.CreateStartTaskAndUpdateSandbox(ctx, placed, id, stillRunning(w.reserveSlot(t, p.Max)))
	switch {
	case err == nil:
		return placed, true, nil
	case errors.Is(err, errStoppedRunning) || errors.Is(err, acs.ErrCapacity) || errors.Is(err, acs.ErrConflict) || errors.Is(err, acs.ErrNotFound):
		return t, false, nil // the sandbox changed meanwhile: the worker places the start
	}
	return t, false, fmt.Errorf("store start task %s placed on %s: %w", t.ID, id, err)
}
