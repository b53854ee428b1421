package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdpage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/v1wire"
)

// ACS's own web UI (package web), end to end: `acs serve` with the
// scripted LLM and headless Chromium, one browser signed in once through
// the one-time link, the subtests in order on one tab. Every wait is for a
// condition with a deadline; a failing subtest saves a screenshot in its
// artifact directory (kept with go test -artifacts).
//
// ACS_UPDATE_SCREENSHOT=1 writes the conversation view's screenshot to
// docs/conversation.png (the README shows it).

// uiScript is the scripted LLM, matched by a tag in the user's message.
func uiScript() []llmtest.Reply {
	return []llmtest.Reply{
		{MatchText: "tag-hello", Text: "Let me look around.", ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{
			"command": "echo shell says hi && ls", "security_risk": "LOW", "summary": "say hi"}}}},
		{MatchText: "tag-hello", Respond: func(req *llmtest.Request) llmtest.Reply {
			path := "/missing-working-directory/notes.md"
			if wd := workDirRE.FindStringSubmatch(req.SystemText()); wd != nil {
				path = filepath.Join(wd[1], "notes.md")
			}
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "file_editor", Arguments: map[string]any{
				"command": "create", "path": path, "file_text": "# Notes\n\nThe agent was here.\n", "summary": "write notes"}}}}
		}},
		{MatchText: "tag-hello", ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "Said hi and wrote notes.md."}}}},
		{MatchText: "tag-follow", Text: "Follow-up received: all good."},
		// A slow LLM keeps the agent running until the user stops it.
		{MatchText: "tag-slow", Delay: 90 * time.Second, Text: "Too late."},
		{MatchText: "tag-confirm", ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{
			"command": "echo confirmed-run", "security_risk": "LOW", "summary": "needs approval"}}}},
		{MatchText: "tag-confirm", ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "Ran after approval."}}}},
		{Text: "Done.", Repeat: true},
	}
}

// ui is the browser tab the subtests drive.
type ui struct {
	s   *acsServe
	ctx context.Context
	c   *client.Client
}

func (u *ui) shot(t *testing.T) {
	png, err := chromedp.Run(u.ctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Logf("no screenshot: %v", err)
		return
	}
	p := filepath.Join(t.ArtifactDir(), "failure.png")
	if err := os.WriteFile(p, png, 0o644); err == nil {
		t.Logf("screenshot: %s", p)
	}
}

// fatal saves a screenshot, then fails with the page's text.
func (u *ui) fatal(t *testing.T, format string, args ...any) {
	t.Helper()
	u.shot(t)
	text, _ := chromedp.Run(u.ctx, chromedp.Evaluate[string](`location.pathname + " (" + (document.querySelector("main").dataset.pollError || "") + ")\n" + (document.body ? document.body.innerText : "")`))
	t.Fatalf("%s\npage: %s", fmt.Sprintf(format, args...), text)
}

// js evaluates a script (awaiting its promise).
func js[T any](t *testing.T, u *ui, script string) T {
	t.Helper()
	v, err := chromedp.Run(u.ctx, chromedp.Evaluate[T](script, chromedp.EvalAwaitPromise))
	if err != nil {
		u.fatal(t, "evaluate %s: %v", script, err)
	}
	return v
}

// until waits for a script to answer true.
func (u *ui) until(t *testing.T, d time.Duration, what, script string) {
	t.Helper()
	if !testwait.Until(d, func() bool {
		ok, err := chromedp.Run(u.ctx, chromedp.Evaluate[bool](script))
		return err == nil && ok
	}) {
		u.fatal(t, "waited %v for %s", d, what)
	}
}

// text is the innerText of the first element matching css ("" if none).
func (u *ui) text(t *testing.T, css string) string {
	t.Helper()
	return js[string](t, u, fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ""`, css))
}

// untilText waits for the element matching css to contain want.
func (u *ui) untilText(t *testing.T, d time.Duration, css, want string) {
	t.Helper()
	u.until(t, d, fmt.Sprintf("%s to show %q", css, want),
		fmt.Sprintf(`((document.querySelector(%q) || {}).innerText || "").includes(%q)`, css, want))
}

// click waits for an enabled element matching css and clicks it.
func (u *ui) click(t *testing.T, css string) {
	t.Helper()
	u.until(t, 20*time.Second, "a clickable "+css,
		fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e || e.disabled) return false; e.click(); return true; })()`, css))
}

