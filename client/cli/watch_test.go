package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
)

// TestWatcherIgnoresStaleStatus: a status older than the newest one seen
// (a connection's first snapshot, taken before events the agent's log then
// showed) is neither printed nor applied, and a live copy of a logged
// status applies it.
func TestWatcherIgnoresStaleStatus(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	// state is a ConversationStateUpdateEvent of key at t0+at seconds.
	state := func(id string, at time.Duration, key string, value any) events.Event {
		raw, _ := json.Marshal(value)
		return &events.ConversationStateUpdateEvent{Base: events.Base{ID: id, Timestamp: events.At(t0.Add(at * time.Second)), Source: "environment"},
			Key: key, Value: raw}
	}
	status := func(id string, at time.Duration, st string) events.Event {
		return state(id, at, "execution_status", st)
	}
	snapshot := func(id string, at time.Duration, st string) events.Event {
		return state(id, at, "full_state", map[string]string{"execution_status": st})
	}
	for _, tc := range []struct {
		name   string
		emit   []events.Event
		live   []bool
		want   string
		status string
	}{
		{"a snapshot older than the logged finish",
			[]events.Event{status("s1", 1, "running"), status("s2", 3, "finished"), snapshot("f1", 2, "running"), status("s2", 3, "finished")},
			[]bool{false, false, true, true},
			"— running\n— finished\n", "finished"},
		{"a snapshot newer than the log",
			[]events.Event{status("s1", 1, "running"), status("s2", 3, "finished"), snapshot("f1", 4, "running")},
			[]bool{false, false, true},
			"— running\n— finished\n— running\n", "running"},
		{"an event printed from the log, then live",
			[]events.Event{status("s1", 1, "running"), status("s1", 1, "running")},
			[]bool{false, true},
			"— running\n", "running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := &watcher{a: &app{io: IO{Stdout: &out}}, r: NewRenderer(&out, false), seen: map[string]bool{}}
			for i, ev := range tc.emit {
				w.emit(ev, tc.live[i])
			}
			if out.String() != tc.want || w.status != tc.status {
				t.Fatalf("printed %q with status %q, want %q with %q", out.String(), w.status, tc.want, tc.status)
			}
		})
	}
}

// TestWatcherSettlesWithTheControlPlane: when the agent is done, watch
// returns once the control plane's record shows the same status, so a
// show right after it agrees. A control plane that answers with an error
// ends the wait at once.
func TestWatcherSettlesWithTheControlPlane(t *testing.T) {
	for _, tc := range []struct {
		name      string
		behind    int32 // reads that still show the old status
		fail      bool
		wantReads int32
	}{
		{"already recorded", 0, false, 1},
		{"recorded after three reads", 3, false, 4},
		{"control plane error", 0, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reads atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/v1/app-conversations" || r.URL.Query().Get("ids") != "c1" {
					http.NotFound(w, r)
					return
				}
				n := reads.Add(1)
				w.Header().Set("Content-Type", "application/json")
				if tc.fail {
					w.WriteHeader(http.StatusForbidden)
					w.Write([]byte(`{"detail":"no"}`))
					return
				}
				status := "finished"
				if n <= tc.behind {
					status = "running"
				}
				w.Write([]byte(`[{"id":"c1","execution_status":"` + status + `"}]`))
			}))
			defer srv.Close()
			w := &watcher{a: &app{c: client.New(srv.URL, "k")}, id: "c1", status: "finished"}
			w.settle(context.Background())
			if got := reads.Load(); got != tc.wantReads {
				t.Fatalf("settle read the conversation %d times, want %d", got, tc.wantReads)
			}
		})
	}
}
