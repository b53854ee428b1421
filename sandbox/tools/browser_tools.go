package tools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/browser"
)

// browserTools are the tools of browser_tool_set, in the order the LLM sees
// them. Each is described in its own file.
var browserTools = []func() base{
	browserNavigate, browserClick, browserType, browserGetState, browserGetContent,
	browserScroll, browserGoBack, browserListTabs, browserSwitchTab, browserCloseTab,
	browserGetStorage, browserSetStorage, browserStartRecording, browserStopRecording,
}

// tabIDLimits are the limits the tab tools' descriptions state.
var tabIDLimits = struct{ TabIDLen int }{browser.TabIDLen}

// sharedBrowser is the Browser of one conversation's browser tool set,
// closed exactly once: by the first Close of any of its tools (tools are
// closed together when the conversation ends, and Build can drop a tool
// whose name was already taken, so no tool can be relied on to be last).
type sharedBrowser struct {
	b    *browser.Browser
	once sync.Once
	err  error
}

func (s *sharedBrowser) close() error {
	s.once.Do(func() { s.err = s.b.Close() })
	return s.err
}

// browserTool is one tool of browser_tool_set; all of them pass their
// action to the shared Browser.
type browserTool struct {
	base
	shared *sharedBrowser
}

func (t *browserTool) Execute(ctx context.Context, a events.Action) (events.Observation, error) {
	obs, err := t.shared.b.Execute(ctx, a)
	if err != nil {
		return nil, err
	}
	return obs, nil
}

func (t *browserTool) Close() error { return t.shared.close() }

// newBrowserToolSet builds the browser tools around one Browser, which
// starts Chromium only when a tool is first used.
func newBrowserToolSet(_ context.Context, env Env, _ json.RawMessage) ([]Tool, error) {
	saveDir := "" // a temporary directory
	if env.StateDir != "" {
		saveDir = filepath.Join(env.StateDir, "browser")
	}
	shared := &sharedBrowser{b: browser.New(browser.Options{SaveDir: saveDir, Mask: env.Mask})}
	var out []Tool
	for _, describe := range browserTools {
		out = append(out, &browserTool{base: describe(), shared: shared})
	}
	return out, nil
}

func init() { RegisterSet("browser_tool_set", newBrowserToolSet) }
