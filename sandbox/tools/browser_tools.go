package tools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/browser"
)

const browserNavigateDescription = `Navigate to a URL in the browser.

This tool opens a web page in the current tab, or in a new tab (which becomes the current tab), and waits for it to load.

Parameters:
- url: The URL to navigate to (required). A bare host such as "example.com" gets https://.
- new_tab: Whether to open the URL in a new tab (optional, default: false)

Examples:
- Navigate to Google: url="https://www.google.com"
- Open GitHub in a new tab: url="https://github.com", new_tab=true

After navigating, call browser_get_state to see the page's interactive elements, or browser_get_content to read its text.`

const browserClickDescription = `Click an element on the page by its index.

Use this tool to click interactive elements such as buttons, links and form controls. The index comes from the output of browser_get_state. The element is scrolled into view first.

Parameters:
- index: The index of the element to click (from browser_get_state)
- new_tab: Whether to open the link in a new tab (optional, default: false). The new tab becomes the current tab.

If the click opens a new tab (for example a link with target=_blank), that tab becomes the current tab.
Important: only use indices from your latest browser_get_state output. Indices change when the page changes; if an index is not found, call browser_get_state again.`

const browserTypeDescription = `Type text into an input field, textarea or contenteditable element.

The element is focused and cleared, then the text is typed (input events fire as if a user typed). For a select element, the option with that text or value is chosen.

Parameters:
- index: The index of the element to type into (from browser_get_state)
- text: The text to type

Important: only use indices from your latest browser_get_state output. To submit a form, click its submit button afterwards.`

const browserGetStateDescription = `Get the current state of the page: its URL and title, the open tabs, and the interactive elements (links, buttons, inputs, ...) numbered with the indices that browser_click and browser_type take.

Each element is shown as a compact line such as [3]<input type=text name=q placeholder="Search"> or [0]<a href="/about">About us</a>.

Parameters:
- include_screenshot: Whether to include a screenshot of the current viewport (optional, default: false)

Call it after every navigation or page change: indices are only valid until the page changes.`

const browserGetContentDescription = `Extract the page's visible text as readable markdown-like text (headings, paragraphs, list items, table rows).

Use this tool to read the page. At most 30000 characters are returned per call; when more remain, the output says so and gives the start_from_char to continue with.

Parameters:
- extract_links: Whether to include links as [text](url) (optional, default: false)
- start_from_char: Character offset to start from (optional, default: 0)`

const browserScrollDescription = `Scroll the page up or down by one viewport.

Use this tool to bring content outside the viewport into view (for example before taking a screenshot). The output tells the new scroll position and whether the top or bottom was reached.

Parameters:
- direction: "up" or "down" (optional, default: "down")`

const browserGoBackDescription = `Go back to the previous page in the current tab's history, like the browser's back button.

The output tells the URL of the page you are back on.`

const browserListTabsDescription = `List the open browser tabs.

Each tab is shown with its 4-character tab id, its URL and title; the current tab is marked. Use the tab id with browser_switch_tab and browser_close_tab.`

const browserSwitchTabDescription = `Switch to another open tab, which becomes the current tab for all further browser actions.

Parameters:
- tab_id: The 4-character id of the tab (from browser_list_tabs or browser_get_state)`

const browserCloseTabDescription = `Close a browser tab.

Closing the current tab makes another open tab current. Closing the last tab leaves an empty (about:blank) tab.

Parameters:
- tab_id: The 4-character id of the tab to close (from browser_list_tabs or browser_get_state)`

const browserGetStorageDescription = `Get the browser's storage state: all cookies and the localStorage of the open pages' origins, as JSON in the Playwright storage-state format:
{"cookies": [{"name", "value", "domain", "path", "expires", "httpOnly", "secure", "sameSite"}], "origins": [{"origin", "localStorage": [{"name", "value"}]}]}

Use it to save a logged-in session, and browser_set_storage to restore it later.`

const browserSetStorageDescription = `Set cookies and localStorage in the browser from a storage state in the Playwright format (as returned by browser_get_storage).

Parameters:
- storage_state: An object with "cookies" (a list of {name, value, domain, path, expires, httpOnly, secure, sameSite}; "url" may replace domain and path) and "origins" (a list of {origin, localStorage: [{name, value}]})

Pages loaded afterwards see the cookies and items; reload a page that is already open.`

const browserStartRecordingDescription = `Start recording the browser session as a screencast: the frames of the current tab (following tab switches) are saved as images, with an index of their timestamps and URLs.

Call browser_stop_recording to finish and get the directory holding the recording.`

const browserStopRecordingDescription = `Stop the recording started with browser_start_recording.

The output gives the directory holding the frames and their index.json (timestamps and URLs), and the number of frames.`

func indexProp(desc string) map[string]any {
	return map[string]any{"type": "integer", "minimum": 0, "description": desc}
}

func tabIDProp(desc string) map[string]any {
	return map[string]any{"type": "string", "minLength": 4, "maxLength": 4, "description": desc}
}

