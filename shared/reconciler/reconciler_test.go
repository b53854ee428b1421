package reconciler_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/reconciler"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/startflow"
)

// sandboxListFails is a store whose sandbox listing fails (a fault a real
// store does not produce on demand).
type sandboxListFails struct{ acs.Store }

var errListing = errors.New("listing failed")

func (sandboxListFails) ListAllSandboxes(context.Context, acs.ListOptions) (acs.Page[acs.Sandbox], error) {
	return acs.Page[acs.Sandbox]{}, errListing
}

// A pass runs every part even when one fails, and reports that failure.
func TestPassRunsEveryPart(t *testing.T) {
	ctx := context.Background()
	bolt, err := boltstore.Open(filepath.Join(t.TempDir(), "acs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	store := sandboxListFails{bolt}
	old := time.Now().UTC().Add(-time.Hour)
	stale := acs.StartTask{ID: acs.NewID(), OwnerID: "alice", Status: acs.TaskWaitingForSandbox, ConversationID: acs.NewID(),
		CreatedAt: old, UpdatedAt: old}
	if err := store.CreateStartTask(ctx, stale); err != nil {
		t.Fatal(err)
	}
	pass := reconciler.Pass{
		Lifecycle: &sandboxes.Lifecycle{Store: store, Config: sandboxes.Config{}.Defaults()},
		Worker:    startflow.NewWorker(store, nil, nil, nil, startflow.Config{}),
		TaskTTL:   time.Minute,
	}
	rep, err := pass.Run(ctx)
	if !errors.Is(err, errListing) {
		t.Fatalf("the failed part's error is not reported: %v", err)
	}
	if !slices.Equal(rep.ExpiredTasks, []string{stale.ID}) {
		t.Fatalf("expired %v, want the stale task after the failed part", rep.ExpiredTasks)
	}
	got, err := store.GetStartTask(ctx, stale.ID)
	if err != nil || got.Status != acs.TaskError {
		t.Fatalf("the stale task: %s %v", got.Status, err)
	}
}
