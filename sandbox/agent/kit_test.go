package agent

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/hooks"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/skills"
	"github.com/acs-project/acs/sandbox/tools"
	"github.com/acs-project/acs/sandbox/tools/mcp"
	"github.com/acs-project/acs/sandbox/tools/mcp/mcptest"
)

// mcpClient connects to a real MCP server whose tools are named with prefix.
func mcpClient(t *testing.T, prefix string) *mcp.Client {
	t.Helper()
	srv := httptest.NewServer(mcptest.HTTPHandler(prefix, ""))
	t.Cleanup(srv.Close)
	url := srv.URL
	c, errs := mcp.Connect(context.Background(), map[string]mcp.ServerConfig{"test": {URL: &url}}, mcp.Options{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func toolNames(ts []tools.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name())
	}
	return out
}

func specNames(ts []llm.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// with builds a new kit and leaves the one it extends as it was.
func TestKitWith(t *testing.T) {
	base := newKit(tools.MCPTools(mcpClient(t, "")))
	baseNames := toolNames(base.tools)
	sk := []skills.Skill{{Name: "s"}}
	runner := &hooks.Runner{Config: &hooks.Config{}}
	cases := []struct {
		name      string
		prefix    string // of the extension's MCP server; "-" for none
		wantTools []string
		wantDups  int
	}{
		{"no MCP", "-", baseNames, 0},
		{"new names", "x_", append(slices.Clone(baseNames), prefixed("x_", baseNames)...), 0},
		{"taken names", "", baseNames, len(baseNames)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ext := extensions{skills: sk, hooks: runner}
			if tc.prefix != "-" {
				ext.mcp = mcpClient(t, tc.prefix)
			}
			k, problems := base.with(ext)
			if got := toolNames(k.tools); !slices.Equal(got, tc.wantTools) {
				t.Fatalf("tools %v, want %v", got, tc.wantTools)
			}
			if got := specNames(k.specs); !slices.Equal(got, tc.wantTools) {
				t.Fatalf("the LLM is offered %v, want %v", got, tc.wantTools)
			}
			for _, n := range tc.wantTools {
				if tool, ok := k.tool(n); !ok || tool.Name() != n {
					t.Fatalf("tool(%q) = %v, %v", n, tool, ok)
				}
			}
			if len(problems) != tc.wantDups {
				t.Fatalf("problems %v, want %d", problems, tc.wantDups)
			}
			for _, p := range problems {
				if p.code != "MCPConnectionError" || !strings.Contains(p.detail, "already exists") {
					t.Fatalf("problem %+v", p)
				}
			}
			if k.mcp != ext.mcp || k.hooks != runner || len(k.skills) != 1 {
				t.Fatalf("kit %+v does not hold the extensions", k)
			}
			if got := toolNames(base.tools); !slices.Equal(got, baseNames) || len(base.byName) != len(baseNames) ||
				!slices.Equal(specNames(base.specs), baseNames) ||
				base.skills != nil || base.hooks != nil || base.mcp != nil {
				t.Fatal("with changed the kit it extends")
			}
		})
	}
}

func prefixed(p string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = p + n
	}
	return out
}

func TestKitHooked(t *testing.T) {
	cfg, err := hooks.Parse([]byte(`{"stop":[{"matcher":"*","hooks":[{"command":"true"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	k := newKit(nil)
	if k.hooked(hooks.Stop) {
		t.Fatal("a kit without hooks is hooked")
	}
	k, _ = k.with(extensions{hooks: &hooks.Runner{Config: cfg}})
	if !k.hooked(hooks.Stop) || k.hooked(hooks.PreToolUse) {
		t.Fatalf("hooked(stop) %v, hooked(pre_tool_use) %v", k.hooked(hooks.Stop), k.hooked(hooks.PreToolUse))
	}
}
