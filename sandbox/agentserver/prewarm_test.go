package agentserver_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// Prewarm leaves nothing behind: no conversation on any route, no files
// in the temporary directory, and no warning (a failure would be logged).
func TestPrewarmLeavesNothing(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	e := newEnv(t)
	e.srv.Prewarm(context.Background())
	if strings.Contains(logs.String(), "prewarm") {
		t.Fatalf("prewarm logged:\n%s", logs.String())
	}
	if r := e.call("GET", "/api/conversations/count", nil); string(r.body) != "0" {
		t.Fatalf("conversations after a prewarm: %s", r.body)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("prewarm left %d entries in the temporary directory: %v", len(left), left[0].Name())
	}
	// The server still creates and serves a conversation as usual.
	id := e.create(nil)
	if r := e.call("GET", "/api/conversations/"+id, nil); r.status != 200 {
		t.Fatalf("a conversation after the prewarm: %d %s", r.status, r.body)
	}
}