// fillIn sets a form control's value as typing would.
func (u *ui) fillIn(t *testing.T, css, value string) {
	t.Helper()
	u.until(t, 20*time.Second, "the field "+css, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false;
  e.value = %q; e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true})); return true; })()`, css, value))
}

// open navigates to a path of the UI and waits for its main heading.
func (u *ui) open(t *testing.T, path, heading string) {
	t.Helper()
	if err := chromedp.Do(u.ctx, chromedp.Navigate(u.s.url+path)); err != nil {
		u.fatal(t, "navigate to %s: %v", path, err)
	}
	u.untilText(t, 20*time.Second, "main h1", heading)
}

// startFromUI fills in the new-conversation form and waits for the
// conversation page: its id.
func (u *ui) startFromUI(t *testing.T, message string) string {
	t.Helper()
	u.open(t, "/conversations/new", "New conversation")
	u.fillIn(t, "#message", message)
	u.click(t, "#start")
	u.until(t, 90*time.Second, "the conversation page", `/^\/conversations\/[0-9a-f-]{8,}$/.test(location.pathname) && !!document.querySelector("#events")`)
	return strings.TrimPrefix(js[string](t, u, `location.pathname`), "/conversations/")
}

func TestWebUI(t *testing.T) {
	llm := llmtest.New(uiScript()...)
	t.Cleanup(llm.Close) // after acs serve stopped (cleanups run last first)
	s := startServe(t, t.TempDir(), llm.URL)
	testwait.For(t, 30*time.Second, "the sign-in link", func() bool { return linkRE.MatchString(s.log.String()) })
	// One tab for every subtest; each wait has its own deadline.
	u := &ui{s: s, c: s.api(apiKey), ctx: uiTab(t)}
	violations := watchCSP(t, u.ctx)

	t.Run("SignIn", func(t *testing.T) {
		if err := chromedp.Do(u.ctx, chromedp.EmulateViewport(1200, 900), chromedp.Navigate(linkRE.FindString(s.log.String())+"&next=/")); err != nil {
			u.fatal(t, "open the sign-in link: %v", err)
		}
		u.untilText(t, 20*time.Second, "#who", "signed in as admin")
		u.untilText(t, 20*time.Second, "main h1", "Conversations")
		if loc := js[string](t, u, `location.pathname`); loc != "/" {
			u.fatal(t, "after the link: at %s", loc)
		}
	})

	var helloID string
	t.Run("StartWatchReadyAndFinish", func(t *testing.T) {
		u.open(t, "/conversations/new", "New conversation")
		u.fillIn(t, "#message", "tag-hello: say hi in the shell and write notes.md")
		u.click(t, "#add-secret")
		u.fillIn(t, ".secret-name", "UI_TOKEN")
		u.fillIn(t, ".secret-value", "s3cret-from-the-ui")
		// Record every rendering of the start progress (the page moves on
		// to the conversation once READY).
		js[bool](t, u, `(window.progressSeen = [], new MutationObserver((records) => {
  for (const r of records) for (const n of r.addedNodes) if (n.textContent) window.progressSeen.push(n.textContent);
}).observe(document.querySelector("main"), {subtree: true, childList: true}), true)`)
		u.click(t, "#start")
		// The start task's steps, live, then the conversation page.
		u.until(t, 60*time.Second, "the start progress", `location.search.startsWith("?task=") || location.pathname !== "/conversations/new"`)
		u.until(t, 90*time.Second, "the conversation page", `/^\/conversations\/[0-9a-f-]{8,}$/.test(location.pathname) && !!document.querySelector("#events")`)
		helloID = strings.TrimPrefix(js[string](t, u, `location.pathname`), "/conversations/")
		seen := js[string](t, u, `window.progressSeen.join("\n----\n")`)
		for _, want := range []string{"WORKING", "WAITING_FOR_SANDBOX", "STARTING_CONVERSATION", "READY", "Placement: NO_GROUPING"} {
			if !strings.Contains(seen, want) {
				u.fatal(t, "the start progress never showed %q:\n%s", want, seen)
			}
		}
		conv, err := u.c.GetConversation(t.Context(), helloID)
		if err != nil {
			t.Fatal(err)
		}
		// Its start task went through every step to READY.
		tasks, err := u.c.SearchStartTasks(t.Context(), nil)
		if err != nil || len(tasks.Items) == 0 || tasks.Items[0].Status != "READY" {
			t.Fatalf("start tasks %+v %v", tasks, err)
		}
		u.untilText(t, 60*time.Second, "#status", "finished")
		u.untilText(t, 20*time.Second, "#events", "Said hi and wrote notes.md.")
		// The secret was sent once: it is nowhere on the page.
		if body := js[string](t, u, `document.documentElement.outerHTML`); strings.Contains(body, "s3cret-from-the-ui") {
			u.fatal(t, "the page holds the secret's value")
		}
		if conv.SandboxStatus != "RUNNING" {
			t.Fatalf("conversation %+v", conv)
		}
	})

	t.Run("TerminalCommandAndOutput", func(t *testing.T) {
		u.until(t, 20*time.Second, "the terminal action with its output", `[...document.querySelectorAll('#events li[data-tool="terminal"]')].some(li =>
  li.querySelector(".command").innerText.includes("$ echo shell says hi && ls") && (li.querySelector(".output") || {innerText: ""}).innerText.includes("shell says hi"))`)
		// The file edit is a diff; the workspace's change is listed, and its diff opens.
		u.untilText(t, 20*time.Second, `#events li[data-tool="file_editor"] .diff`, "+ The agent was here.")
		u.untilText(t, 20*time.Second, "#changes", "notes.md")
		u.click(t, "#changes button")
		u.untilText(t, 20*time.Second, "#file-view", "+ # Notes")
		if os.Getenv("ACS_UPDATE_SCREENSHOT") == "1" {
			if err := chromedp.Do(u.ctx, chromedp.EmulateViewport(1100, 1000)); err != nil {
				t.Fatal(err)
			}
			js[bool](t, u, `(window.scrollTo(0, 0), document.activeElement.blur(), true)`)
			png, err := chromedp.Run(u.ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("..", "..", "docs", "conversation.png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := chromedp.Do(u.ctx, chromedp.EmulateViewport(1200, 900)); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("SendFollowUp", func(t *testing.T) {
		u.fillIn(t, "#follow-up textarea", "tag-follow: anything else?")
		u.click(t, "#send")
		u.untilText(t, 60*time.Second, "#events", "Follow-up received: all good.")
		u.until(t, 10*time.Second, "the user's message once", `[...document.querySelectorAll("#events li.user")].filter(li => li.innerText.includes("tag-follow")).length === 1`)
		// Every event is shown once (history and socket deduplicated).
		if dup := js[int](t, u, `(() => { const ids = [...document.querySelectorAll("#events [data-id]")].map(e => e.dataset.id); return ids.length - new Set(ids).size; })()`); dup != 0 {
			u.fatal(t, "%d events shown twice", dup)
		}
	})

	var slowID string
	t.Run("StopRunningAgent", func(t *testing.T) {
		id := u.startFromUI(t, "tag-slow: think for a long time")
		slowID = id
		u.untilText(t, 60*time.Second, "#status", "running")
		u.click(t, "#stop")
		u.untilText(t, 30*time.Second, "#status", "paused")
		testwait.For(t, 30*time.Second, "the record to say paused", func() bool {
			c, err := u.c.GetConversation(t.Context(), id)
			return err == nil && deref(c.ExecutionStatus) == "paused"
		})
		u.untilText(t, 30*time.Second, "#events", "Paused by the user")
		u.until(t, 10*time.Second, "a Resume button", `!!document.querySelector("#resume")`)
	})

	t.Run("ApproveConfirmation", func(t *testing.T) {
		u.open(t, "/settings/app", "Settings")
		u.until(t, 10*time.Second, "the confirmation box", `!!document.querySelector("#confirm-actions")`)
		js[bool](t, u, `(document.querySelector("#confirm-actions").checked = true)`)
		u.click(t, "#save")
		u.untilText(t, 20*time.Second, "#settings-app", "Saved.")
		t.Cleanup(func() {
			u.c.UpdateSettings(context.Background(), &v1wire.SettingsRequest{ConfirmationPolicy: client.Set(map[string]any{"kind": "NeverConfirm"})})
		})
		id := u.startFromUI(t, "tag-confirm: run something that needs approval")
		u.untilText(t, 60*time.Second, "#confirmation", "echo confirmed-run")
		if out := u.text(t, `#events li[data-tool="terminal"] .output`); out != "" {
			u.fatal(t, "the action ran before approval: %q", out)
		}
		u.click(t, "#approve")
		u.untilText(t, 60*time.Second, `#events li[data-tool="terminal"] .output`, "confirmed-run")
		u.untilText(t, 60*time.Second, "#status", "finished")
		testwait.For(t, 30*time.Second, "the record to say finished", func() bool {
			c, err := u.c.GetConversation(t.Context(), id)
			return err == nil && deref(c.ExecutionStatus) == "finished"
		})
		u.untilText(t, 10*time.Second, "#events", "Ran after approval.")
	})

	t.Run("GroupingStrategySaveChanges", func(t *testing.T) {
		u.open(t, "/settings/app", "Settings")
		u.untilText(t, 10*time.Second, "label[for=grouping]", "Sandbox Grouping Strategy")
		labels := js[string](t, u, `[...document.querySelectorAll("#grouping option")].map(o => o.textContent).join("|")`)
		if labels != "No grouping|Group by newest|Least recently used|Fewest conversations|Add to any" {
			u.fatal(t, "grouping labels %q", labels)
		}
		js[string](t, u, `(document.querySelector("#grouping").value = "FEWEST_CONVERSATIONS")`)
		if btn := u.text(t, "#save"); btn != "Save Changes" {
			u.fatal(t, "the button reads %q", btn)
		}
		u.click(t, "#save")
		u.untilText(t, 20*time.Second, "#settings-app", "Saved.")
		st, err := u.c.GetSettings(t.Context())
		if err != nil || st.SandboxGroupingStrategy != "FEWEST_CONVERSATIONS" {
			t.Fatalf("GET /api/v1/settings after Save Changes: %+v %v", st, err)
		}
		// The page shows the saved value when opened again.
		u.open(t, "/settings/app", "Settings")
		u.until(t, 10*time.Second, "the saved strategy selected", `(document.querySelector("#grouping") || {}).value === "FEWEST_CONVERSATIONS"`)
	})

	t.Run("PauseAndResumeSandbox", func(t *testing.T) {
		conv, err := u.c.GetConversation(t.Context(), helloID)
		if err != nil {
			t.Fatal(err)
		}
		row := fmt.Sprintf(`#sandboxes tr[data-id=%q]`, conv.SandboxID)
		u.open(t, "/sandboxes", "Sandboxes")
		u.untilText(t, 20*time.Second, row, "RUNNING")
		u.until(t, 5*time.Second, "the attached conversation listed", fmt.Sprintf(`!!document.querySelector(%q)`, row+` a[href="/conversations/`+helloID+`"]`))
		u.click(t, row+" button.pause")
		u.untilText(t, 30*time.Second, row, "PAUSED")
		if sb, err := u.c.GetSandbox(t.Context(), conv.SandboxID); err != nil || sb.Status != "PAUSED" {
			t.Fatalf("after Pause: %+v %v", sb, err)
		}
		u.click(t, row+" button.resume")
		u.untilText(t, 60*time.Second, row, "RUNNING")
		testwait.For(t, 30*time.Second, "the sandbox to run again", func() bool {
			sb, err := u.c.GetSandbox(t.Context(), conv.SandboxID)
			return err == nil && sb.Status == "RUNNING"
		})
	})

	// The page's socket drops when the sandbox pauses; after a resume it
	// reconnects to the new agent server and shows what happened since,
	// each event once.
	t.Run("ReconnectsWithoutGapsOrDuplicates", func(t *testing.T) {
		conv, err := u.c.GetConversation(t.Context(), helloID)
		if err != nil {
			t.Fatal(err)
		}
		u.open(t, "/conversations/"+helloID, "tag-hello")
		u.untilText(t, 20*time.Second, "#events", "Follow-up received: all good.")
		if err := u.c.PauseSandbox(t.Context(), conv.SandboxID); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, 30*time.Second, "the conversation to read PAUSED", func() bool {
			c, err := u.c.GetConversation(t.Context(), helloID)
			return err == nil && c.SandboxStatus == "PAUSED"
		})
		u.untilText(t, 30*time.Second, "#status", "PAUSED")
		if err := u.c.ResumeSandbox(t.Context(), conv.SandboxID); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, 60*time.Second, "the sandbox to run again", func() bool {
			c, err := u.c.GetConversation(t.Context(), helloID)
			return err == nil && c.SandboxStatus == "RUNNING" && c.ConversationURL != nil
		})
		res, err := u.c.SendMessage(t.Context(), helloID, &v1wire.SendMessageRequest{Role: "user", Run: true,
			Content: []events.Content{&events.TextContent{Text: "tag-reconnect: still there?"}}})
		if err != nil || !res.Success {
			t.Fatalf("send-message: %+v %v", res, err)
		}
		u.untilText(t, 60*time.Second, "#events", "tag-reconnect: still there?")
		u.until(t, 60*time.Second, "the agent's answer after the reconnect", `[...document.querySelectorAll("#events li.agent-msg")].some(li => li.innerText.includes("Done."))`)
		if dup := js[int](t, u, `(() => { const ids = [...document.querySelectorAll("#events [data-id]")].map(e => e.dataset.id); return ids.length - new Set(ids).size; })()`); dup != 0 {
			u.fatal(t, "%d events shown twice", dup)
		}
		// Everything the V1 events search has is on the page.
		var missing []string
		for ev, err := range u.c.Events(t.Context(), helloID, nil) {
			if err != nil {
				t.Fatal(err)
			}
			switch ev.Kind() {
			case "MessageEvent", "ActionEvent", "ObservationEvent":
				if !js[bool](t, u, fmt.Sprintf(`!!document.querySelector('#events [data-id=%q]')`, ev.EventBase().ID)) {
					missing = append(missing, ev.Kind()+" "+ev.EventBase().ID)
				}
			}
		}
		if len(missing) > 0 {
			u.fatal(t, "events not on the page: %v", missing)
		}
	})

	// Deleting a sandbox warns, and leaves its conversation read-only:
	// the transcript with the reason, and no controls that would fail.
	t.Run("DeleteSandboxLeavesConversationReadOnly", func(t *testing.T) {
		if slowID == "" {
			t.Fatal("no conversation from StopRunningAgent")
		}
		conv, err := u.c.GetConversation(t.Context(), slowID)
		if err != nil {
			t.Fatal(err)
		}
		row := fmt.Sprintf(`#sandboxes tr[data-id=%q]`, conv.SandboxID)
		u.open(t, "/sandboxes", "Sandboxes")
		u.click(t, row+" button.delete")
		u.untilText(t, 10*time.Second, "#sandboxes .confirm-row", "makes its conversation read-only (MISSING)")
		u.click(t, "#sandboxes .confirm-row button.confirm-delete")
		u.untilText(t, 30*time.Second, row, "MISSING")
		u.open(t, "/conversations/"+slowID, "tag-slow")
		u.untilText(t, 20*time.Second, "#read-only", "MISSING")
		u.untilText(t, 10*time.Second, "#events", "tag-slow: think for a long time")
		if n := js[int](t, u, `document.querySelectorAll("#follow-up, #stop, #resume, #resume-sandbox, #approve, #refresh-changes").length`); n != 0 {
			u.fatal(t, "a read-only conversation shows %d controls that would fail", n)
		}
	})

	// At phone width nothing needs sideways scrolling.
	t.Run("PhoneWidth", func(t *testing.T) {
		if err := chromedp.Do(u.ctx, chromedp.EmulateViewport(390, 844)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { chromedp.Do(u.ctx, chromedp.EmulateViewport(1200, 900)) })
		for _, p := range []struct{ path, heading, ready string }{
			{"/conversations", "Conversations", "#conversations"},
			{"/conversations/" + helloID, "tag-hello", "#events .output"},
			{"/conversations/new", "New conversation", "#start"},
			{"/sandboxes", "Sandboxes", "#sandboxes"},
			{"/settings/app", "Settings", "#grouping"},
		} {
			u.open(t, p.path, p.heading)
			u.until(t, 20*time.Second, p.ready, fmt.Sprintf(`!!document.querySelector(%q)`, p.ready))
			if w := js[string](t, u, `document.documentElement.scrollWidth + " > " + window.innerWidth`); js[bool](t, u, `document.documentElement.scrollWidth > window.innerWidth`) {
				u.fatal(t, "%s scrolls sideways at phone width: %s", p.path, w)
			}
		}
	})

	// The colours follow the system's light or dark preference.
	t.Run("DarkAndLight", func(t *testing.T) {
		background := map[string]string{}
		for _, scheme := range []string{"dark", "light"} {
			if _, err := chromedp.Call(u.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
				t.Fatal(err)
			}
			u.open(t, "/settings/app", "Settings")
			background[scheme] = js[string](t, u, `getComputedStyle(document.body).backgroundColor`)
		}
		if background["dark"] != "rgb(13, 17, 23)" || background["light"] != "rgb(255, 255, 255)" {
			u.fatal(t, "backgrounds %v", background)
		}
	})

	t.Run("RevokeKey", func(t *testing.T) {
		u.open(t, "/settings/keys", "Settings")
		u.fillIn(t, "#key-name", "ui-made")
		u.click(t, "#create-key")
		u.until(t, 20*time.Second, "the new key, shown once", `(document.querySelector("#new-key .secret-once") || {innerText: ""}).innerText.length > 10`)
		key := u.text(t, "#new-key .secret-once")
		if _, err := s.api(key).Me(t.Context()); err != nil {
			t.Fatalf("the key the page showed does not work: %v", err)
		}
		u.click(t, `#keys tr[data-name="ui-made"] button.revoke`)
		u.until(t, 20*time.Second, "the key to leave the list", `!document.querySelector('#keys tr[data-name="ui-made"]')`)
		if _, err := s.api(key).Me(t.Context()); client.StatusOf(err) != 401 {
			t.Fatalf("a revoked key answers %v, want 401", err)
		}
		// Opened again, the page never shows a key's value.
		u.open(t, "/settings/keys", "Settings")
		u.untilText(t, 10*time.Second, "#key-list", "Prefix")
		if strings.Contains(js[string](t, u, `document.body.innerText`), key) {
			u.fatal(t, "the key list shows a key's value")
		}
	})

	// Every page above worked within the UI's Content-Security-Policy.
	t.Run("NoCSPViolations", func(t *testing.T) {
		if v := violations(); len(v) != 0 {
			t.Fatalf("the UI's policy refused:\n%s", strings.Join(v, "\n"))
		}
	})
}

// watchCSP records every Content-Security-Policy violation in the tab's
// documents from now on; the returned func lists them.
func watchCSP(t *testing.T, ctx context.Context) func() []string {
	var mu sync.Mutex
	var seen []string
	report := func(_ context.Context, v string) (chromedp.Void, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, v)
		return chromedp.Void{}, nil
	}
	const listen = `document.addEventListener("securitypolicyviolation", (e) =>
  window.acsCSPViolation(location.pathname + ": " + e.effectiveDirective + " refused " + e.blockedURI.split("?")[0]));`
	err := chromedp.Do(ctx, chromedp.ExposeFunc("acsCSPViolation", report), chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, cdpage.AddScriptToEvaluateOnNewDocument, cdpage.AddScriptToEvaluateOnNewDocumentParams{Source: listen})
		return err
	}))
	if err != nil {
		t.Fatalf("watch CSP violations: %v", err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// uiTab is a tab of a fresh headless Chromium, for a whole test.
func uiTab(t *testing.T) context.Context {
	path := needChromium(t)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(path),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("hide-scrollbars", true), chromedp.UserDataDir(t.TempDir()))
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return tab
}
