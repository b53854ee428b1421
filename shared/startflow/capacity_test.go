package startflow_test

// The per-user cap on running sandboxes gives a sandbox's place back the
// moment the sandbox stops counting, on every path that stops or removes
// one, on every store (issue 11, defect 1: a deleted conversation kept its
// place for the claim's ten-minute lifetime).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/dynamostore"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/v1wire"
)

// capStore opens an empty store; reopen gives a new handle on the same data
// (a restart), after which the first handle is not used.
type capStore struct {
	name string
	open func(t *testing.T) (s acs.Store, reopen func() acs.Store)
}

// capStores are the stores the running-cap tests run on: bbolt, and
// DynamoDB Local when ACS_TEST_DYNAMODB_ENDPOINT is set (make test,
// scripts/test.sh).
func capStores() []capStore {
	stores := []capStore{{"bolt", func(t *testing.T) (acs.Store, func() acs.Store) {
		path := filepath.Join(t.TempDir(), "acs.db")
		open := func() acs.Store {
			s, err := boltstore.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		s := open()
		return s, func() acs.Store { s.(*boltstore.Store).Close(); return open() }
	}}}
	if ep := os.Getenv("ACS_TEST_DYNAMODB_ENDPOINT"); ep != "" {
		stores = append(stores, capStore{"dynamodb", func(t *testing.T) (acs.Store, func() acs.Store) {
			c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(ep),
				Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
				HTTPClient:  &http.Client{Timeout: 30 * time.Second}})
			var b [6]byte
			rand.Read(b[:])
			table := "acs-cap-" + hex.EncodeToString(b[:])
			s := dynamostore.New(dynamostore.Options{Client: c, Table: table})
			if err := s.CreateTable(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if _, err := c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table}); err != nil {
					t.Errorf("delete table %s: %v", table, err)
				}
			})
			return s, func() acs.Store { return dynamostore.New(dynamostore.Options{Client: c, Table: table}) }
		}})
	}
	return stores
}

// newCapEnv is a start flow under a running cap of 1 (alice's), with
// process sandboxes of binary, on the store cs opens.
func newCapEnv(t *testing.T, cs capStore, binary string) *env {
	t.Helper()
	return newEnv(t, envOptions{store: cs, binary: binary, maxRunning: 1, maxAttempts: 2})
}

// step runs the task's current step, as a delivery does (a user error ends
// the task). It reports whether the task is done.
func (e *env) step(t *testing.T, id string) (acs.StartTask, bool) {
	t.Helper()
	tk, err := e.store.GetStartTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status.Done() {
		return tk, true
	}
	delay, _, err := e.w.Step(ctx, tk)
	if err != nil {
		if herr := e.w.Handle(ctx, acs.Delivery{Message: acs.Message{TaskID: id}, Receipt: "x:1"}); herr != nil && !strings.Contains(herr.Error(), "receipt") {
			t.Logf("handle: %v", herr)
		}
		return tk, false
	}
	redeliveryDelay(delay)
	return tk, false
}

// driveUntil runs the task's steps until it is done or its status is stop.
func (e *env) driveUntil(t *testing.T, id string, stop acs.StartTaskStatus) acs.StartTask {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		tk, err := e.store.GetStartTask(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status.Done() || tk.Status == stop {
			return tk
		}
		e.step(t, id)
	}
	t.Fatalf("task %s did not finish", id)
	return acs.StartTask{}
}

// start submits a start for alice and runs it until stop (or done).
func (e *env) start(t *testing.T, stop acs.StartTaskStatus) acs.StartTask {
	t.Helper()
	tk, err := e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return e.driveUntil(t, tk.ID, stop)
}

