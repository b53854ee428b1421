package localqueue_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/internal/diskfull/diskfulltest"
	"github.com/acs-project/acs/internal/testwait"
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

// TestEmptyReceiveWritesNothing: a receive that finds no visible message
// (the workers a send wakes but another claims) leaves the queue file as
// it was, so it costs no durable write; a receive that claims one writes.
func TestEmptyReceiveWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	q, err := localqueue.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()
	if err := q.Send(ctx, acs.Message{TaskID: "later"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	before := fileMeta(t, path)
	for i := 0; i < 3; i++ {
		if d, err := q.Receive(ctx, 1, 0, time.Minute); err != nil || len(d) != 0 {
			t.Fatalf("receive from a queue with nothing visible: %+v %v", d, err)
		}
	}
	if after := fileMeta(t, path); after != before {
		t.Fatalf("empty receives wrote the queue file (meta %x → %x)", before, after)
	}
	if err := q.Send(ctx, acs.Message{TaskID: "now"}, 0); err != nil {
		t.Fatal(err)
	}
	sent := fileMeta(t, path)
	if d, err := q.Receive(ctx, 1, 0, time.Minute); err != nil || len(d) != 1 || d[0].TaskID != "now" {
		t.Fatalf("receive: %+v %v", d, err)
	}
	if fileMeta(t, path) == sent {
		t.Fatal("a claim did not write the queue file")
	}
}

// fileMeta is the file's two bbolt meta pages (each commit rewrites one).
func fileMeta(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	return string(raw[:2*page])
}

// TestHandOffIsAReceive: a message sent while a receiver waits is handed
// to it, stored as received by it in the send's own write: its receipt
// works, and a restart before it is deleted redelivers it once its
// visibility lapses, as the second receive.
func TestHandOffIsAReceive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	q, err := localqueue.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got := make(chan []acs.Delivery, 1)
	go func() {
		d, err := q.Receive(ctx, 1, 10*time.Second, 300*time.Millisecond)
		if err != nil {
			t.Error(err)
		}
		got <- d
	}()
	// Sent until the receiver has it (it may not be waiting yet: then the
	// first one is received the ordinary way, which is also right).
	if err := q.Send(ctx, acs.Message{TaskID: "handed"}, 0); err != nil {
		t.Fatal(err)
	}
	d := <-got
	if len(d) != 1 || d[0].TaskID != "handed" || d[0].ReceiveCount != 1 {
		t.Fatalf("the waiting receiver got %+v", d)
	}
	if err := q.Delay(ctx, d[0].Receipt, 300*time.Millisecond); err != nil {
		t.Fatalf("the handed receipt: %v", err)
	}
	if again, err := q.Receive(ctx, 1, 0, time.Minute); err != nil || len(again) != 0 {
		t.Fatalf("a handed message was visible to another receiver: %+v %v", again, err)
	}
	q.Close()
	q, err = localqueue.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	again, err := q.Receive(ctx, 1, 5*time.Second, time.Minute)
	if err != nil || len(again) != 1 || again[0].TaskID != "handed" || again[0].ReceiveCount != 2 {
		t.Fatalf("after a restart: %+v %v", again, err)
	}
	if err := q.Delete(ctx, again[0].Receipt); err != nil {
		t.Fatal(err)
	}
}

// snapshot opens a copy of the queue file at path as it is on disk now
// (what a crash of the process holding it would leave).
func snapshot(t *testing.T, path string) *localqueue.Queue {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(cp, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	q, err := localqueue.Open(cp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// An acknowledgement (Delete) takes effect at once and is written with the
// queue's next write, or on its own soon after when none comes, or by
// Close; a crash before it is written delivers the message again.
func TestAcknowledgementsAreWrittenLazily(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "queue.db")
	q, err := localqueue.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	receiveOne := func(q *localqueue.Queue, vis time.Duration) acs.Delivery {
		t.Helper()
		ds, err := q.Receive(ctx, 1, 5*time.Second, vis)
		if err != nil || len(ds) != 1 {
			t.Fatalf("receive: %+v %v", ds, err)
		}
		return ds[0]
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(q.Send(ctx, acs.Message{TaskID: "a"}, 0))
	must(q.Delete(ctx, receiveOne(q, 50*time.Millisecond).Receipt))
	if n := q.Len(); n != 0 {
		t.Fatalf("Len after the delete: %d", n)
	}
	if ds, err := q.Receive(ctx, 1, 100*time.Millisecond, time.Minute); err != nil || len(ds) != 0 {
		t.Fatalf("a deleted message was delivered again: %+v %v", ds, err)
	}

	// Not written yet: after a crash now, the message comes back.
	crashed := snapshot(t, path)
	if d := receiveOne(crashed, time.Minute); d.TaskID != "a" || d.ReceiveCount != 2 {
		t.Fatalf("after a crash before the acknowledgement was written: %+v", d)
	}

	// The next write carries it.
	must(q.Send(ctx, acs.Message{TaskID: "b"}, 0))
	if n := snapshot(t, path).Len(); n != 1 {
		t.Fatalf("on disk after the next send: %d messages, want 1 (b)", n)
	}

	// With no other write, it is written on its own.
	must(q.Delete(ctx, receiveOne(q, time.Minute).Receipt))
	if !testwait.Until(5*time.Second, func() bool { return snapshot(t, path).Len() == 0 }) {
		t.Fatal("an acknowledgement with no write after it was never written")
	}

	// Close writes what is left.
	must(q.Send(ctx, acs.Message{TaskID: "c"}, 0))
	must(q.Delete(ctx, receiveOne(q, time.Minute).Receipt))
	must(q.Close())
	if n := snapshot(t, path).Len(); n != 0 {
		t.Fatalf("on disk after Close: %d messages", n)
	}
	if err := q.Delete(ctx, "x:1"); err == nil {
		t.Fatal("a delete on a closed queue succeeded")
	}
}
