package startflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/wire/llmconfig"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/agentclient"
	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/sandboxes"
)

// Config configures the start flow: the part of the configuration tree it
// uses (ConfigFrom). The defaults are config's (shared/config/defaults.go).
type Config struct {
	// Sandboxes configures the sandbox lifecycle the flow creates, waits
	// for and resumes sandboxes with (specs, cap, poll interval, resume
	// wait).
	Sandboxes sandboxes.Config
	// LLM is the installation's LLM configuration (model, base URL, key);
	// a user's settings override the model, base URL and key.
	LLM llmconfig.Config
	// Tools are the tools every agent gets.
	Tools []string
	// BrowserTools adds browser_tool_set to a default agent's tools when
	// the sandbox's agent server lists it in usable_tools.
	BrowserTools bool
	// GitHost is where selected_repository is cloned from.
	GitHost string
	// StartupTimeout bounds waiting for a sandbox.
	StartupTimeout time.Duration
	// CloneTimeout and SetupTimeout bound cloning the repository and its
	// .openhands/setup.sh.
	CloneTimeout, SetupTimeout time.Duration
	// Visibility is the queue visibility timeout of a delivery.
	Visibility time.Duration
	// MaxAttempts bounds retries of a step after infrastructure errors.
	MaxAttempts int
}

// Worker advances start tasks.
type Worker struct {
	Store   acs.Store
	Queue   acs.Queue
	Runtime acs.Runtime
	// Sealer opens the sealed secrets of tasks, users and settings.
	Sealer acs.Sealer
	Config Config
	Now    func() time.Time
	// AfterStep, when set, is called after each step completes (its
	// progress stored), with the status the step ran from: an observer for
	// metrics and fault tests.
	AfterStep func(ctx context.Context, ran acs.StartTaskStatus, d acs.Delivery)

	// life is the sandbox lifecycle over Store and Runtime, with
	// Config.Sandboxes.
	life *sandboxes.Lifecycle
	// browsers remembers which agent servers can run the browser tools.
	browsers browserCache
	// answers remembers which agent server last answered, per sandbox.
	answers answerCache
}

// NewWorker returns a worker over its store, queue, runtime and sealer,
// with cfg's zero settings defaulted (Config.Defaults). Now and AfterStep
// may be set on it before it runs.
func NewWorker(store acs.Store, queue acs.Queue, rt acs.Runtime, sealer acs.Sealer, cfg Config) *Worker {
	w := &Worker{Store: store, Queue: queue, Runtime: rt, Sealer: sealer, Config: cfg.Defaults()}
	w.life = &sandboxes.Lifecycle{Store: store, Runtime: rt, Config: w.Config.Sandboxes, Now: w.now}
	return w
}

func (w *Worker) now() time.Time {
	if w.Now != nil {
		return w.Now().UTC()
	}
	return time.Now().UTC()
}

// Defaults returns c with every zero timeout, bound, tool list and git
// host set to config's default (config.Defaults). A configuration made by
// ConfigFrom has them all set already; this is for configurations built in
// code (tests, embedders). The caps and idle rules are left as they are
// (zero disables them).
func (c Config) Defaults() Config {
	d := ConfigFrom(config.Defaults(), nil)
	set := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	c.Sandboxes = c.Sandboxes.Defaults()
	set(&c.StartupTimeout, d.StartupTimeout)
	set(&c.CloneTimeout, d.CloneTimeout)
	set(&c.SetupTimeout, d.SetupTimeout)
	set(&c.Visibility, d.Visibility)
	if c.MaxAttempts == 0 {
		c.MaxAttempts = d.MaxAttempts
	}
	if len(c.Tools) == 0 {
		c.Tools = d.Tools
	}
	if c.GitHost == "" {
		c.GitHost = d.GitHost
	}
	return c
}

// userError is a failure the user can act on: it ends the task at once.
type userError struct{ msg string }

func (e *userError) Error() string { return e.msg }

func failf(format string, args ...any) error { return &userError{fmt.Sprintf(format, args...)} }

