package startflow

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// waitForSandbox resumes a paused sandbox and waits until it is RUNNING and
// its agent server answers /alive.
func (w *Worker) waitForSandbox(ctx context.Context, dl *delivery, t acs.StartTask, req v1wire.StartRequest) (time.Duration, bool, error) {
	cfg := w.Config
	sb, err := w.Store.GetSandbox(ctx, *t.SandboxID)
	if errors.Is(err, acs.ErrNotFound) {
		return 0, false, w.deletedWhileStarting(ctx, t)
	}
	if err != nil {
		return 0, false, err
	}
	ready := w.probeReady(ctx, t, req, sb)
	sb, err = ready.sb, ready.err
	switch {
	case err == nil:
		return 0, false, w.advanceReady(ctx, dl, t, req, acs.TaskWaitingForSandbox, ready, nil)
	case errors.Is(err, acs.ErrGone):
		return 0, false, failf("Sandbox %s no longer exists", sb.ID)
	case errors.Is(err, acs.ErrSandboxFailed):
		return 0, false, failf("Sandbox %s failed to start: %s", sb.ID, sb.Detail)
	case errors.Is(err, acs.ErrCapacity):
		return 0, false, failf("Sandbox %s cannot be resumed: %s", sb.ID, acs.ErrorMessage(err))
	case !errors.Is(err, acs.ErrConflict):
		return 0, false, err
	}
	if waited := w.now().Sub(t.Steps[len(t.Steps)-1].StartedAt); waited > cfg.StartupTimeout {
		return 0, false, failf("Sandbox %s did not become ready within %s (status %s)", sb.ID, cfg.StartupTimeout, sb.Status)
	}
	return cfg.Sandboxes.PollInterval, false, nil
}

// readyProbe is what advanceReady records: a sandbox found ready, its
// agent server's client and, when there is nothing to prepare
// (nothingToPrepare), the skills step's detail (skills loaded).
type readyProbe struct {
	sb      acs.Sandbox
	client  *client.Agent
	prepare bool
	skills  string
	err     error
}

// probeReady asks whether sb's agent server answers now, without
// waiting (Lifecycle.AwaitReady). The request that shows it answers is
// the first request t needs (firstRequest): with nothing to prepare, the
// skills' loading, else an /alive probe. Whether it can run the browser
// tools is asked meanwhile (browserProbe). A ready sandbox then gets the
// steps it owes (Lifecycle.PayOwed). err
// is the readiness's, or the skills' loading's.
func (w *Worker) probeReady(ctx context.Context, t acs.StartTask, req v1wire.StartRequest, sb acs.Sandbox) readyProbe {
	var r readyProbe
	var first firstAnswer
	browser := w.browserProbe(req)
	ready, err := w.life.AwaitReady(ctx, sb, 0, func(actx context.Context, sb acs.Sandbox, c *client.Agent) bool {
		browser.start(ctx, sb.ID, c)
		first = w.firstRequest(actx, t, req, sb, c)
		return first.answered
	})
	r.sb, r.client, r.err = ready.Sandbox, ready.Client, err
	r.prepare, r.skills = first.prepare, first.skills
	if err == nil {
		r.sb = w.life.PayOwed(ctx, ready)
		r.err = first.skillsErr
	}
	if r.err == nil {
		w.answers.note(r.sb.ID, r.client)
	}
	browser.wait()
	return r
}

// firstAnswer is the answer to the first request a start placed on a
// sandbox needs of its agent server.
type firstAnswer struct {
	// answered reports that the agent server answered.
	answered bool
	// prepare reports that the start has a repository or directory to
	// prepare: the request was an /alive probe.
	prepare bool
	// skills and skillsErr are the skills' loading, with nothing to
	// prepare.
	skills    string
	skillsErr error
}

// firstRequest sends c the first request t, placed on sb, needs: the
// skills' loading when there is nothing to prepare, else an /alive probe.
func (w *Worker) firstRequest(ctx context.Context, t acs.StartTask, req v1wire.StartRequest, sb acs.Sandbox, c *client.Agent) firstAnswer {
	var f firstAnswer
	if f.prepare = !nothingToPrepare(sb, t, req); f.prepare {
		f.answered = c.Alive(ctx) == nil
		return f
	}
	placed := t
	emptyWorkDir(sb, req)(&placed)
	f.skills, f.skillsErr = loadSkills(ctx, c, placed.ProjectDir)
	var he *client.HTTPError
	f.answered = f.skillsErr == nil || errors.As(f.skillsErr, &he)
	return f
}

// browserAsk is a question to an agent server whether it can run the
// browser tools, asked beside the readiness probe and remembered for
// startConversation (browserUsable).
type browserAsk struct {
	w    *Worker
	off  bool
	once sync.Once
	done sync.WaitGroup
}

// browserProbe returns the question for a start of req: none for a plan
// agent or when the browser tools are off.
func (w *Worker) browserProbe(req v1wire.StartRequest) *browserAsk {
	return &browserAsk{w: w, off: req.AgentType == "plan" || !w.Config.BrowserTools}
}

// start asks sandboxID's agent server, once, in the background.
func (b *browserAsk) start(ctx context.Context, sandboxID string, c *client.Agent) {
	if b.off {
		return
	}
	b.once.Do(func() { b.done.Go(func() { b.w.browserUsable(ctx, sandboxID, c) }) })
}

