package storetest

import (
	"errors"
	"testing"

	"github.com/acs-project/acs/shared/acs"
)

// RunStartTaskWatcherTests runs the acs.StartTaskWatcher suite on a store
// that implements it (on a whole store: the writes that span a task and
// another record close its watch too).
func RunStartTaskWatcherTests(t *testing.T, h Harness[acs.Store]) {
	runTests(t, h, startTaskWatcherTests)
}

var startTaskWatcherTests = []Test[acs.Store]{
	{"EveryWriteOfTheTaskClosesItsWatch", testWatchClosedByEachWrite},
	{"OnlyAWriteAfterTheWatchClosesIt", testWatchIgnoresEarlierWrites},
	{"FailedAndOtherTasksWritesCloseNothing", testWatchIgnoresOtherWrites},
	{"EveryWatcherIsWokenAndAStoppedOneReleased", testWatchWatchers},
}

func watcher(t *testing.T, s acs.Store) acs.StartTaskWatcher {
	t.Helper()
	w, ok := s.(acs.StartTaskWatcher)
	if !ok {
		t.Fatalf("%T does not implement acs.StartTaskWatcher", s)
	}
	return w
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func testWatchClosedByEachWrite(t *testing.T, s acs.Store) {
	w := watcher(t, s)
	must(t, s.CreateStartTask(ctx, task("t1", "u1", 1)))
	must(t, s.CreateSandbox(ctx, sandbox("s1", "u1", 1, "h1")))
	noop := func(*acs.StartTask) error { return nil }
	for _, write := range []struct {
		name string
		do   func() error
	}{
		{"UpdateStartTask", func() error { _, err := s.UpdateStartTask(ctx, "t1", noop); return err }},
		{"UpdateStartTaskAndSandbox", func() error {
			_, _, err := s.UpdateStartTaskAndSandbox(ctx, "t1", placed("s1"), "s1", func(*acs.Sandbox) error { return nil })
			return err
		}},
		{"UpdateStartTaskCreatingConversation", func() error {
			_, err := s.UpdateStartTaskCreatingConversation(ctx, "t1", noop, conversation("c-t1", "u1", "s1", 2, ""))
			return err
		}},
		{"DeleteStartTask", func() error { return s.DeleteStartTask(ctx, "t1") }},
	} {
		changed, stop := w.WatchStartTask("t1")
		if closed(changed) {
			t.Fatalf("before %s: the watch is closed already", write.name)
		}
		must(t, write.do())
		if !closed(changed) {
			t.Fatalf("%s committed, the watch is still open", write.name)
		}
		stop()
	}
}

func testWatchIgnoresEarlierWrites(t *testing.T, s acs.Store) {
	w := watcher(t, s)
	must(t, s.CreateStartTask(ctx, task("t1", "u1", 1)))
	first, stopFirst := w.WatchStartTask("t1")
	defer stopFirst()
	_, err := s.UpdateStartTask(ctx, "t1", func(tk *acs.StartTask) error { tk.Advance(acs.TaskWaitingForSandbox, at(2)); return nil })
	must(t, err)
	if !closed(first) {
		t.Fatal("the update did not close the watch made before it")
	}
	// A watch made after that write waits for the next one.
	next, stop := w.WatchStartTask("t1")
	defer stop()
	if closed(next) {
		t.Fatal("a watch made after the write is closed by it")
	}
	_, err = s.UpdateStartTask(ctx, "t1", func(tk *acs.StartTask) error { tk.Advance(acs.TaskStartingConversation, at(3)); return nil })
	must(t, err)
	if !closed(next) {
		t.Fatal("the next update did not close the new watch")
	}
}

func testWatchIgnoresOtherWrites(t *testing.T, s acs.Store) {
	w := watcher(t, s)
	must(t, s.CreateStartTask(ctx, task("t1", "u1", 1)))
	must(t, s.CreateStartTask(ctx, task("t2", "u1", 2)))
	changed, stop := w.WatchStartTask("t1")
	defer stop()
	errRefused := errors.New("refused")
	_, err := s.UpdateStartTask(ctx, "t1", func(*acs.StartTask) error { return errRefused })
	wantErr(t, err, errRefused)
	_, err = s.UpdateStartTask(ctx, "t2", func(*acs.StartTask) error { return nil })
	must(t, err)
	must(t, s.CreateStartTask(ctx, task("t3", "u1", 3)))
	_, err = s.UpdateStartTask(ctx, "nope", func(*acs.StartTask) error { return nil })
	wantErr(t, err, acs.ErrNotFound)
	// A write spanning a sandbox that fails on the sandbox rolls back the
	// task's change too.
	_, _, err = s.UpdateStartTaskAndSandbox(ctx, "t1", placed("s1"), "missing", func(*acs.Sandbox) error { return nil })
	wantErr(t, err, acs.ErrNotFound)
	if closed(changed) {
		t.Fatal("the watch of t1 was closed by a failed write or another task's")
	}
}

func testWatchWatchers(t *testing.T, s acs.Store) {
	w := watcher(t, s)
	must(t, s.CreateStartTask(ctx, task("t1", "u1", 1)))
	a, stopA := w.WatchStartTask("t1")
	b, stopB := w.WatchStartTask("t1")
	stopA()
	stopA() // stopping twice is harmless
	c, stopC := w.WatchStartTask("t1")
	defer stopC()
	_, err := s.UpdateStartTask(ctx, "t1", func(*acs.StartTask) error { return nil })
	must(t, err)
	if !closed(b) || !closed(c) {
		t.Fatalf("watchers still waiting after the write: b %v, c %v", !closed(b), !closed(c))
	}
	stopB()
	_ = a // a stopped watch may or may not have been closed
}
