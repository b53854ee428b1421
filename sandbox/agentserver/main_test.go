package agentserver

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/tools/mcp/mcptest"
)

// TestMain keeps test output to warnings and errors. Run with
// ACS_MCP_TEST_SERVER=stdio, the test binary is instead an MCP server over
// stdio (tools prefixed by ACS_MCP_TEST_PREFIX) that accepts calls whose
// API_TOKEN equals the contents of the file ACS_MCP_EXPECT_FILE.
func TestMain(m *testing.M) {
	if os.Getenv("ACS_MCP_TEST_SERVER") == "stdio" {
		want, err := os.ReadFile(os.Getenv("ACS_MCP_EXPECT_FILE"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcp test server:", err)
			os.Exit(2)
		}
		if err := mcptest.RunStdio(context.Background(), os.Getenv("ACS_MCP_TEST_PREFIX"), strings.TrimSpace(string(want))); err != nil {
			fmt.Fprintln(os.Stderr, "mcp test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(m.Run())
}