// browserToolSpecs lists the tools of browser_tool_set: kind, description
// and parameters.
func browserToolSpecs() []base {
	return []base{
		{kind: "BrowserNavigateTool", description: browserNavigateDescription,
			params: object([]string{"url"}, map[string]any{
				"url":     prop("string", "The URL to navigate to"),
				"new_tab": prop("boolean", "Whether to open in a new tab. Default: false"),
			})},
		{kind: "BrowserClickTool", description: browserClickDescription,
			params: object([]string{"index"}, map[string]any{
				"index":   indexProp("The index of the element to click (from browser_get_state)"),
				"new_tab": prop("boolean", "Whether to open the link in a new tab. Default: false"),
			})},
		{kind: "BrowserTypeTool", description: browserTypeDescription,
			params: object([]string{"index", "text"}, map[string]any{
				"index": indexProp("The index of the input element (from browser_get_state)"),
				"text":  prop("string", "The text to type"),
			})},
		{kind: "BrowserGetStateTool", description: browserGetStateDescription,
			params: object(nil, map[string]any{
				"include_screenshot": prop("boolean", "Whether to include a screenshot of the current page. Default: false"),
			})},
		{kind: "BrowserGetContentTool", description: browserGetContentDescription,
			params: object(nil, map[string]any{
				"extract_links": prop("boolean", "Whether to include links in the content as [text](url). Default: false"),
				"start_from_char": map[string]any{"type": "integer", "minimum": 0,
					"description": "Character offset to start from in the page content. Default: 0"},
			})},
		{kind: "BrowserScrollTool", description: browserScrollDescription,
			params: object(nil, map[string]any{
				"direction": map[string]any{"type": "string", "enum": []string{"up", "down"},
					"description": "Direction to scroll: 'up' or 'down'. Default: 'down'"},
			})},
		{kind: "BrowserGoBackTool", description: browserGoBackDescription,
			params: object(nil, map[string]any{})},
		{kind: "BrowserListTabsTool", description: browserListTabsDescription,
			params: object(nil, map[string]any{})},
		{kind: "BrowserSwitchTabTool", description: browserSwitchTabDescription,
			params: object([]string{"tab_id"}, map[string]any{
				"tab_id": tabIDProp("4-character id of the tab to switch to (from browser_list_tabs)"),
			})},
		{kind: "BrowserCloseTabTool", description: browserCloseTabDescription,
			params: object([]string{"tab_id"}, map[string]any{
				"tab_id": tabIDProp("4-character id of the tab to close (from browser_list_tabs)"),
			})},
		{kind: "BrowserGetStorageTool", description: browserGetStorageDescription,
			params: object(nil, map[string]any{})},
		{kind: "BrowserSetStorageTool", description: browserSetStorageDescription,
			params: object([]string{"storage_state"}, map[string]any{
				"storage_state": map[string]any{
					"type":        "object",
					"description": "Storage state with 'cookies' and 'origins' (as returned by browser_get_storage)",
					"properties": map[string]any{
						"cookies": map[string]any{"type": "array", "description": "Cookies to set",
							"items": map[string]any{"type": "object", "properties": map[string]any{
								"name":     prop("string", "Cookie name"),
								"value":    prop("string", "Cookie value"),
								"url":      prop("string", "URL the cookie belongs to (instead of domain and path)"),
								"domain":   prop("string", "Cookie domain"),
								"path":     prop("string", "Cookie path"),
								"expires":  prop("number", "Expiry as seconds since the Unix epoch; -1 for a session cookie"),
								"httpOnly": prop("boolean", "HttpOnly flag"),
								"secure":   prop("boolean", "Secure flag"),
								"sameSite": map[string]any{"type": "string", "enum": []string{"Strict", "Lax", "None"}, "description": "SameSite policy"},
							}, "required": []string{"name", "value"}}},
						"origins": map[string]any{"type": "array", "description": "localStorage items per origin",
							"items": map[string]any{"type": "object", "properties": map[string]any{
								"origin": prop("string", "Origin, e.g. https://example.com"),
								"localStorage": map[string]any{"type": "array", "items": map[string]any{"type": "object",
									"properties": map[string]any{"name": prop("string", "Key"), "value": prop("string", "Value")},
									"required":   []string{"name", "value"}}},
							}, "required": []string{"origin", "localStorage"}}},
					},
				},
			})},
		{kind: "BrowserStartRecordingTool", description: browserStartRecordingDescription,
			params: object(nil, map[string]any{})},
		{kind: "BrowserStopRecordingTool", description: browserStopRecordingDescription,
			params: object(nil, map[string]any{})},
	}
}

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

// newBrowserToolSet builds the 14 browser tools around one Browser, which
// starts Chromium only when a tool is first used.
func newBrowserToolSet(_ context.Context, env Env, _ json.RawMessage) ([]Tool, error) {
	saveDir := "" // a temporary directory
	if env.StateDir != "" {
		saveDir = filepath.Join(env.StateDir, "browser")
	}
	shared := &sharedBrowser{b: browser.New(browser.Options{SaveDir: saveDir, Mask: env.Mask})}
	var out []Tool
	for _, spec := range browserToolSpecs() {
		out = append(out, &browserTool{base: spec, shared: shared})
	}
	return out, nil
}

func init() { RegisterSet("browser_tool_set", newBrowserToolSet) }
