package localqueue_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

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