// wait waits for the answer, when asked.
func (b *browserAsk) wait() { b.done.Wait() }

// advanceReady records that t's sandbox answers (ready, from probeReady),
// moving t from status from to the preparation in one write, after
// change; the rest of the delivery reuses the sandbox and its client. With
// nothing to prepare, the preparation, setup-script and hooks steps are
// recorded in that write too, and so is the skills step, whose loading
// ran in the probe: the task goes on to STARTING_CONVERSATION. A crash
// before the write repeats only reads (and placement, which finds the slot
// it reserved).
func (w *Worker) advanceReady(ctx context.Context, dl *delivery, t acs.StartTask, req v1wire.StartRequest, from acs.StartTaskStatus, ready readyProbe, change func(*acs.StartTask)) error {
	dl.remember(ready.sb, ready.client)
	_, err := w.Store.UpdateStartTask(ctx, t.ID, w.readyFn(req, from, ready, change))
	return err
}

// readyFn is advanceReady's update of the task.
func (w *Worker) readyFn(req v1wire.StartRequest, from acs.StartTaskStatus, ready readyProbe, change func(*acs.StartTask)) func(*acs.StartTask) error {
	url := ready.client.BaseURL()
	var to []acs.StartTaskStatus
	if from != acs.TaskWaitingForSandbox {
		to = append(to, acs.TaskWaitingForSandbox)
	}
	set := func(tk *acs.StartTask) {
		if change != nil {
			change(tk)
		}
		tk.AgentServerURL = &url
	}
	if ready.prepare {
		return advanceFn(w.now, from, set, nil, append(to, acs.TaskPreparingRepository)...)
	}
	prepared := emptyWorkDir(ready.sb, req)
	return advanceFn(w.now, from, func(tk *acs.StartTask) { set(tk); prepared(tk) }, skillsDetail(ready.skills),
		append(to, acs.TaskPreparingRepository, acs.TaskRunningSetupScript, acs.TaskSettingUpGitHooks,
			acs.TaskSettingUpSkills, acs.TaskStartingConversation)...)
}

// deletedWhileStarting ends a start whose sandbox was removed under it,
// giving back the sandbox's place under the running cap should the removal
// have left its claim behind.
func (w *Worker) deletedWhileStarting(ctx context.Context, t acs.StartTask) error {
	w.life.Release(ctx, t.OwnerID, *t.SandboxID)
	return failf("Sandbox %s was deleted while the conversation was starting", *t.SandboxID)
}

// delivery is the state the steps of one queue delivery share: the
// sandbox a step found ready with its agent server's client, and the
// skills' loading a placement started without waiting for it. A nil
// delivery is a placement outside any delivery, which shares nothing.
type delivery struct {
	sb     acs.Sandbox
	client *client.Agent
	// skills is the task's skills' loading a placement that did not wait
	// for it started (readyWithoutAsking).
	skills *skillsLoad
	// req is the task's start request, decoded by the first step.
	req *v1wire.StartRequest
}

// request returns t's start request, decoded once per delivery: it does
// not change after the submit. An unreadable request fails the start.
func (dl *delivery) request(t acs.StartTask) (v1wire.StartRequest, error) {
	if dl.req != nil {
		return *dl.req, nil
	}
	var req v1wire.StartRequest
	if err := strictjson.Unmarshal(t.Request, &req); err != nil {
		return req, failf("the stored start request is unreadable: %v", err)
	}
	dl.req = &req
	return req, nil
}

// remember keeps sb and its client as ready for the rest of the delivery.
func (dl *delivery) remember(sb acs.Sandbox, c *client.Agent) {
	if dl != nil {
		dl.sb, dl.client = sb, c
	}
}

// ready returns the sandbox id and its client when a step of the delivery
// found it ready.
func (dl *delivery) ready(id string) (acs.Sandbox, *client.Agent, bool) {
	if dl == nil || dl.client == nil || dl.sb.ID != id {
		return acs.Sandbox{}, nil, false
	}
	return dl.sb, dl.client, true
}

// client returns a client for the task's sandbox, which must be ready (a
// sandbox paused meanwhile is resumed; not ready yet is a retryable error).
// Within one delivery the sandbox is checked once: the steps after the
// first reuse what it found (should the agent server have gone since, their
// call fails and the step is retried in a new delivery, which checks
// again). An agent server that answered this worker and is knownReady is
// not asked again (a failed step forgets its answer: see Process).
func (w *Worker) client(ctx context.Context, dl *delivery, t acs.StartTask) (acs.Sandbox, *client.Agent, error) {
	if sb, c, ok := dl.ready(*t.SandboxID); ok {
		return sb, c, nil
	}
	sb, err := w.Store.GetSandbox(ctx, *t.SandboxID)
	if errors.Is(err, acs.ErrNotFound) {
		return sb, nil, w.deletedWhileStarting(ctx, t)
	}
	if err != nil {
		return sb, nil, err
	}
	if sb, c, ok := w.knownReady(ctx, sb); ok {
		dl.remember(sb, c)
		return sb, c, nil
	}
	sb, c, err := w.life.Ready(ctx, sb, w.Config.Sandboxes.ResumeWait)
	if errors.Is(err, acs.ErrGone) || errors.Is(err, acs.ErrSandboxFailed) {
		return sb, nil, failf("%s", err.Error())
	}
	if err == nil {
		dl.remember(sb, c)
		w.answers.note(sb.ID, c)
	}
	return sb, c, err
}
