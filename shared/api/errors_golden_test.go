package api

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/acs-project/acs/internal/golden"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/startflow"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/errors.golden")

// goldenErrorCases are the errors the handlers answer with writeErr: one per
// place that words an error for the user (built the way that place builds
// it), every code bare, and low-level errors that must not reach a body.
func goldenErrorCases(t *testing.T) []struct {
	name string
	err  error
} {
	t.Helper()
	ctx := context.Background()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "acs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	authErr := func(header string) error {
		_, err := Authenticate(ctx, store, header)
		if err == nil {
			t.Fatalf("Authenticate(%q) succeeded", header)
		}
		return err
	}
	return []struct {
		name string
		err  error
	}{
		// Authentication (api.go).
		{"unauthorized/missing-bearer", authErr("")},
		{"unauthorized/invalid-api-key", authErr("Bearer not-a-key")},
		{"unauthorized/no-authorizer-context", fmt.Errorf("no authorizer context: %w", acs.ErrUnauthorized)},
		{"unauthorized/missing-session-key", fmt.Errorf("missing X-Session-API-Key: %w", acs.ErrUnauthorized)},
		{"unauthorized/unknown-session-key", fmt.Errorf("unknown session key: %w", acs.ErrUnauthorized)},
		{"unauthorized/sandbox-deleted", fmt.Errorf("sandbox deleted: %w", acs.ErrUnauthorized)},
		// Ownership and lookups.
		{"forbidden/other-sandbox", fmt.Errorf("conversation %s does not belong to this sandbox: %w", "c0ffee", acs.ErrForbidden)},
		{"not-found/conversation", fmt.Errorf("Conversation not found: %s: %w", "c0ffee", acs.ErrNotFound)},
		{"not-found/conversation-id", fmt.Errorf("conversation id %q: %w", "not an id", acs.ErrNotFound)},
		{"not-found/sandbox", fmt.Errorf("Sandbox not found: %s: %w", "sb1", acs.ErrNotFound)},
		{"not-found/secret", fmt.Errorf("Secret not found: %s: %w", "GITHUB_TOKEN", acs.ErrNotFound)},
		{"not-found/api-key", fmt.Errorf("API key not found: %s: %w", "k1", acs.ErrNotFound)},
		// Conflicts.
		{"conflict/id-unavailable", fmt.Errorf("%s: %w", "conversation_id is not available; choose another id or leave it out to get a generated one", acs.ErrConflict)},
		{"conflict/sandbox-id-in-use", fmt.Errorf("sandbox id %s is already in use: %w", "sb1", acs.ErrConflict)},
		{"conflict/not-ready", fmt.Errorf("Sandbox is %s. Use %s to resume it first, or retry shortly: %w",
			acs.SandboxStarting, acs.RouteResumeSandbox.Ref("sb1"), acs.ErrConflict)},
		// Read-only sandboxes.
		{"gone/archived", usable(acs.Sandbox{Status: acs.SandboxMissing})},
		{"gone/sandbox-route", fmt.Errorf("Sandbox %s no longer exists; its conversations are read-only: %w", "sb1", acs.ErrGone)},
		{"sandbox-failed/with-detail", usable(acs.Sandbox{Status: acs.SandboxError, Detail: "the agent server exited (status 1)"})},
		{"sandbox-failed/without-detail", usable(acs.Sandbox{Status: acs.SandboxError})},
		// Validation.
		{"invalid/field", &startflow.FieldError{Field: "parent_conversation_id", Msg: "Parent conversation not found: c0ffee"}},
		{"invalid/start-request", fmt.Errorf("start request: %v: %w", errors.New("body.title: String should have at most 200 characters"), acs.ErrInvalid)},
		{"invalid/unknown-spec", fmt.Errorf("unknown sandbox spec %q: %w", "gpu", acs.ErrInvalid)},
		// Limits and outages.
		{"capacity/running-cap", fmt.Errorf("You have %d running sandboxes, the most allowed. Pause or delete one (%s), or retry later: %w", 2, acs.RoutePauseSandbox.Ref(), acs.ErrCapacity)},
		{"storage-full/store", fmt.Errorf("store %s: %w: %w", "/data/acs.db", syscall.ENOSPC, acs.ErrStorageFull)},
		{"unavailable/queue", fmt.Errorf("queue start task: %w", acs.ErrUnavailable)},
		{"unavailable/adapter", fmt.Errorf("dynamodb PutItem: %w: %w", errors.New("ThrottlingException: rate exceeded"), acs.ErrUnavailable)},
		{"internal/plain", errors.New("bolt: database not open")},
		{"internal/canceled", fmt.Errorf("list sandboxes: %w", context.Canceled)},
		// Every sentinel bare.
		{"bare/unauthorized", acs.ErrUnauthorized},
		{"bare/forbidden", acs.ErrForbidden},
		{"bare/not-found", acs.ErrNotFound},
		{"bare/conflict", acs.ErrConflict},
		{"bare/gone", acs.ErrGone},
		{"bare/sandbox-failed", acs.ErrSandboxFailed},
		{"bare/invalid", acs.ErrInvalid},
		{"bare/capacity", acs.ErrCapacity},
		{"bare/storage-full", acs.ErrStorageFull},
		{"bare/unavailable", acs.ErrUnavailable},
		// An adapter's own wording around a sentinel (a store's record
		// name, an SDK's message).
		{"adapter/not-found", fmt.Errorf("conversation %s: %w", "c0ffee", acs.ErrNotFound)},
		{"adapter/conflict", fmt.Errorf("kubesandbox: %s: %v: %w", "create pod", errors.New(`pods "sb1" already exists`), acs.ErrConflict)},
		{"adapter/capacity", fmt.Errorf("dynamodb %s: %w: %w", "PutItem", errors.New("ProvisionedThroughputExceededException: throughput exceeded"), acs.ErrCapacity)},
		{"adapter/invalid", fmt.Errorf("page token: %w", acs.ErrInvalid)},
		// Context added around a message meant for the user.
		{"context/not-found", fmt.Errorf("load conversation: %w", fmt.Errorf("Conversation not found: %s: %w", "c0ffee", acs.ErrNotFound))},
	}
}

// TestWriteErrGolden pins what writeErr answers (status, headers, body) for
// every error the API words for users; testdata/errors.golden is the
// record (go test -run TestWriteErrGolden -update rewrites it).
func TestWriteErrGolden(t *testing.T) {
	var b strings.Builder
	for _, tc := range goldenErrorCases(t) {
		w := httptest.NewRecorder()
		writeErr(w, tc.err)
		fmt.Fprintf(&b, "== %s\nHTTP %d\n", tc.name, w.Code)
		var names []string
		for k := range w.Header() {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(w.Header()[k], ", "))
		}
		fmt.Fprintf(&b, "%s\n\n", w.Body.String())
	}
	golden.Check(t, filepath.Join("testdata", "errors.golden"), []byte(b.String()), *updateGolden)
}

// usable is the read-only error of a sandbox (acs.Sandbox.Usable).
func usable(sb acs.Sandbox) error { return sb.Usable() }
