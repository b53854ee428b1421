package agentserver

import (
	"log/slog"
	"os"
	"testing"
)

// TestMain keeps test output to warnings and errors.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(m.Run())
}
