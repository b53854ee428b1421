package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/tools"
	"github.com/acs-project/acs/sandbox/tools/browser"
)

var browserToolNames = []string{
	"browser_navigate", "browser_click", "browser_type", "browser_get_state", "browser_get_content",
	"browser_scroll", "browser_go_back", "browser_list_tabs", "browser_switch_tab", "browser_close_tab",
	"browser_get_storage", "browser_set_storage", "browser_start_recording", "browser_stop_recording",
}

func buildBrowserTools(t *testing.T, env tools.Env) ([]tools.Tool, map[string]tools.Tool) {
	t.Helper()
	ts, err := tools.Build(context.Background(), env, []agentwire.ToolRef{{Name: "browser_tool_set"}})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	t.Cleanup(func() { tools.CloseAll(ts) })
	byName := map[string]tools.Tool{}
	for _, tl := range ts {
		byName[tl.Name()] = tl
	}
	return ts, byName
}

func TestBrowserToolSetBuild(t *testing.T) {
	env := tools.Env{ConversationID: "c1", WorkDir: t.TempDir(), StateDir: t.TempDir()}
	ts, byName := buildBrowserTools(t, env)
	var browserTools int
	for _, tl := range ts {
		if strings.HasPrefix(tl.Name(), "browser_") {
			browserTools++
		}
	}
	if browserTools != len(browserToolNames) {
		t.Errorf("%d browser tools built, want %d", browserTools, len(browserToolNames))
	}
	kinds := map[events.ToolKind]bool{}
	for _, name := range browserToolNames {
		t.Run(name, func(t *testing.T) {
			tl, ok := byName[name]
			if !ok {
				t.Fatalf("tool %s not built", name)
			}
			spec, ok := events.ToolSpecByName(name)
			if !ok {
				t.Fatalf("no spec for %s", name)
			}
			if kinds[spec.Kind] {
				t.Errorf("kind %s twice", spec.Kind)
			}
			kinds[spec.Kind] = true
			if tl.ActionKind() != spec.ActionType || tl.ReadOnly() != spec.ReadOnly {
				t.Errorf("action kind %q read-only %v; spec %+v", tl.ActionKind(), tl.ReadOnly(), spec)
			}
			def := tl.Definition()
			if def.Kind != spec.Kind || def.Title != name || def.ActionType != spec.ActionType ||
				def.ObservationType != "BrowserObservation" {
				t.Errorf("definition %+v, spec %+v", def, spec)
			}
			if len(strings.TrimSpace(def.Description)) < 40 {
				t.Errorf("description too short: %q", def.Description)
			}
			params := tl.Parameters()
			if params["type"] != "object" {
				t.Errorf("parameters type %v", params["type"])
			}
			props, _ := params["properties"].(map[string]any)
			req, _ := params["required"].([]string)
			for _, r := range req {
				if _, ok := props[r]; !ok {
					t.Errorf("required %q is not a property", r)
				}
			}
			if _, err := json.Marshal(params); err != nil {
				t.Errorf("parameters are not JSON: %v", err)
			}
			if p, ok := props["index"].(map[string]any); ok {
				if p["type"] != "integer" || p["minimum"] != 0 {
					t.Errorf("index schema %v", p)
				}
			}
			if p, ok := props["tab_id"].(map[string]any); ok {
				if p["type"] != "string" || p["minLength"] != 4 || p["maxLength"] != 4 {
					t.Errorf("tab_id schema %v", p)
				}
			}
		})
	}
	dir, _ := byName["browser_scroll"].Parameters()["properties"].(map[string]any)["direction"].(map[string]any)
	if fmt.Sprint(dir["enum"]) != "[up down]" {
		t.Errorf("direction schema %v", dir)
	}
	ss, _ := byName["browser_set_storage"].Parameters()["properties"].(map[string]any)["storage_state"].(map[string]any)
	ssProps, _ := ss["properties"].(map[string]any)
	if ss["type"] != "object" || ssProps["cookies"] == nil || ssProps["origins"] == nil {
		t.Errorf("storage_state schema %v", ss)
	}
	// Closing the tools of a never-used set is cheap and safe, in any order,
	// any number of times.
	for _, tl := range ts {
		if err := tl.Close(); err != nil {
			t.Errorf("close %s: %v", tl.Name(), err)
		}
	}
}

func TestBrowserToolSetExecute(t *testing.T) {
	if _, err := browser.FindChromium(); err != nil {
		if os.Getenv("ACS_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("no Chromium binary found (%v), and ACS_REQUIRE_CHROMIUM=1 requires one", err)
		}
		t.Skipf("skipping: no Chromium binary found (%v)", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Tool page</title><h1>Hi s3cr3t</h1><a href="/next">Next page</a><input name=q>`)
	})
	srv := httptest.NewUnstartedServer(mux)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.Start()
	defer srv.Close()

	env := tools.Env{ConversationID: "c1", WorkDir: t.TempDir(), StateDir: t.TempDir(),
		Mask: func(s string) string { return strings.ReplaceAll(s, "s3cr3t", "<masked>") }}
	ts, byName := buildBrowserTools(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	obs, err := byName["browser_navigate"].Execute(ctx, &events.BrowserNavigateAction{URL: srv.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	bo, ok := obs.(*events.BrowserObservation)
	if !ok || bo.IsError || !strings.Contains(bo.Text(), "Navigated to "+srv.URL) {
		t.Fatalf("navigate: %T %+v", obs, obs)
	}
	obs, err = byName["browser_get_state"].Execute(ctx, &events.BrowserGetStateAction{})
	if err != nil {
		t.Fatal(err)
	}
	text := obs.Common().Text()
	for _, want := range []string{"Page title: Tool page", `[0]<a href="/next">Next page</a>`, "[1]<input type=text name=q>"} {
		if !strings.Contains(text, want) {
			t.Errorf("get_state lacks %q:\n%s", want, text)
		}
	}
	obs, err = byName["browser_get_content"].Execute(ctx, &events.BrowserGetContentAction{})
	if err != nil {
		t.Fatal(err)
	}
	if text := obs.Common().Text(); !strings.Contains(text, "Hi <masked>") || strings.Contains(text, "s3cr3t") {
		t.Errorf("content not masked:\n%s", text)
	}

	// The tools share one browser, closed once: after the first Close, every
	// tool reports a Go error (a nil Observation, not a typed nil).
	tools.CloseAll(ts)
	obs, err = byName["browser_list_tabs"].Execute(ctx, &events.BrowserListTabsAction{})
	if err == nil || obs != nil {
		t.Fatalf("after Close: %v, %v", obs, err)
	}
}
