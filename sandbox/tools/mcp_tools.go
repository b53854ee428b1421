package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/mcp"
)

// MCPTools wraps every tool of a connected MCP client as a Tool, in the
// client's order:
//
//   - Name is the MCP tool's name;
//   - Definition is an events.ToolDefinition of kind "MCPToolDefinition"
//     (action MCPToolAction, observation MCPToolObservation) whose Title is
//     the name, with the tool's description, its MCP annotations (title,
//     readOnlyHint...) when the server gave some, and the MCP tool itself
//     (name, title, description, inputSchema, outputSchema, annotations,
//     _meta);
//   - Parameters is the inputSchema as a fresh map (with "type": "object"
//     and "properties" added when the server left them out);
//   - ReadOnly is the annotations' readOnlyHint;
//   - ParseAction (tools.ActionParser) validates the arguments against the
//     inputSchema (mcp.ValidateArguments) and returns an
//     *events.MCPToolAction holding them;
//   - Execute calls the tool through the client: a failed call is an
//     observation with IsError, and the only error is ctx's;
//   - Close does nothing: the client is closed by its owner.
func MCPTools(c *mcp.Client) []Tool {
	ts := c.Tools()
	out := make([]Tool, len(ts))
	for i, t := range ts {
		out[i] = &mcpTool{client: c, tool: t}
	}
	return out
}

// mcpTool is one tool of an MCP server.
type mcpTool struct {
	client *mcp.Client
	tool   mcp.Tool
}

var _ ActionParser = (*mcpTool)(nil)

func (t *mcpTool) Name() string       { return t.tool.Name }
func (t *mcpTool) ActionKind() string { return "MCPToolAction" }
func (t *mcpTool) ReadOnly() bool     { return t.tool.ReadOnlyHint() }
func (t *mcpTool) Close() error       { return nil }

func (t *mcpTool) Definition() events.ToolDefinition {
	// Everything is copied: the caller may keep or change the definition.
	mt := &events.MCPTool{
		Name:         t.tool.Name,
		InputSchema:  bytes.Clone(t.tool.InputSchema),
		OutputSchema: bytes.Clone(t.tool.OutputSchema),
		Annotations:  bytes.Clone(t.tool.Annotations),
		Meta:         bytes.Clone(t.tool.Meta),
	}
	if title := t.tool.Title; title != "" {
		mt.Title = &title
	}
	if desc := t.tool.Description; desc != "" {
		mt.Description = &desc
	}
	var ann *events.ToolAnnotations
	if len(t.tool.Annotations) > 0 {
		var a events.ToolAnnotations
		if json.Unmarshal(t.tool.Annotations, &a) == nil {
			ann = &a
		}
	}
	return events.ToolDefinition{
		Kind:            "MCPToolDefinition",
		Description:     t.tool.Description,
		ActionType:      "MCPToolAction",
		ObservationType: "MCPToolObservation",
		Annotations:     ann,
		Title:           t.tool.Name,
		MCPTool:         mt,
	}
}

func (t *mcpTool) Parameters() map[string]any {
	params := map[string]any{}
	_ = json.Unmarshal(t.tool.InputSchema, &params)
	if _, ok := params["type"]; !ok {
		params["type"] = "object"
	}
	if _, ok := params["properties"].(map[string]any); !ok {
		params["properties"] = map[string]any{}
	}
	return params
}

// ParseAction implements ActionParser.
func (t *mcpTool) ParseAction(args json.RawMessage) (events.Action, error) {
	data, err := mcp.ValidateArguments(t.tool.InputSchema, args)
	if err != nil {
		return nil, err
	}
	return &events.MCPToolAction{Data: data}, nil
}

func (t *mcpTool) Execute(ctx context.Context, a events.Action) (events.Observation, error) {
	act, ok := a.(*events.MCPToolAction)
	if !ok {
		return nil, fmt.Errorf("MCP tool %s: got a %s action, want MCPToolAction", t.tool.Name, a.Kind())
	}
	obs, err := t.client.Call(ctx, t.tool.Name, act.Data)
	if err != nil {
		return nil, err
	}
	return obs, nil
}
