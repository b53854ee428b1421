package startflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

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
func (w *Worker) place(ctx context.Context, dl *delivery, t acs.StartTask, req v1wire.StartRequest) (time.Duration, error) {
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
func (w *Worker) reserveRunning(ctx context.Context, dl *delivery, t acs.StartTask, req v1wire.StartRequest, sb acs.Sandbox, reason string, grouping bool, reserve func(*acs.Sandbox) error) (done bool, err error) {
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
func (w *Worker) placeOnRunning(req v1wire.StartRequest, ready readyProbe, id, reason string, grouping bool) func(*acs.StartTask) error {
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
func (w *Worker) placeLocked(ctx context.Context, dl *delivery, t acs.StartTask, req v1wire.StartRequest, settings acs.Settings, lastCreated string, mayCreate bool) (string, error) {
	if req.SandboxID != nil {
		return "", w.placeExplicit(ctx, t, settings, *req.SandboxID)
	}
	mine, err := w.placer().sandboxes(ctx, t.OwnerID, lastCreated)
	if err != nil {
		return "", err
	}
	if created, ok, err := w.placedEarlier(ctx, t, mine, settings.SandboxGroupingStrategy.Groups()); ok {
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
func (w *Worker) placedEarlier(ctx context.Context, t acs.StartTask, mine []acs.Sandbox, grouping bool) (created string, ok bool, err error) {
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
		return created, true, err
	}
	return "", false, nil
}

// placeOnExisting reserves t's slot on the sandbox the owner's strategy
// chooses among mine, choosing again without a sandbox whose last slot
// another start took first. The decision returned has no sandbox when none
// was left: its reason is the new sandbox's.
func (w *Worker) placeOnExisting(ctx context.Context, dl *delivery, t acs.StartTask, req v1wire.StartRequest, settings acs.Settings, mine []acs.Sandbox) (acs.Decision, error) {
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
func (w *Worker) placeOnNew(ctx context.Context, dl *delivery, t acs.StartTask, req v1wire.StartRequest, d acs.Decision) (string, error) {
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