// create makes a sandbox of alice's through the lifecycle (POST
// /api/v1/sandboxes), ready (RUNNING, agent server alive) unless the runtime
// cannot start it.
func (e *env) create(t *testing.T) acs.Sandbox {
	t.Helper()
	sb, err := e.life.Create(ctx, acs.Sandbox{ID: acs.NewID(), OwnerID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	sb, _, err = e.life.Ready(ctx, sb, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// removeConversation is what DELETE /api/v1/app-conversations/{id} does to
// the conversation's sandbox: its slot is released and, being the last, the
// sandbox is removed.
func (e *env) removeConversation(t *testing.T, convID, sandboxID string) {
	t.Helper()
	sb, err := e.store.UpdateSandbox(ctx, sandboxID, func(s *acs.Sandbox) error { s.Release(convID); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if sb.ConversationCount() != 0 {
		t.Fatalf("sandbox %s still holds %v", sandboxID, sb.Slots)
	}
	if err := e.life.Remove(ctx, sandboxID); err != nil {
		t.Fatal(err)
	}
}

// atCap fails unless alice is at her cap.
func atCap(t *testing.T, life *sandboxes.Lifecycle) {
	t.Helper()
	if err := life.CheckCapacity(ctx, "alice", ""); !errors.Is(err, acs.ErrCapacity) {
		t.Fatalf("setup: alice should be at her cap of 1, got %v", err)
	}
}

// hasRoom fails unless alice may start a sandbox at once: the check of a
// start (POST /api/v1/app-conversations) and the claim of a new sandbox
// (POST /api/v1/sandboxes) both pass.
func hasRoom(t *testing.T, life *sandboxes.Lifecycle, what string) {
	t.Helper()
	if err := life.CheckCapacity(ctx, "alice", ""); err != nil {
		t.Fatalf("after %s, a start is refused: %v", what, err)
	}
	if err := life.Claim(ctx, "alice", acs.NewID()); err != nil {
		t.Fatalf("after %s, a new sandbox is refused: %v", what, err)
	}
}

// noSandboxes fails unless alice has no sandbox record left.
func noSandboxes(t *testing.T, st acs.Store) {
	t.Helper()
	page, err := st.ListSandboxes(ctx, "alice", acs.ListOptions{})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("sandboxes left: %+v (%v)", page.Items, err)
	}
}

// Every path that stops or removes a sandbox gives its place under the cap
// back at once.
func TestRunningCapSlotIsGivenBack(t *testing.T) {
	acsBin := testbin.ACS(t)
	paths := []struct {
		name   string
		binary string
		run    func(t *testing.T, e *env) string
	}{
		{"conversation deleted", acsBin, func(t *testing.T, e *env) string {
			tk := e.start(t, acs.TaskReady)
			if tk.Status != acs.TaskReady {
				t.Fatalf("start: %s %v", tk.Status, tk.Detail)
			}
			atCap(t, e.life)
			e.removeConversation(t, tk.ConversationID, *tk.SandboxID)
			noSandboxes(t, e.store)
			return "deleting the conversation (and with it its sandbox)"
		}},
		{"conversation deleted while its start is in flight", acsBin, func(t *testing.T, e *env) string {
			tk := e.start(t, acs.TaskStartingConversation)
			if tk.Status != acs.TaskStartingConversation {
				t.Fatalf("start: %s %v", tk.Status, tk.Detail)
			}
			atCap(t, e.life)
			e.removeConversation(t, tk.ConversationID, *tk.SandboxID)
			// The start goes on and finds its sandbox gone.
			done := e.driveUntil(t, tk.ID, "")
			if done.Status != acs.TaskError || !strings.Contains(*done.Detail, "deleted while") {
				t.Fatalf("the start after its sandbox was deleted: %s %v", done.Status, done.Detail)
			}
			noSandboxes(t, e.store)
			return "deleting the conversation during its start"
		}},
		{"sandbox deleted", acsBin, func(t *testing.T, e *env) string {
			sb := e.create(t)
			atCap(t, e.life)
			// DELETE /api/v1/sandboxes/{id}: MISSING, then the record goes
			// (no conversation reads it).
			if _, err := e.life.Delete(ctx, sb, true); err != nil {
				t.Fatal(err)
			}
			if err := e.store.DeleteSandbox(ctx, sb.ID); err != nil {
				t.Fatal(err)
			}
			return "deleting the sandbox"
		}},
		{"sandbox paused then its conversation deleted", acsBin, func(t *testing.T, e *env) string {
			sb := e.create(t)
			atCap(t, e.life)
			if _, err := e.life.Pause(ctx, sb); err != nil {
				t.Fatal(err)
			}
			if err := e.life.Remove(ctx, sb.ID); err != nil {
				t.Fatal(err)
			}
			return "pausing the sandbox, then removing it"
		}},
		{"sandbox failed to start", "/nonexistent/acs", func(t *testing.T, e *env) string {
			_, err := e.life.Create(ctx, acs.Sandbox{ID: acs.NewID(), OwnerID: "alice"})
			if err == nil || errors.Is(err, acs.ErrCapacity) {
				t.Fatalf("create with a runtime that cannot start it: %v", err)
			}
			return "a sandbox the runtime could not start"
		}},
		{"start failed", "/nonexistent/acs", func(t *testing.T, e *env) string {
			tk := e.start(t, "")
			if tk.Status != acs.TaskError || tk.SandboxID == nil {
				t.Fatalf("start with a runtime that cannot start sandboxes: %s %v", tk.Status, tk.Detail)
			}
			return "a failed start"
		}},
		{"reconciler cleaned up, then the conversation deleted", acsBin, func(t *testing.T, e *env) string {
			sb := e.create(t)
			atCap(t, e.life)
			e.life.Config.IdlePause, e.life.Config.IdleCleanup = time.Nanosecond, time.Nanosecond
			for _, want := range []acs.SandboxStatus{acs.SandboxPaused, acs.SandboxMissing} {
				rep, err := e.life.Reconcile(ctx)
				if err != nil {
					t.Fatal(err)
				}
				got, err := e.store.GetSandbox(ctx, sb.ID)
				if err != nil || got.Status != want {
					t.Fatalf("after a reconciler pass (%+v): %s, want %s (%v)", rep, got.Status, want, err)
				}
			}
			// DELETE of its (archived) conversation removes the record.
			if err := e.life.Remove(ctx, sb.ID); err != nil {
				t.Fatal(err)
			}
			return "the reconciler's cleanup and the conversation's deletion"
		}},
	}
	for _, cs := range capStores() {
		t.Run(cs.name, func(t *testing.T) {
			for _, p := range paths {
				t.Run(p.name, func(t *testing.T) {
					e := newCapEnv(t, cs, p.binary)
					what := p.run(t, e)
					hasRoom(t, e.life, what)
				})
			}
		})
	}
}

// A process that dies between removing a sandbox and giving its claim back
// leaves a claim without a record: after a restart it no longer counts (it
// is older than the short window between a claim and its record).
func TestRunningCapClaimWithoutRecordAfterRestart(t *testing.T) {
	acsBin := testbin.ACS(t)
	for _, cs := range capStores() {
		t.Run(cs.name, func(t *testing.T) {
			e := newCapEnv(t, cs, acsBin)
			sb := e.create(t)
			atCap(t, e.life)
			// The crash: compute and record gone, the claim not given back.
			if err := e.rt.Delete(ctx, sb.ID); err != nil {
				t.Fatal(err)
			}
			if err := e.store.DeleteSandbox(ctx, sb.ID); err != nil {
				t.Fatal(err)
			}
			later := time.Now().Add(time.Minute)
			life := &sandboxes.Lifecycle{Store: e.reopen(), Runtime: e.rt, Config: e.life.Config,
				Now: func() time.Time { return later }}
			hasRoom(t, life, "a restart after a crash mid-removal")
		})
	}
}

// A claim counts before its sandbox's record is written (the step from
// Claim to CreateSandbox, or an owner index that lags), and stops counting
// once it is older than that short window.
func TestRunningCapClaimBeforeItsRecord(t *testing.T) {
	for _, cs := range capStores() {
		t.Run(cs.name, func(t *testing.T) {
			e := newCapEnv(t, cs, "/nonexistent/acs")
			now := time.Now()
			e.life.Now = func() time.Time { return now }
			if err := e.life.Claim(ctx, "alice", "being-created"); err != nil {
				t.Fatal(err)
			}
			now = now.Add(time.Second)
			if err := e.life.Claim(ctx, "alice", "another"); !errors.Is(err, acs.ErrCapacity) {
				t.Fatalf("a claim whose record is about to be written did not count: %v", err)
			}
			now = now.Add(time.Minute)
			hasRoom(t, e.life, "a claim whose record never came")
		})
	}
}

// Claims stay atomic: concurrent claims never pass the cap.
func TestRunningCapConcurrentClaims(t *testing.T) {
	for _, cs := range capStores() {
		t.Run(cs.name, func(t *testing.T) {
			e := newCapEnv(t, cs, "/nonexistent/acs")
			e.life.Config.MaxRunningSandboxes = 3
			const n = 12
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- e.life.Claim(ctx, "alice", fmt.Sprintf("sandbox-%d", i))
				}()
			}
			wg.Wait()
			close(errs)
			ok := 0
			for err := range errs {
				switch {
				case err == nil:
					ok++
				case !errors.Is(err, acs.ErrCapacity):
					t.Errorf("claim: %v", err)
				}
			}
			if ok != 3 {
				t.Fatalf("%d of %d concurrent claims passed a cap of 3", ok, n)
			}
		})
	}
}
