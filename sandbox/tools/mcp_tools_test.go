package tools_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/tools"
	"github.com/acs-project/acs/sandbox/tools/mcp"
	"github.com/acs-project/acs/sandbox/tools/mcp/mcptest"
)

const mcpTestToken = "tok-adapter-0b5e-SECRET"

// mcpTestTools connects to the test MCP server over streamable HTTP and
// wraps its tools.
func mcpTestTools(t *testing.T) (*mcp.Client, map[string]tools.Tool) {
	t.Helper()
	srv := httptest.NewServer(mcptest.HTTPHandler("", mcpTestToken))
	t.Cleanup(srv.Close)
	url := srv.URL
	c, errs := mcp.Connect(context.Background(), map[string]mcp.ServerConfig{
		"test": {URL: &url, Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}},
	}, mcp.Options{
		ConnectTimeout: time.Minute,
		Lookup:         func(n string) (string, bool) { return mcpTestToken, n == "TOKEN" },
		Mask:           func(s string) string { return strings.ReplaceAll(s, mcpTestToken, "<hidden>") },
		Logger:         slog.New(slog.DiscardHandler),
	})
	t.Cleanup(func() { c.Close() })
	if len(errs) > 0 {
		t.Fatalf("Connect: %v", errs)
	}
	byName := map[string]tools.Tool{}
	for _, tl := range tools.MCPTools(c) {
		byName[tl.Name()] = tl
	}
	return c, byName
}

func TestMCPToolsDefinitions(t *testing.T) {
	c, byName := mcpTestTools(t)
	if len(byName) != len(c.Tools()) || len(byName) == 0 {
		t.Fatalf("MCPTools gave %d tools, the client has %d", len(byName), len(c.Tools()))
	}
	for _, mt := range c.Tools() {
		tl := byName[mt.Name]
		def := tl.Definition()
		if def.Kind != "MCPToolDefinition" || def.ActionType != "MCPToolAction" || def.ObservationType != "MCPToolObservation" ||
			def.Title != mt.Name || def.Description != mt.Description || tl.ActionKind() != "MCPToolAction" {
			t.Errorf("%s: definition %+v", mt.Name, def)
		}
		if def.MCPTool == nil || def.MCPTool.Name != mt.Name || string(def.MCPTool.InputSchema) != string(mt.InputSchema) {
			t.Fatalf("%s: mcp_tool %+v", mt.Name, def.MCPTool)
		}
		// The definition is valid as serialised in SystemPromptEvent.tools.
		b, err := strictjson.Marshal(&def)
		if err != nil {
			t.Fatalf("%s: marshal: %v", mt.Name, err)
		}
		var back events.ToolDefinition
		if err := strictjson.Unmarshal(b, &back); err != nil {
			t.Errorf("%s: the definition does not decode strictly: %v\n%s", mt.Name, err, b)
		}
		if _, ok := tl.(tools.ActionParser); !ok {
			t.Errorf("%s does not implement ActionParser", mt.Name)
		}
		if err := tl.Close(); err != nil {
			t.Errorf("%s: Close: %v", mt.Name, err)
		}
	}

	echo, add := byName["echo"], byName["add"]
	if echo.ReadOnly() || !add.ReadOnly() {
		t.Errorf("ReadOnly: echo %v, add %v; want false, true", echo.ReadOnly(), add.ReadOnly())
	}
	d := add.Definition()
	if d.Annotations == nil || d.Annotations.ReadOnlyHint == nil || !*d.Annotations.ReadOnlyHint ||
		d.Annotations.Title != nil || d.MCPTool.Title == nil || *d.MCPTool.Title != "Add numbers" || d.MCPTool.OutputSchema == nil {
		t.Errorf("add definition: annotations %+v, mcp_tool %+v", d.Annotations, d.MCPTool)
	}
	if ed := echo.Definition(); ed.Annotations != nil || ed.MCPTool.Annotations != nil {
		t.Errorf("echo has no annotations, got %+v", ed.Annotations)
	}
	params := echo.Parameters()
	props, _ := params["properties"].(map[string]any)
	if params["type"] != "object" || props["text"] == nil {
		t.Errorf("echo parameters = %v", params)
	}
	params["properties"] = nil // the caller owns the map it gets
	if p2 := echo.Parameters(); p2["properties"] == nil {
		t.Errorf("Parameters returned a shared map")
	}
}

func TestMCPToolsParseAndExecute(t *testing.T) {
	_, byName := mcpTestTools(t)
	echo := byName["echo"].(tools.ActionParser)

	a, err := echo.ParseAction(json.RawMessage(`{ "text" : "hi" }`))
	if err != nil {
		t.Fatalf("ParseAction: %v", err)
	}
	act, ok := a.(*events.MCPToolAction)
	if !ok || string(act.Data) != `{"text":"hi"}` {
		t.Fatalf("ParseAction = %#v", a)
	}
	for args, want := range map[string]string{
		`{}`:             "argument 'text': required argument is missing",
		`{"text": true}`: "argument 'text': must be string, got boolean",
		`"hi"`:           "must be a JSON object",
	} {
		if _, err := echo.ParseAction(json.RawMessage(args)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAction(%s) = %v, want %q", args, err, want)
		}
	}
	if a, err := byName["image"].(tools.ActionParser).ParseAction(nil); err != nil || string(a.(*events.MCPToolAction).Data) != `{}` {
		t.Errorf("ParseAction(nil) = %v, %v; want {}", a, err)
	}

	obs, err := byName["echo"].Execute(context.Background(), act)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	mo, ok := obs.(*events.MCPToolObservation)
	if !ok || mo.Kind() != "MCPToolObservation" || mo.ToolName != "echo" || mo.IsError || len(mo.Content) != 2 {
		t.Fatalf("Execute = %#v", obs)
	}
	if first, ok := mo.Content[0].(*events.TextContent); !ok || first.Text != "[Tool 'echo' executed.]" ||
		!strings.Contains(mo.Text(), "echo: hi") {
		t.Errorf("Execute content = %q", mo.Text())
	}
	obs, err = byName["whoami"].Execute(context.Background(), &events.MCPToolAction{Data: json.RawMessage(`{}`)})
	if err != nil || strings.Contains(obs.Common().Text(), mcpTestToken) || !strings.Contains(obs.Common().Text(), "<hidden>") {
		t.Errorf("whoami = %v, %v: the result must be masked", obs, err)
	}
	obs, err = byName["fail"].Execute(context.Background(), &events.MCPToolAction{Data: json.RawMessage(`{}`)})
	if err != nil || !obs.Common().IsError {
		t.Errorf("fail = %v, %v; want an IsError observation", obs, err)
	}
	// The observation survives the event log's strict encoding.
	b, err := strictjson.Marshal(obs)
	if err != nil {
		t.Fatalf("marshal observation: %v", err)
	}
	var back events.MCPToolObservation
	if err := strictjson.Unmarshal(b, &back); err != nil {
		t.Errorf("observation does not decode strictly: %v\n%s", err, b)
	}
	if _, err := byName["echo"].Execute(context.Background(), &events.ThinkAction{Thought: "x"}); err == nil {
		t.Errorf("Execute with a ThinkAction should fail")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := byName["echo"].Execute(ctx, act); err == nil {
		t.Errorf("Execute with a cancelled context should return its error")
	}
}
