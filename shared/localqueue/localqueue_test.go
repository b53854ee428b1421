package localqueue_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/internal/diskfull/diskfulltest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/localqueue"
	"github.com/acs-project/acs/shared/queuetest"
)

func TestConformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) acs.Queue {
		q, err := localqueue.Open(filepath.Join(t.TempDir(), "queue.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close() })
		return q
	})
}

// Messages survive a restart of the process that holds the queue.
func TestSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	q, err := localqueue.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Send(context.Background(), acs.Message{TaskID: "kept"}, 0); err != nil {
		t.Fatal(err)
	}
	q.Close()
	q, err = localqueue.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	d, err := q.Receive(context.Background(), 1, time.Second, time.Second)
	if err != nil || len(d) != 1 || d[0].TaskID != "kept" {
		t.Fatalf("after reopen: %+v %v", d, err)
	}
}

// TestFullDiskIsStorageFull: on a full disk, a Send that needs space fails
// with acs.ErrStorageFull (HTTP 507), not an opaque error; every message
// acknowledged before is kept, and sending works again once space is freed.
func TestFullDiskIsStorageFull(t *testing.T) {
	dir := diskfulltest.Dir(t, 1<<20)
	q, err := localqueue.Open(filepath.Join(dir, "queue.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()
	free := diskfulltest.Fill(t, dir)
	sent := 0
	for ; sent < 100_000; sent++ {
		if err = q.Send(ctx, acs.Message{TaskID: fmt.Sprintf("task-%06d", sent)}, 0); err != nil {
			break
		}
	}
	if !errors.Is(err, acs.ErrStorageFull) {
		t.Fatalf("send %d on a full disk: %v, want ErrStorageFull", sent, err)
	}
	free()
	if err := q.Send(ctx, acs.Message{TaskID: "after"}, 0); err != nil {
		t.Fatalf("send after freeing space: %v", err)
	}
	got := map[string]bool{}
	for len(got) < sent+1 {
		ds, err := q.Receive(ctx, 10, 0, time.Minute)
		if err != nil || len(ds) == 0 {
			t.Fatalf("received %d of %d: %v", len(got), sent+1, err)
		}
		for _, d := range ds {
			got[d.Message.TaskID] = true
		}
	}
	if !got["after"] || !got["task-000000"] || !got[fmt.Sprintf("task-%06d", sent-1)] {
		t.Fatalf("messages lost: %d received", len(got))
	}
}

// TestReadsMessagesWrittenEarlier: a queue file holding a message as the
// earlier versions wrote it ({"m": {"task_id", "step"}, "v", "c", "s"})
// still delivers it.
func TestReadsMessagesWrittenEarlier(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("messages"))
		if err != nil {
			return err
		}
		return b.Put([]byte("0123456789abcdef0123456789abcdef"),
			[]byte(`{"m":{"task_id":"written-earlier","step":"WAITING_FOR_SANDBOX"},"v":1,"c":2,"r":"0123456789abcdef0123456789abcdef:2","s":1}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	q, err := localqueue.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	d, err := q.Receive(context.Background(), 10, time.Second, time.Minute)
	if err != nil || len(d) != 1 {
		t.Fatalf("received %+v, %v", d, err)
	}
	want := acs.Message{TaskID: "written-earlier", Step: acs.TaskWaitingForSandbox}
	if d[0].Message != want || d[0].ReceiveCount != 3 {
		t.Fatalf("delivery %+v, want %+v received a third time", d[0], want)
	}
	if err := q.Delete(context.Background(), d[0].Receipt); err != nil {
		t.Fatal(err)
	}
}
