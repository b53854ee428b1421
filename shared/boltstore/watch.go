package boltstore

import (
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/shared/acs"
)

var _ acs.StartTaskWatcher = (*Store)(nil)

// taskWatches are the start tasks being watched (WatchStartTask): one
// channel per task, shared by its watchers, closed and forgotten when a
// write of the task commits.
type taskWatches struct {
	mu sync.Mutex
	m  map[string]*taskWatch
}

type taskWatch struct {
	changed chan struct{}
	n       int // watchers that have not stopped
}

// WatchStartTask implements acs.StartTaskWatcher: every write of a start
// task (UpdateStartTask, UpdateStartTaskAndSandbox,
// UpdateStartTaskCreatingConversation, DeleteStartTask) closes its watch
// once its transaction has committed.
func (s *Store) WatchStartTask(id string) (<-chan struct{}, func()) {
	w := &s.watches
	w.mu.Lock()
	defer w.mu.Unlock()
	tw := w.m[id]
	if tw == nil {
		if w.m == nil {
			w.m = map[string]*taskWatch{}
		}
		tw = &taskWatch{changed: make(chan struct{})}
		w.m[id] = tw
	}
	tw.n++
	var once sync.Once
	return tw.changed, func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			tw.n--
			if tw.n == 0 && w.m[id] == tw {
				delete(w.m, id)
			}
		})
	}
}

// taskWritten closes the watch of task id when tx commits (a rolled-back
// tx closes nothing).
func (s *Store) taskWritten(tx *bolt.Tx, id string) {
	tx.OnCommit(func() {
		w := &s.watches
		w.mu.Lock()
		defer w.mu.Unlock()
		if tw := w.m[id]; tw != nil {
			close(tw.changed)
			delete(w.m, id)
		}
	})
}
