package tools_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/golden"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/tools"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden")

// goldenTool is what the LLM and the event log see of one tool.
type goldenTool struct {
	Name       string                `json:"name"`
	Definition events.ToolDefinition `json:"definition"`
	Parameters map[string]any        `json:"parameters"`
}

// registeredTools builds every registered tool and tool set, each on its
// own, and returns the tools in the order Build gives them.
func registeredTools(t *testing.T) []tools.Tool {
	t.Helper()
	var out []tools.Tool
	seen := map[string]bool{}
	for _, name := range tools.Names() {
		env := tools.Env{ConversationID: "c1", WorkDir: t.TempDir(), StateDir: t.TempDir()}
		ts, err := tools.Build(context.Background(), env, []agentwire.ToolRef{{Name: name}})
		if err != nil {
			t.Fatalf("Build %s: %v", name, err)
		}
		t.Cleanup(func() { tools.CloseAll(ts) })
		for _, tl := range ts {
			if !seen[tl.Name()] {
				seen[tl.Name()] = true
				out = append(out, tl)
			}
		}
	}
	return out
}

// TestToolsGolden pins the name, definition and parameter schema of every
// registered tool to testdata/golden/<name>.json, byte for byte. Run with
// -update to rewrite the files after an intended change.
func TestToolsGolden(t *testing.T) {
	dir := filepath.Join("testdata", "golden")
	ts := registeredTools(t)
	if *updateGolden {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !*updateGolden && len(files) != len(ts) {
		t.Errorf("%d golden files, %d tools", len(files), len(ts))
	}
	for _, tl := range ts {
		t.Run(tl.Name(), func(t *testing.T) {
			params := tl.Parameters()
			checkSchemaTypes(t, "parameters", params)
			got, err := json.MarshalIndent(goldenTool{Name: tl.Name(), Definition: tl.Definition(), Parameters: params}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden.Check(t, filepath.Join(dir, tl.Name()+".json"), got, *updateGolden)
		})
	}
}

// checkSchemaTypes requires the Go types the schema's readers assert:
// objects are map[string]any, lists of names []string, numbers int.
func checkSchemaTypes(t *testing.T, at string, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			checkSchemaTypes(t, at+"."+k, e)
		}
	case []string, string, int, bool:
	default:
		t.Errorf("%s is a %T", at, v)
	}
}