// Run receives and handles deliveries with n concurrent handlers until ctx
// ends.
func (w *Worker) Run(ctx context.Context, n int) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				ds, err := w.Queue.Receive(ctx, 1, 5*time.Second, w.Config.Visibility)
				if err != nil {
					if ctx.Err() == nil {
						slog.Error("startflow: receive", "error", err)
						time.Sleep(time.Second)
					}
					continue
				}
				for _, d := range ds {
					if err := w.Handle(ctx, d); err != nil && ctx.Err() == nil {
						slog.Error("startflow: handle", "task", d.TaskID, "error", err)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// Outcome says what became of a delivery.
type Outcome int

// The outcomes of a delivery.
const (
	// Acknowledged: the message is deleted (the task is done, or gone).
	Acknowledged Outcome = iota
	// Rescheduled: the task's next step was queued as a new message
	// (delayed) and this one deleted, so receive counts only grow on
	// failures.
	Rescheduled
	// Retrying: the message stays, visible again after a backoff (a failed
	// step); a Lambda event source must not delete it.
	Retrying
)

// Handle runs the delivered task's steps (those due at once, in one
// delivery), then acknowledges the delivery (task done), reschedules the
// task (its next step is due later), or leaves the message for a retry
// with backoff (an infrastructure error; the task ends with ERROR after
// MaxAttempts). While steps run, the delivery's visibility is extended so
// no other worker takes it.
func (w *Worker) Handle(ctx context.Context, d acs.Delivery) error {
	_, err := w.Process(ctx, d)
	return err
}

// Process is Handle, reporting the outcome.
func (w *Worker) Process(ctx context.Context, d acs.Delivery) (Outcome, error) {
	t, err := w.Store.GetStartTask(ctx, d.TaskID)
	if errors.Is(err, acs.ErrNotFound) {
		return Acknowledged, w.Queue.Delete(ctx, d.Receipt)
	}
	if err != nil {
		return Retrying, err
	}
	if t.Status.Done() {
		return Acknowledged, w.Queue.Delete(ctx, d.Receipt)
	}
	if d.ReceiveCount > 1 && d.Step != "" && d.Step != t.Status {
		// A redelivery after progress: the worker died after completing a
		// step. Go on under a fresh message, so that the receive count
		// (which sends a message to the dead-letter queue) counts only
		// deliveries that made no progress.
		if err := w.Queue.Send(ctx, acs.Message{TaskID: t.ID, Step: t.Status}, 0); err == nil {
			return Rescheduled, w.Queue.Delete(ctx, d.Receipt)
		}
	}
	stop := w.heartbeat(ctx, d.Receipt)
	// The steps of this delivery share the sandbox found ready by the
	// first that asked (see client).
	dl := &delivery{}
	step := func(t acs.StartTask) (time.Duration, bool, error) {
		delay, done, err := w.step(ctx, dl, t)
		if err == nil && w.AfterStep != nil {
			w.AfterStep(ctx, t.Status, d)
		}
		return delay, done, err
	}
	delay, done, err := step(t)
	// Steps due at once run in this delivery (each is stored as it
	// completes), saving a queue round trip per step.
	for err == nil && !done && delay == 0 && ctx.Err() == nil {
		if t, err = w.Store.GetStartTask(ctx, d.TaskID); err != nil {
			break
		}
		if t.Status.Done() {
			done = true
			break
		}
		delay, done, err = step(t)
	}
	stop()
	if err != nil && t.SandboxID != nil {
		// The retry asks the agent server again (client, knownReady).
		w.answers.forget(*t.SandboxID)
	}
	if err != nil {
		var ue *userError
		if errors.As(err, &ue) {
			if ferr := w.fail(ctx, t.ID, ue.msg); ferr != nil {
				return Retrying, ferr
			}
			return Acknowledged, w.Queue.Delete(ctx, d.Receipt)
		}
		attempts := t.Attempts + 1
		if attempts >= w.Config.MaxAttempts {
			if ferr := w.fail(ctx, t.ID, failureDetail(t.Status, attempts, err)); ferr != nil {
				return Retrying, ferr
			}
			return Acknowledged, w.Queue.Delete(ctx, d.Receipt)
		}
		_, _ = w.Store.UpdateStartTask(ctx, t.ID, func(tk *acs.StartTask) error { tk.Attempts = attempts; return nil })
		backoff := time.Duration(1<<min(attempts, 5)) * 500 * time.Millisecond
		slog.Warn("startflow: step failed; retrying", "task", t.ID, "status", t.Status, "attempt", attempts, "error", err)
		if derr := w.Queue.Delay(ctx, d.Receipt, backoff); derr != nil {
			return Retrying, derr
		}
		return Retrying, err
	}
	if done {
		return Acknowledged, w.Queue.Delete(ctx, d.Receipt)
	}
	// The next step is due later: a new message (so the receive count of
	// the delivery measures failures only), then this one goes.
	if err := w.Queue.Send(ctx, acs.Message{TaskID: t.ID, Step: t.Status}, delay); err != nil {
		slog.Warn("startflow: reschedule by a new message failed; delaying this one", "task", t.ID, "error", err)
		return Retrying, w.Queue.Delay(ctx, d.Receipt, delay)
	}
	return Rescheduled, w.Queue.Delete(ctx, d.Receipt)
}

// failureDetail is what a task that failed its last attempt at status
// says.
func failureDetail(status acs.StartTaskStatus, attempts int, err error) string {
	return fmt.Sprintf("%s failed after %d attempts: %s", status, attempts, acs.Detail(err))
}

// heartbeat keeps a delivery invisible while its step runs.
func (w *Worker) heartbeat(ctx context.Context, receipt string) func() {
	vis := w.Config.Visibility
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(vis / 2)
		defer t.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-t.C:
				if err := w.Queue.Delay(hctx, receipt, vis); err != nil && hctx.Err() == nil {
					slog.Warn("startflow: extend visibility", "error", err)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// fail ends the task with ERROR and gives back the slot it reserved on its
// sandbox, unless its conversation record exists (deleting that releases
// it). A slot left behind would inflate conversation_count, fill the
// sandbox for grouping, and keep it from going with its last conversation.
func (w *Worker) fail(ctx context.Context, taskID, detail string) error {
	var failedAt acs.StartTaskStatus
	tk, err := w.Store.UpdateStartTask(ctx, taskID, func(tk *acs.StartTask) error {
		failedAt = ""
		if tk.Status.Done() {
			return nil
		}
		failedAt = tk.Status
		tk.Fail(detail, w.now())
		return nil
	})
	if err == nil && failedAt != "" {
		logTaskFailed(taskID, failedAt)
	}
	if err != nil || tk.Status != acs.TaskError {
		return err
	}
	releaseSlot(ctx, w.Store, tk)
	return nil
}

// releaseSlot gives back the slot tk, a start that ended with ERROR,
// reserved on its sandbox, unless its conversation record exists (deleting
// that releases it). A failure is logged: the slot stays.
func releaseSlot(ctx context.Context, st acs.Store, tk acs.StartTask) {
	if tk.SandboxID == nil {
		return
	}
	if _, err := st.GetConversation(ctx, tk.ConversationID); !errors.Is(err, acs.ErrNotFound) {
		return
	}
	_, err := st.UpdateSandbox(ctx, *tk.SandboxID, func(s *acs.Sandbox) error {
		s.Release(tk.ConversationID)
		return nil
	})
	if err != nil && !errors.Is(err, acs.ErrNotFound) {
		slog.Warn("startflow: release the failed start's slot", "task", tk.ID, "sandbox", *tk.SandboxID, "error", err)
	}
}

// Step runs the task's current step, as a delivery of its own. It
// returns when the next step is due (delay) or that the task is finished
// (done).
func (w *Worker) Step(ctx context.Context, t acs.StartTask) (delay time.Duration, done bool, err error) {
	return w.step(ctx, &delivery{}, t)
}

// step runs the task's current step in delivery dl.
func (w *Worker) step(ctx context.Context, dl *delivery, t acs.StartTask) (delay time.Duration, done bool, err error) {
	var req StartRequest
	if err := strictjson.Unmarshal(t.Request, &req); err != nil {
		return 0, false, failf("the stored start request is unreadable: %v", err)
	}
	switch t.Status {
	case acs.TaskWorking:
		delay, err := w.place(ctx, dl, t, req)
		return delay, false, err
	case acs.TaskWaitingForSandbox:
		return w.waitForSandbox(ctx, dl, t, req)
	case acs.TaskPreparingRepository:
		return w.prepareRepository(ctx, dl, t, req)
	case acs.TaskRunningSetupScript:
		return w.runSetupScript(ctx, dl, t)
	case acs.TaskSettingUpGitHooks:
		return 0, false, w.setUpGitHooks(ctx, dl, t)
	case acs.TaskSettingUpSkills:
		return 0, false, w.setUpSkills(ctx, dl, t)
	case acs.TaskStartingConversation:
		return 0, true, w.startConversation(ctx, dl, t, req)
	default:
		return 0, true, nil
	}
}

// advance stores the task's move from one status to the next, with changes
// applied. A task already in the target status is left as it is (a redelivery
// of a step that completed), so no step is recorded twice.
func (w *Worker) advance(ctx context.Context, id string, from, to acs.StartTaskStatus, change func(*acs.StartTask)) error {
	return w.advanceThrough(ctx, id, from, change, to)
}

// advanceThrough is advance through several steps in one store write: each
// of to is recorded, at the same time, the last being the task's status.
// It is for steps known to have nothing to do, so that recording them
// costs one durable write, not one each. A task already at one of them is
// left as it is.
func (w *Worker) advanceThrough(ctx context.Context, id string, from acs.StartTaskStatus, change func(*acs.StartTask), to ...acs.StartTaskStatus) error {
	return w.advanceAround(ctx, id, from, change, nil, to...)
}

// advanceAround is advanceThrough with a change applied after the steps
// are recorded too (after, when not nil: for a detail of a step of to).
func (w *Worker) advanceAround(ctx context.Context, id string, from acs.StartTaskStatus, change, after func(*acs.StartTask), to ...acs.StartTaskStatus) error {
	_, err := w.Store.UpdateStartTask(ctx, id, advanceFn(w.now, from, change, after, to...))
	return err
}

// advanceFn is advanceAround's update of the task: nothing for a task at
// one of to, ErrConflict for a task not at from.
func advanceFn(now func() time.Time, from acs.StartTaskStatus, change, after func(*acs.StartTask), to ...acs.StartTaskStatus) func(*acs.StartTask) error {
	return func(tk *acs.StartTask) error {
		switch {
		case slices.Contains(to, tk.Status):
			return nil
		case tk.Status != from:
			return fmt.Errorf("task is %s, expected %s: %w", tk.Status, from, acs.ErrConflict)
		}
		if change != nil {
			change(tk)
		}
		at := now()
		for _, st := range to {
			tk.Advance(st, at)
		}
		if after != nil {
			after(tk)
		}
		return nil
	}
}

// settings returns the owner's settings (the defaults when never saved).
func (w *Worker) settings(ctx context.Context, owner string) (acs.Settings, error) {
	return w.placer().settings(ctx, owner)
}

// placer is the start flow's placement over w's store.
func (w *Worker) placer() placer { return placer{store: w.Store} }

// place chooses the sandbox and reserves the conversation's slot on it: the
// explicit sandbox_id (no capacity check), else the owner's grouping
// strategy among their RUNNING or STARTING sandboxes with room, else a new
// sandbox whose id is the conversation id. A slot reservation is atomic and
// idempotent, so concurrent starts never overfill a sandbox and a
// redelivered step finds the slot it reserved.
//
// With a grouping strategy the choice runs under the owner's placement lock
// (acs.PlacementLock); while another start holds it, place returns the delay
// after which to try again.
func (w *Worker) place(ctx context.Context, dl *delivery, t acs.StartTask, req StartRequest) (time.Duration, error) {
	settings, err := w.settings(ctx, t.OwnerID)
	if err != nil {
		return 0, err
	}
	if !settings.SandboxGroupingStrategy.Groups() || req.SandboxID != nil {
		_, err := w.placeLocked(ctx, dl, t, req, settings, "", true)
		return 0, err
	}
	// While no other start is placing, a sandbox with room is reserved
	// without the lock (the reservation is atomic): the lock is for
	// creating a sandbox, so that concurrent starts share the one the
	// first of them creates.
	if lock, free, err := w.placementFree(ctx, t); err != nil {
		return 0, err
	} else if free {
		created, err := w.placeLocked(ctx, dl, t, req, settings, lock.Created, false)
		if created != "" && err == nil {
			// A redelivery finding the sandbox it created under the lock
			// records it, as the unlock it crashed before would have.
			if uerr := w.unlockPlacement(ctx, t, created); uerr != nil {
				slog.Warn("startflow: release the placement lock", "task", t.ID, "error", uerr)
			}
		}
		if !errors.Is(err, errNoRoom) {
			return 0, err
		}
	}
	lock, err := w.lockPlacement(ctx, t)
	if errors.Is(err, errPlacementBusy) {
		return w.Config.Sandboxes.PollInterval / 4, nil
	}
	if err != nil {
		return 0, err
	}
	created, err := w.placeLocked(ctx, dl, t, req, settings, lock.Created, true)
	if err == nil && created == "" {
		// Placed on an existing sandbox: the task has left WORKING, which
		// releases the lock (lockPlacement), and there is no new sandbox
		// to record, so the unlock's write is saved.
		return 0, nil
	}
	// Unlock even when placing failed (a retry locks again); an unlock that
	// fails leaves a lock that lapses on its own.
	if uerr := w.unlockPlacement(ctx, t, created); uerr != nil {
		slog.Warn("startflow: release the placement lock", "task", t.ID, "error", uerr)
	}
	return 0, err
}

// reserveRunning places t on sb, a RUNNING sandbox, when its agent server
// answers now (or is known to, readyWithoutAsking), so that it needs no
// wait: the slot's reservation (reserve)
// and the task's placement, through the steps with nothing to do, are one
// write (the reserved record is the one that says the start used it).
// done reports that the start is placed (err nil) or failed for good (the
// task moved on, or is gone). Otherwise err is why not: nil when the agent
// server did not answer, errStoppedRunning for a sandbox that stopped
// running meanwhile (both get the reservation alone), or the reservation's
// error (a lost race for the slot, or the sandbox gone).
func (w *Worker) reserveRunning(ctx context.Context, dl *delivery, t acs.StartTask, req StartRequest, sb acs.Sandbox, reason string, grouping bool, reserve func(*acs.Sandbox) error) (done bool, err error) {
	placed := t
	placed.OwnWorkDir = grouping
	ready, known := w.readyWithoutAsking(ctx, dl, placed, req, sb)
	if !known {
		if ready = w.probeReady(ctx, placed, req, sb); ready.err != nil {
			return false, nil
		}
	}
	advance := w.placeOnRunning(req, ready, sb.ID, reason, grouping)
	var taskErr error
	_, reserved, err := w.Store.UpdateStartTaskAndSandbox(ctx, t.ID,
		func(tk *acs.StartTask) error { taskErr = advance(tk); return taskErr },
		sb.ID, stillRunning(reserve))
	switch {
	case err == nil:
		dl.remember(reserved, ready.client)
		return true, nil
	case taskErr != nil && errors.Is(err, taskErr):
		return true, err // the task moved on: not a lost race for the slot
	case errors.Is(err, acs.ErrNotFound):
		if _, gerr := w.Store.GetStartTask(ctx, t.ID); gerr != nil {
			return true, gerr // the task is gone, not the sandbox
		}
	}
	return false, err
}

// placeOnRunning is the change that places a start on running sandbox id
// (reason; grouping: in a working directory of its own) that was found
// ready, through the steps ready lets it record at once (readyFn).
func (w *Worker) placeOnRunning(req StartRequest, ready readyProbe, id, reason string, grouping bool) func(*acs.StartTask) error {
	return w.readyFn(req, acs.TaskWorking, ready, func(tk *acs.StartTask) {
		tk.SandboxID, tk.Placement, tk.OwnWorkDir = &id, reason, grouping
	})
}

// stillRunning is reserve on a sandbox found RUNNING: one that stopped
// running since is errStoppedRunning.
func stillRunning(reserve func(*acs.Sandbox) error) func(*acs.Sandbox) error {
	return func(s *acs.Sandbox) error {
		if s.Status != acs.SandboxRunning {
			return errStoppedRunning
		}
		return reserve(s)
	}
}

// placementLockTTL bounds how long a crashed start can hold its owner's
// placement lock.
const placementLockTTL = 30 * time.Second

var errPlacementBusy = errors.New("another start of this owner is placing")

// errNoRoom: placeLocked, not allowed to create a sandbox, found none to
// place on.
var errNoRoom = errors.New("no sandbox with room")

// errStoppedRunning: the sandbox a start found answering is no longer
// RUNNING when its slot is reserved.
var errStoppedRunning = errors.New("the sandbox stopped running")

// errOnlyRead rolls back a quota update that only reads.
var errOnlyRead = errors.New("read only")

// placementFree reads the owner's placement lock and reports whether no
// other start holds it (see lockPlacement), without writing.
func (w *Worker) placementFree(ctx context.Context, t acs.StartTask) (acs.PlacementLock, bool, error) {
	var lock acs.PlacementLock
	_, err := w.Store.UpdateQuota(ctx, t.OwnerID, func(q *acs.Quota) error {
		if q.Placement != nil {
			lock = *q.Placement
		}
		return errOnlyRead
	})
	if !errors.Is(err, errOnlyRead) {
		return lock, false, fmt.Errorf("read the placement lock of %s: %w", t.OwnerID, err)
	}
	if lock.Task == "" || lock.Task == t.ID || !lock.Until.After(w.now()) {
		return lock, true, nil
	}
	done, err := w.leftWorking(ctx, lock.Task)
	return lock, done, err
}

// movedOn reports whether t's stored status is no longer the one t holds.
func (w *Worker) movedOn(ctx context.Context, t acs.StartTask) bool {
	cur, err := w.Store.GetStartTask(ctx, t.ID)
	return err == nil && cur.Status != t.Status
}

// leftWorking reports whether task id has left WORKING (placed, failed or
// gone), which frees a placement lock it holds.
func (w *Worker) leftWorking(ctx context.Context, id string) (bool, error) {
	tk, err := w.Store.GetStartTask(ctx, id)
	if errors.Is(err, acs.ErrNotFound) {
		return true, nil
	}
	return err == nil && tk.Status != acs.TaskWorking, err
}

// lockPlacement takes the owner's placement lock for t (again, for a
// redelivery of the holder); errPlacementBusy while another start holds it.
// A lock is held until its holder unlocks it, its time lapses, or its
// holder's task has left WORKING (placed, failed or gone): a start placed
// on an existing sandbox does not unlock.
func (w *Worker) lockPlacement(ctx context.Context, t acs.StartTask) (acs.PlacementLock, error) {
	var held acs.PlacementLock
	now := w.now()
	done := "" // a holder whose task is known to have left WORKING
	for {
		holder := ""
		_, err := w.Store.UpdateQuota(ctx, t.OwnerID, func(q *acs.Quota) error {
			if p := q.Placement; p != nil && p.Task != t.ID && p.Until.After(now) && p.Task != done {
				holder = p.Task
				return errPlacementBusy
			}
			held = acs.PlacementLock{Task: t.ID, Until: now.Add(placementLockTTL)}
			if q.Placement != nil {
				held.Created = q.Placement.Created
			}
			q.Placement = &held
			return nil
		})
		if errors.Is(err, errPlacementBusy) && done != holder {
			if left, _ := w.leftWorking(ctx, holder); left {
				done = holder
				continue
			}
		}
		if err != nil && !errors.Is(err, errPlacementBusy) {
			err = fmt.Errorf("lock placement for %s: %w", t.OwnerID, err)
		}
		return held, err
	}
}

// unlockPlacement releases t's placement lock, recording the sandbox it
// created (if any).
func (w *Worker) unlockPlacement(ctx context.Context, t acs.StartTask, created string) error {
	_, err := w.Store.UpdateQuota(ctx, t.OwnerID, func(q *acs.Quota) error {
		if q.Placement == nil || q.Placement.Task != t.ID {
			return nil
		}
		q.Placement.Until = time.Time{}
		if created != "" {
			q.Placement.Created = created
		}
		return nil
	})
	return err
}

// placeLocked is place's choice; it returns the id of the sandbox it
// created, if any. lastCreated is the sandbox the previous placement lock
// holder created (considered even before the owner's listing shows it).
// Without mayCreate, a start that would need a new sandbox gets errNoRoom.
func (w *Worker) placeLocked(ctx context.Context, dl *delivery, t acs.StartTask, req StartRequest, settings acs.Settings, lastCreated string, mayCreate bool) (string, error) {
	if req.SandboxID != nil {
		return "", w.placeExplicit(ctx, t, settings, *req.SandboxID)
	}
	mine, err := w.placer().sandboxes(ctx, t.OwnerID, lastCreated)
	if err != nil {
		return "", err
	}
	if created, err, ok := w.placedEarlier(ctx, t, mine, settings.SandboxGroupingStrategy.Groups()); ok {
		return created, err
	}
	d, err := w.placeOnExisting(ctx, dl, t, req, settings, mine)
	if err != nil || d.Sandbox != nil {
		return "", err
	}
	if !mayCreate {
		return "", errNoRoom
	}
	return w.placeOnNew(ctx, dl, t, req, d)
}

// chosen records t's placement on sandbox id: t waits for it.
func (w *Worker) chosen(ctx context.Context, t acs.StartTask, id, reason string, grouping bool) error {
	return w.advance(ctx, t.ID, acs.TaskWorking, acs.TaskWaitingForSandbox, func(tk *acs.StartTask) {
		tk.SandboxID, tk.Placement, tk.OwnWorkDir = &id, reason, grouping
	})
}

// placeExplicit places t on the sandbox its request names, without a
// capacity check. The runtime's view comes first: a sandbox whose agent
// server died since its record was written is ERROR, not a place to
// reserve a slot.
func (w *Worker) placeExplicit(ctx context.Context, t acs.StartTask, settings acs.Settings, id string) error {
	d, err := w.placer().explicit(ctx, settings, t.OwnerID, id, func(ctx context.Context, sb acs.Sandbox) acs.Sandbox {
		sb, _ = w.life.Refresh(ctx, sb)
		return sb
	})
	if err != nil {
		return err
	}
	if d.Refusal != "" {
		return failf("%s", d.Refusal)
	}
	if _, err := w.Store.UpdateSandbox(ctx, d.Sandbox.ID, func(s *acs.Sandbox) error {
		return s.Reserve(t.ConversationID, 0)
	}); err != nil {
		if errors.Is(err, acs.ErrConflict) {
			return failf("Sandbox %s is no longer startable: %v", d.Sandbox.ID, err)
		}
		return err
	}
	return w.chosen(ctx, t, d.Sandbox.ID, d.Reason, d.Grouping)
}

// placedEarlier finds among mine the sandbox on which t reserved its slot
// in an earlier delivery, and records the placement again. ok reports
// that there was one; created is its id when t created it.
func (w *Worker) placedEarlier(ctx context.Context, t acs.StartTask, mine []acs.Sandbox, grouping bool) (created string, err error, ok bool) {
	for _, sb := range mine {
		if !sb.HasSlot(t.ConversationID) {
			continue
		}
		if sb.CreatedByTask == t.ID {
			created = sb.ID
		}
		err := w.chosen(ctx, t, sb.ID, "the sandbox this start reserved earlier", grouping)
		if errors.Is(err, acs.ErrConflict) && w.movedOn(ctx, t) {
			// A duplicate delivery of a placement that went further
			// (through the steps with nothing to do): nothing to redo.
			err = nil
		}
		return created, err, true
	}
	return "", nil, false
}

// placeOnExisting reserves t's slot on the sandbox the owner's strategy
// chooses among mine, choosing again without a sandbox whose last slot
// another start took first. The decision returned has no sandbox when none
// was left: its reason is the new sandbox's.
func (w *Worker) placeOnExisting(ctx context.Context, dl *delivery, t acs.StartTask, req StartRequest, settings acs.Settings, mine []acs.Sandbox) (acs.Decision, error) {
	cands := mine
	for {
		d := w.placer().decide(settings, cands, acs.PlaceRequest{Owner: t.OwnerID})
		if d.Sandbox == nil {
			return d, nil
		}
		reserve := w.reserveSlot(t, d.Max)
		var err error
		if d.Sandbox.Status == acs.SandboxRunning {
			var done bool
			if done, err = w.reserveRunning(ctx, dl, t, req, *d.Sandbox, d.Reason, d.Grouping, reserve); done {
				return d, err
			}
		}
		if err == nil || errors.Is(err, errStoppedRunning) {
			if _, err = w.Store.UpdateSandbox(ctx, d.Sandbox.ID, reserve); err == nil {
				return d, w.chosen(ctx, t, d.Sandbox.ID, d.Reason, d.Grouping)
			}
		}
		if !errors.Is(err, acs.ErrCapacity) && !errors.Is(err, acs.ErrConflict) && !errors.Is(err, acs.ErrNotFound) {
			return d, err
		}
		// Lost a race for the last slot: choose again without it.
		rest := cands[:0:0]
		for _, c := range cands {
			if c.ID != d.Sandbox.ID {
				rest = append(rest, c)
			}
		}
		cands = rest
	}
}

// placeOnNew creates a sandbox for t, named after its conversation, as d
// decided. A warm agent server answers at once: the start then skips the
// waiting step.
func (w *Worker) placeOnNew(ctx context.Context, dl *delivery, t acs.StartTask, req StartRequest, d acs.Decision) (string, error) {
	reason := d.Reason
	sb := acs.Sandbox{ID: t.ConversationID, OwnerID: t.OwnerID, Slots: []string{t.ConversationID}, CreatedByTask: t.ID}
	made, err := w.life.Create(ctx, sb)
	if err != nil {
		switch {
		case errors.Is(err, acs.ErrCapacity):
			return "", failf("%s", acs.ErrorMessage(err))
		case errors.Is(err, acs.ErrConflict):
			return "", failf("sandbox id %s is already in use", sb.ID)
		case errors.Is(err, acs.ErrInvalid):
			return "", failf("no usable sandbox spec is configured: %v", err)
		}
		return "", err
	}
	if made.WarmPool != "" {
		reason += " (warm pool " + made.WarmPool + ")"
	}
	if made.Status == acs.SandboxRunning {
		placed := t
		placed.OwnWorkDir = d.Grouping
		if ready := w.probeReady(ctx, placed, req, made); ready.err == nil {
			return sb.ID, w.advanceReady(ctx, dl, t, req, acs.TaskWorking, ready, func(tk *acs.StartTask) {
				tk.SandboxID, tk.Placement, tk.OwnWorkDir = &sb.ID, reason, d.Grouping
			})
		}
	}
	return sb.ID, w.chosen(ctx, t, sb.ID, reason, d.Grouping)
}

// reserveSlot is the reservation of t's slot on a RUNNING or STARTING
// sandbox that holds at most max conversations, which records the start as
// activity (as Touch does; this write saves the start its own).
func (w *Worker) reserveSlot(t acs.StartTask, max int) func(*acs.Sandbox) error {
	return func(s *acs.Sandbox) error {
		if s.Status != acs.SandboxRunning && s.Status != acs.SandboxStarting {
			return fmt.Errorf("sandbox %s is %s: %w", s.ID, s.Status, acs.ErrConflict)
		}
		if err := s.Reserve(t.ConversationID, max); err != nil {
			return err
		}
		s.LastUsedAt, s.LastActivityAt = w.now(), w.now()
		return nil
	}
}

// waitForSandbox resumes a paused sandbox and waits until it is RUNNING and
// its agent server answers /alive.
func (w *Worker) waitForSandbox(ctx context.Context, dl *delivery, t acs.StartTask, req StartRequest) (time.Duration, bool, error) {
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
	client  *agentclient.Client
	prepare bool
	skills  string
	err     error
}

// probeReady asks whether sb's agent server answers now, without
// waiting (Lifecycle.AwaitReady). The request that shows it answers is
// the first request t needs (firstRequest): with nothing to prepare, the
// skills' loading, else an /alive probe. Whether it can run the browser
// tools is asked meanwhile (browserProbe). A ready sandbox then gets the
// steps it owes: its tombstones buried, its queued messages flushed. err
// is the readiness's, or the skills' loading's.
func (w *Worker) probeReady(ctx context.Context, t acs.StartTask, req StartRequest, sb acs.Sandbox) readyProbe {
	var r readyProbe
	var first firstRequest
	browser := w.browserProbe(ctx, req)
	ready, err := w.life.AwaitReady(ctx, sb, 0, func(actx context.Context, sb acs.Sandbox, c *agentclient.Client) bool {
		browser.start(sb.ID, c)
		first = w.firstRequest(actx, t, req, sb, c)
		return first.answered
	})
	r.sb, r.client, r.err = ready.Sandbox, ready.Client, err
	r.prepare, r.skills = first.prepare, first.skills
	if err == nil {
		w.life.BuryTombstones(ctx, ready.Sandbox, ready.Client)
		r.sb = w.life.FlushQueued(ctx, ready)
		r.err = first.skillsErr
	}
	if r.err == nil {
		w.answers.note(r.sb.ID, r.client)
	}
	browser.wait()
	return r
}

// firstRequest is the answer to the first request a start placed on a
// sandbox needs of its agent server.
type firstRequest struct {
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
func (w *Worker) firstRequest(ctx context.Context, t acs.StartTask, req StartRequest, sb acs.Sandbox, c *agentclient.Client) firstRequest {
	var f firstRequest
	if f.prepare = !nothingToPrepare(sb, t, req); f.prepare {
		f.answered = c.Alive(ctx) == nil
		return f
	}
	placed := t
	emptyWorkDir(sb, req)(&placed)
	f.skills, f.skillsErr = loadSkills(ctx, c, placed.ProjectDir)
	var he *agentclient.HTTPError
	f.answered = f.skillsErr == nil || errors.As(f.skillsErr, &he)
	return f
}

// browserAsk is a question to an agent server whether it can run the
// browser tools, asked beside the readiness probe and remembered for
// startConversation (browserUsable).
type browserAsk struct {
	ctx  context.Context
	w    *Worker
	off  bool
	once sync.Once
	done sync.WaitGroup
}

// browserProbe returns the question for a start of req: none for a plan
// agent or when the browser tools are off.
func (w *Worker) browserProbe(ctx context.Context, req StartRequest) *browserAsk {
	return &browserAsk{ctx: ctx, w: w, off: req.AgentType == "plan" || !w.Config.BrowserTools}
}

// start asks sandboxID's agent server, once, in the background.
func (b *browserAsk) start(sandboxID string, c *agentclient.Client) {
	if b.off {
		return
	}
	b.once.Do(func() { b.done.Go(func() { b.w.browserUsable(b.ctx, sandboxID, c) }) })
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
func (w *Worker) advanceReady(ctx context.Context, dl *delivery, t acs.StartTask, req StartRequest, from acs.StartTaskStatus, ready readyProbe, change func(*acs.StartTask)) error {
	dl.remember(ready.sb, ready.client)
	_, err := w.Store.UpdateStartTask(ctx, t.ID, w.readyFn(req, from, ready, change))
	return err
}

// readyFn is advanceReady's update of the task.
func (w *Worker) readyFn(req StartRequest, from acs.StartTaskStatus, ready readyProbe, change func(*acs.StartTask)) func(*acs.StartTask) error {
	url := ready.client.BaseURL
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
	client *agentclient.Client
	// skills is the task's skills' loading a placement that did not wait
	// for it started (readyWithoutAsking).
	skills *skillsLoad
}

// remember keeps sb and its client as ready for the rest of the delivery.
func (dl *delivery) remember(sb acs.Sandbox, c *agentclient.Client) {
	if dl != nil {
		dl.sb, dl.client = sb, c
	}
}

// ready returns the sandbox id and its client when a step of the delivery
// found it ready.
func (dl *delivery) ready(id string) (acs.Sandbox, *agentclient.Client, bool) {
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
func (w *Worker) client(ctx context.Context, dl *delivery, t acs.StartTask) (acs.Sandbox, *agentclient.Client, error) {
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

func mustNorm(id string) string {
	h, err := acs.NormalizeID(id)
	if err != nil {
		return id
	}
	return h
}

// ConfigFrom is the start-flow configuration of the shared part of a
// loaded configuration tree (config.Load), with the given sandbox specs:
// every field comes from c, none is defaulted here. The LLM's num_retries
// is as many retries as fit in c.LLMRetryTotal.
func ConfigFrom(c config.Common, specs []acs.SandboxSpec) Config {
	l := llmconfig.Default()
	l.Model = c.LLMModel
	l.NumRetries = l.RetriesWithin(c.LLMRetryTotal)
	if c.LLMBaseURL != "" {
		base := c.LLMBaseURL
		l.BaseURL = &base
	}
	if c.LLMAPIKey != "" {
		key := c.LLMAPIKey
		l.APIKey = &key
	}
	return Config{
		Sandboxes:      sandboxes.ConfigFrom(c, specs),
		LLM:            l,
		GitHost:        c.GitHost,
		StartupTimeout: c.SandboxStartupTimeout,
		CloneTimeout:   c.CloneTimeout,
		SetupTimeout:   c.SetupTimeout,
		Visibility:     c.Visibility,
		MaxAttempts:    c.MaxAttempts,
		Tools:          append([]string(nil), c.Tools...),
		BrowserTools:   c.BrowserTools,
	}
}
