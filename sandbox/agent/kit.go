package agent

import (
	"fmt"
	"log/slog"

	"github.com/acs-project/acs/sandbox/hooks"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/skills"
	"github.com/acs-project/acs/sandbox/tools"
	"github.com/acs-project/acs/sandbox/tools/mcp"
)

// A kit is what the agent acts with: its tools, skills, hooks and MCP
// servers. A kit never changes once built. open builds the kit of the
// built-in tools, the setup extends it into a new one, and the
// conversation's owner replaces its kit whole. So a kit read from the
// owner stays valid in another goroutine.
type kit struct {
	tools  []tools.Tool
	byName map[string]tools.Tool
	// specs are the tools' function schemas offered to the model, shared
	// by every LLM call: read them, never change them.
	specs  []llm.Tool
	skills []skills.Skill
	hooks  *hooks.Runner // nil without hooks
	mcp    *mcp.Client   // nil without MCP servers
}

// newKit returns the kit of the built-in tools ts.
func newKit(ts []tools.Tool) *kit {
	k := &kit{tools: ts, byName: make(map[string]tools.Tool, len(ts)), specs: toolSpecs(ts)}
	for _, t := range ts {
		k.byName[t.Name()] = t
	}
	return k
}

// tool returns the tool named name.
func (k *kit) tool(name string) (tools.Tool, bool) {
	t, ok := k.byName[name]
	return t, ok
}

// hooked reports whether the kit has hooks for event.
func (k *kit) hooked(event hooks.EventType) bool {
	return k.hooks != nil && len(k.hooks.Config.For(event)) > 0
}

// extensions are what the setup adds to the built-in kit.
type extensions struct {
	skills []skills.Skill
	hooks  *hooks.Runner // nil or with hooks
	mcp    *mcp.Client   // nil without MCP servers
}

// with returns a new kit: k's tools and then the MCP client's, with ext's
// skills and hooks. MCP tools whose names k's tools take are left out;
// each is a problem it returns.
func (k *kit) with(ext extensions) (*kit, []setupProblem) {
	out := &kit{tools: k.tools, byName: k.byName, specs: k.specs, skills: ext.skills, hooks: ext.hooks, mcp: ext.mcp}
	if ext.mcp == nil {
		return out, nil
	}
	var problems []setupProblem
	out.tools = append(make([]tools.Tool, 0, len(k.tools)), k.tools...)
	out.byName = make(map[string]tools.Tool, len(k.byName))
	for n, t := range k.byName {
		out.byName[n] = t
	}
	for _, t := range tools.MCPTools(ext.mcp) {
		if _, dup := k.byName[t.Name()]; dup {
			problems = append(problems, setupProblem{code: "MCPConnectionError",
				detail: fmt.Sprintf("MCP tool %q is not available: a tool of that name already exists", t.Name())})
			continue
		}
		out.tools = append(out.tools, t)
		out.byName[t.Name()] = t
	}
	out.specs = toolSpecs(out.tools)
	return out, problems
}

// toolSpecs returns the function schemas of ts offered to the model: each
// tool's parameters plus summary, and security_risk for tools that change
// things.
func toolSpecs(ts []tools.Tool) []llm.Tool {
	out := make([]llm.Tool, 0, len(ts))
	for _, t := range ts {
		params := map[string]any{}
		for k, v := range t.Parameters() {
			params[k] = v
		}
		props := map[string]any{}
		if p, ok := params["properties"].(map[string]any); ok {
			for k, v := range p {
				props[k] = v
			}
		}
		if !t.ReadOnly() {
			props["security_risk"] = map[string]any{"type": "string", "enum": []string{"LOW", "MEDIUM", "HIGH", "UNKNOWN"},
				"description": "The LLM's assessment of the safety risk of this action."}
		}
		props["summary"] = map[string]any{"type": "string",
			"description": "A concise summary (about 10 words) of what this action does."}
		params["properties"] = props
		out = append(out, llm.Tool{Name: t.Name(), Description: t.Definition().Description, Parameters: params})
	}
	return out
}

// close releases the kit's tools and MCP servers.
func (k *kit) close(lg *slog.Logger) {
	tools.CloseAll(k.tools)
	if k.mcp != nil {
		if err := k.mcp.Close(); err != nil {
			lg.Warn("close MCP servers", "error", err)
		}
	}
}
