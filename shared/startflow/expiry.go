package startflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// ExpireStale ends with ERROR every unfinished start task that has not
// advanced for olderThan (its messages were lost, or its worker kept
// dying), with a detail naming the step it was stuck in, and gives back
// the slot it reserved (as a failed start does). A task that
// advances while this runs is left alone. It returns the ids it ended.
func (w *Worker) ExpireStale(ctx context.Context, olderThan time.Duration) ([]string, error) {
	var ended []string
	bound := w.now().Add(-olderThan)
	for {
		stale, err := w.Store.ListUnfinishedStartTasks(ctx, bound, 100)
		if err != nil {
			return ended, fmt.Errorf("list stale start tasks: %w", err)
		}
		n := 0
		for _, t := range stale {
			detail := fmt.Sprintf("the start did not advance for %s at %s; it was given up (start the conversation again)", olderThan, t.Status)
			ok, err := w.failIfUnchanged(ctx, t, detail)
			if err != nil {
				return ended, err
			}
			if ok {
				ended = append(ended, t.ID)
				n++
				slog.Warn("startflow: expired a stale start task", "task", t.ID, "status", t.Status, "updated_at", t.UpdatedAt)
			}
		}
		if len(stale) < 100 || n == 0 {
			return ended, nil
		}
	}
}

// failIfUnchanged ends t with ERROR unless it finished or advanced since it
// was read.
func (w *Worker) failIfUnchanged(ctx context.Context, t acs.StartTask, detail string) (bool, error) {
	changed := false
	tk, err := w.Store.UpdateStartTask(ctx, t.ID, func(tk *acs.StartTask) error {
		if tk.Status.Done() || !tk.UpdatedAt.Equal(t.UpdatedAt) || tk.Status != t.Status {
			changed = true
			return nil
		}
		tk.Fail(detail, w.now())
		return nil
	})
	if errors.Is(err, acs.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("expire start task %s: %w", t.ID, err)
	}
	if !changed {
		logTaskFailed(t.ID, t.Status)
		releaseSlot(ctx, w.Store, tk)
	}
	return !changed, nil
}

// DeadLetters is the dead-letter queue of the start-task queue: messages
// whose deliveries failed too often.
type DeadLetters interface {
	// ReceiveDead takes up to max dead messages, waiting up to wait.
	ReceiveDead(ctx context.Context, max int, wait time.Duration) ([]acs.Delivery, error)
	// DeleteDead removes a dead message.
	DeleteDead(ctx context.Context, receipt string) error
}

// DrainDeadLetters ends with ERROR the task of every dead-lettered message
// (unless it already finished), with a detail naming the step that kept
// failing, then deletes the message. Unreadable messages are deleted. It
// returns the ids of the tasks it ended.
func (w *Worker) DrainDeadLetters(ctx context.Context, dl DeadLetters) ([]string, error) {
	var ended []string
	for {
		ds, err := dl.ReceiveDead(ctx, 10, 0)
		if err != nil {
			return ended, fmt.Errorf("receive dead letters: %w", err)
		}
		if len(ds) == 0 {
			return ended, nil
		}
		for _, d := range ds {
			if d.TaskID != "" {
				t, err := w.Store.GetStartTask(ctx, d.TaskID)
				switch {
				case errors.Is(err, acs.ErrNotFound):
				case err != nil:
					return ended, err
				case !t.Status.Done():
					detail := fmt.Sprintf("the start failed repeatedly at %s (after %d deliveries) and was given up (start the conversation again)", t.Status, d.ReceiveCount)
					if err := w.fail(ctx, t.ID, detail); err != nil {
						return ended, err
					}
					ended = append(ended, t.ID)
					slog.Warn("startflow: a dead-lettered start task ended", "task", t.ID, "status", t.Status, "deliveries", d.ReceiveCount)
				}
			}
			if err := dl.DeleteDead(ctx, d.Receipt); err != nil {
				return ended, fmt.Errorf("delete dead letter: %w", err)
			}
		}
	}
}
