package startflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/sandboxes"
)

// Worker advances start tasks. Make one with NewWorker, which defaults
// Config and builds the sandbox lifecycle over Store and Runtime once:
// those two and Config.Sandboxes do not change after.
type Worker struct {
	Store   Store
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
func NewWorker(store Store, queue acs.Queue, rt acs.Runtime, sealer acs.Sealer, cfg Config) *Worker {
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
	t, delay, done, err := w.runSteps(ctx, d, t)
	stop()
	if err != nil {
		return w.stepFailed(ctx, d, t, err)
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

// runSteps runs t's step and the steps due at once after it, in delivery
// d: each is stored as it completes, which saves a queue round trip per
// step. The steps share the sandbox found ready by the first that asked
// (see client). It returns the task as last read with when its next step
// is due, that it is finished, or the failed step's error.
func (w *Worker) runSteps(ctx context.Context, d acs.Delivery, t acs.StartTask) (_ acs.StartTask, delay time.Duration, done bool, err error) {
	dl := &delivery{}
	step := func(t acs.StartTask) (time.Duration, bool, error) {
		delay, done, err := w.step(ctx, dl, t)
		if err == nil && w.AfterStep != nil {
			w.AfterStep(ctx, t.Status, d)
		}
		return delay, done, err
	}
	delay, done, err = step(t)
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
	return t, delay, done, err
}

// stepFailed ends delivery d of t after its step failed with err: a user
// error ends the task at once; another is retried with backoff, and ends
// the task after MaxAttempts. The retry asks the agent server again
// (client, knownReady).
func (w *Worker) stepFailed(ctx context.Context, d acs.Delivery, t acs.StartTask, err error) (Outcome, error) {
	if t.SandboxID != nil {
		w.answers.forget(*t.SandboxID)
	}
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
func releaseSlot(ctx context.Context, st interface {
	acs.ConversationStore
	acs.SandboxStore
}, tk acs.StartTask) {
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
	req, err := dl.request(t)
	if err != nil {
		return 0, false, err
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

func mustNorm(id string) string {
	h, err := acs.NormalizeID(id)
	if err != nil {
		return id
	}
	return h
}
