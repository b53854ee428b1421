package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/acs-project/acs/client"
)

// TestRunPausedWaitsForTheStepInFlight: a resume right after a pause, while
// the paused agent's last step still runs (the agent server answers a run
// 409 but reports the agent paused), asks again until the step is over; a
// 409 from an agent that is not paused (running, say) is the answer. The
// agent server here is a stand-in: a real one answers so only while a step
// is in flight, a timing a test cannot hold.
func TestRunPausedWaitsForTheStepInFlight(t *testing.T) {
	for _, tc := range []struct {
		name      string
		conflicts int32  // runs answered 409 before one is accepted
		status    string // what the agent server reports meanwhile
		wantErr   bool
		wantRuns  int32
	}{
		{"accepted at once", 0, "paused", false, 1},
		{"the step in flight ends after three asks", 3, "paused", false, 4},
		{"already running, not paused", 1, "running", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				switch {
				case r.Method == http.MethodPost && r.URL.Path == "/api/conversations/c1/run":
					if runs.Add(1) <= tc.conflicts {
						w.WriteHeader(http.StatusConflict)
						w.Write([]byte(`{"detail":"Conversation already running. Wait for completion or pause first."}`))
						return
					}
					w.Write([]byte(`{"success":true}`))
				case r.Method == http.MethodGet && r.URL.Path == "/api/conversations/c1":
					w.Write([]byte(`{"id":"c1","execution_status":"` + tc.status + `"}`))
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			err := runPaused(context.Background(), client.NewAgent(srv.URL, "sk"), "c1")
			if (err != nil) != tc.wantErr || runs.Load() != tc.wantRuns {
				t.Fatalf("runPaused: %v after %d runs; want error %v after %d", err, runs.Load(), tc.wantErr, tc.wantRuns)
			}
			if tc.wantErr && client.StatusOf(err) != http.StatusConflict {
				t.Fatalf("error %v, want the 409", err)
			}
		})
	}
}
