package browser_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/browser"
)

const secret = "SECRET-TOKEN-4242"

// site serves the pages the tests browse.
func site(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	page := func(title, body string) string {
		return "<!doctype html><html><head><meta charset=utf-8><title>" + title + "</title></head><body>" + body + "</body></html>"
	}
	serve := func(path, title, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if path == "/" && r.URL.Path != "/" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, page(title, body))
		})
	}
	serve("/", "Home", `<h1>Welcome home</h1>
<p>Start here.</p>
<ul><li><a href="/about">About us</a></li><li><a href="/form">The form</a></li></ul>
<button id="b" onclick="document.getElementById('clicked').textContent='button was clicked'">Press me</button>
<button onclick="alert('Hello from alert'); document.getElementById('clicked').textContent='after alert'">Alert me</button>
<div id="clicked"></div>
<div style="display:none"><a href="/hidden">Hidden link</a></div>`)
	serve("/about", "About", `<h1>About us</h1><p>We make browsers click.</p><a href="/">Back home</a>`)
	serve("/form", "Form", `<h1>Search form</h1>
<form method="post" action="/submit">
<input type="text" name="q" placeholder="Search">
<input type="checkbox" name="c" id="c"><label for="c">Check</label>
<textarea name="t"></textarea>
<select name="s"><option value="r">Red</option><option value="b">Blue</option></select>
<div contenteditable="true" id="ed">old text</div>
<button type="submit">Send</button>
</form>`)
	mux.HandleFunc("/submit", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page("Result", "<h1>Result</h1><p id=r>You typed: "+html.EscapeString(r.FormValue("q"))+"</p>"+
			"<p>Text area: "+html.EscapeString(r.FormValue("t"))+"</p><p>Colour: "+html.EscapeString(r.FormValue("s"))+"</p>"))
	})
	serve("/blank", "Opener", `<p>Opens a tab.</p><a href="/about" target="_blank">About in a new tab</a>`)
	mux.HandleFunc("/storage", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "session_id", Value: "abc123", Path: "/"})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page("Storage", `<p>Storage set.</p><script>localStorage.setItem('token', 'xyz789')</script>`))
	})
	serve("/show", "Show", `<p id="out"></p><script>
document.getElementById('out').textContent = 'cookie=[' + document.cookie + '] theme=[' + localStorage.getItem('theme') + ']';
</script>`)
	serve("/secret", "Secret", `<p>The key is `+secret+`.</p>`)
	var long strings.Builder
	long.WriteString("<h1>Long page</h1>")
	for i := range 400 {
		fmt.Fprintf(&long, `<p>Paragraph %d: lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. <a href="/p/%d">link %d</a></p>`, i, i, i)
	}
	long.WriteString("<p>THE END</p>")
	serve("/long", "Long", long.String())

	srv := httptest.NewUnstartedServer(mux)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func needChromium(t *testing.T) {
	t.Helper()
	if _, err := browser.FindChromium(); err != nil {
		if os.Getenv("ACS_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("no Chromium binary found (%v), and ACS_REQUIRE_CHROMIUM=1 requires one", err)
		}
		t.Skipf("skipping: no Chromium binary found (%v)", err)
	}
}

func newBrowser(t *testing.T, opts browser.Options) *browser.Browser {
	t.Helper()
	if opts.ActionTimeout == 0 {
		opts.ActionTimeout = 45 * time.Second // generous: the machine may be loaded
	}
	b := browser.New(opts)
	t.Cleanup(func() { b.Close() })
	return b
}

func exec(t *testing.T, b *browser.Browser, a events.Action) *events.BrowserObservation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	obs, err := b.Execute(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", a.Kind(), err)
	}
	t.Logf("%s took %s", a.Kind(), time.Since(start).Round(time.Millisecond))
	return obs
}

// ok runs an action that must succeed and returns its text.
func ok(t *testing.T, b *browser.Browser, a events.Action) string {
	t.Helper()
	obs := exec(t, b, a)
	if obs.IsError {
		t.Fatalf("%s: unexpected error observation: %s", a.Kind(), obs.Text())
	}
	return obs.Text()
}

// fails runs an action that must give an error observation and returns its
// text.
func fails(t *testing.T, b *browser.Browser, a events.Action) string {
	t.Helper()
	obs := exec(t, b, a)
	if !obs.IsError {
		t.Fatalf("%s: expected an error observation, got: %s", a.Kind(), obs.Text())
	}
	return obs.Text()
}

func contains(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("text does not contain %q:\n%s", w, text)
		}
	}
}

var elemRE = regexp.MustCompile(`(?m)^\[(\d+)\](.*)$`)

// index finds the index of the element whose line in a get_state text
// contains s.
func index(t *testing.T, state, s string) int {
	t.Helper()
	for _, m := range elemRE.FindAllStringSubmatch(state, -1) {
		if strings.Contains(m[2], s) {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	t.Fatalf("no element line containing %q in:\n%s", s, state)
	return -1
}

var tabRE = regexp.MustCompile(`Tab ([0-9A-Za-z]{4})( \(current\))?: (\S+)`)

type tabLine struct {
	id, url string
	current bool
}

func tabs(t *testing.T, text string) []tabLine {
	t.Helper()
	var out []tabLine
	for _, m := range tabRE.FindAllStringSubmatch(text, -1) {
		out = append(out, tabLine{id: m[1], current: m[2] != "", url: m[3]})
	}
	return out
}

func currentTab(t *testing.T, ts []tabLine) tabLine {
	t.Helper()
	for _, x := range ts {
		if x.current {
			return x
		}
	}
	t.Fatalf("no current tab in %+v", ts)
	return tabLine{}
}

func TestLazyStartAndUnusedClose(t *testing.T) {
	b := browser.New(browser.Options{})
	if d := b.UserDataDir(); d != "" {
		t.Fatalf("New started Chromium (profile %s)", d)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close of an unused browser: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err := b.Execute(context.Background(), &events.BrowserListTabsAction{})
	if !errors.Is(err, browser.ErrClosed) {
		t.Fatalf("Execute after Close: %v, want ErrClosed", err)
	}
}

func TestMissingChromium(t *testing.T) {
	b := browser.New(browser.Options{ChromiumPath: "/nonexistent/acs-chromium"})
	defer b.Close()
	obs, err := b.Execute(context.Background(), &events.BrowserNavigateAction{URL: "about:blank"})
	if err == nil {
		t.Fatalf("want a Go error, got observation %v", obs.Text())
	}
	if !strings.Contains(err.Error(), "/nonexistent/acs-chromium") {
		t.Errorf("error does not name the binary: %v", err)
	}
	if d := b.UserDataDir(); d != "" {
		t.Errorf("profile dir %s left after failed start", d)
	}
}

func TestCancelledContext(t *testing.T) {
	b := browser.New(browser.Options{})
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Execute(ctx, &events.BrowserListTabsAction{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Execute with a cancelled context: %v", err)
	}
}

// TestBrowser runs the actions against one shared Browser, in order.
func TestBrowser(t *testing.T) {
	needChromium(t)
	srv := site(t)
	u := srv.URL
	b := newBrowser(t, browser.Options{
		SaveDir: t.TempDir(),
		Mask:    func(s string) string { return strings.ReplaceAll(s, secret, "<secret-hidden>") },
	})

	t.Run("navigate", func(t *testing.T) {
		start := time.Now()
		text := ok(t, b, &events.BrowserNavigateAction{URL: u + "/"})
		t.Logf("first action (Chromium start-up + navigate): %s", time.Since(start).Round(time.Millisecond))
		contains(t, text, "Navigated to "+u+"/", "Home")
		if b.UserDataDir() == "" {
			t.Error("UserDataDir empty after start")
		}
	})

	t.Run("get_state", func(t *testing.T) {
		text := ok(t, b, &events.BrowserGetStateAction{})
		contains(t, text, "Current URL: "+u+"/", "Page title: Home",
			`[0]<a href="/about">About us</a>`, `[1]<a href="/form">The form</a>`, `[2]<button>Press me</button>`)
		if strings.Contains(text, "Hidden link") {
			t.Errorf("hidden element listed:\n%s", text)
		}
		obs := exec(t, b, &events.BrowserGetStateAction{IncludeScreenshot: false})
		if obs.ScreenshotData != nil {
			t.Error("screenshot without include_screenshot")
		}
	})

	t.Run("get_state_screenshot", func(t *testing.T) {
		obs := exec(t, b, &events.BrowserGetStateAction{IncludeScreenshot: true})
		if obs.IsError || obs.ScreenshotData == nil {
			t.Fatalf("no screenshot: %s", obs.Text())
		}
		png, err := base64.StdEncoding.DecodeString(*obs.ScreenshotData)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("not a PNG: % x", png[:min(8, len(png))])
		}
		contains(t, obs.Text(), "screenshot")
	})

	t.Run("click_button", func(t *testing.T) {
		state := ok(t, b, &events.BrowserGetStateAction{})
		text := ok(t, b, &events.BrowserClickAction{Index: index(t, state, "Press me")})
		contains(t, text, "Clicked element", "Press me", "Current URL: "+u+"/")
		contains(t, ok(t, b, &events.BrowserGetContentAction{}), "button was clicked")
	})

	t.Run("dialog", func(t *testing.T) {
		state := ok(t, b, &events.BrowserGetStateAction{})
		text := ok(t, b, &events.BrowserClickAction{Index: index(t, state, "Alert me")})
		contains(t, text, `alert dialog saying "Hello from alert"`)
		contains(t, ok(t, b, &events.BrowserGetContentAction{}), "after alert")
	})

	t.Run("click_link_and_go_back", func(t *testing.T) {
		state := ok(t, b, &events.BrowserGetStateAction{})
		text := ok(t, b, &events.BrowserClickAction{Index: index(t, state, "About us")})
		contains(t, text, "Clicked element", "About us", u+"/about")
		text = ok(t, b, &events.BrowserGoBackAction{})
		contains(t, text, "Went back to "+u+"/", "Home")
	})

	t.Run("stale_index", func(t *testing.T) {
		text := fails(t, b, &events.BrowserClickAction{Index: 999})
		contains(t, text, "999", "browser_get_state")
		// Indices of a page that was navigated away from are gone too.
		ok(t, b, &events.BrowserGetStateAction{})
		ok(t, b, &events.BrowserNavigateAction{URL: u + "/about"})
		contains(t, fails(t, b, &events.BrowserClickAction{Index: 0}), "browser_get_state")
	})

	t.Run("form", func(t *testing.T) {
		ok(t, b, &events.BrowserNavigateAction{URL: u + "/form"})
		state := ok(t, b, &events.BrowserGetStateAction{})
		contains(t, state, `<input type=text name=q placeholder="Search">`)
		in := index(t, state, "name=q")
		text := ok(t, b, &events.BrowserTypeAction{Index: in, Text: "hello world"})
		contains(t, text, `Typed "hello world"`)
		// Typing replaces what the field held.
		ok(t, b, &events.BrowserTypeAction{Index: in, Text: "hello browser"})
		contains(t, fails(t, b, &events.BrowserTypeAction{Index: index(t, state, "Send"), Text: "x"}), "not a text field")
		contains(t, fails(t, b, &events.BrowserTypeAction{Index: index(t, state, "type=checkbox"), Text: "x"}), "not a text field")
		ok(t, b, &events.BrowserTypeAction{Index: index(t, state, "name=t"), Text: "line one\nline two"})
		contains(t, ok(t, b, &events.BrowserTypeAction{Index: index(t, state, "<select"), Text: "Blue"}), `Selected option "Blue"`)
		contains(t, fails(t, b, &events.BrowserTypeAction{Index: index(t, state, "<select"), Text: "Green"}), "Red | Blue")
		ed := index(t, state, "contenteditable")
		ok(t, b, &events.BrowserTypeAction{Index: ed, Text: "new text"})
		content := ok(t, b, &events.BrowserGetContentAction{})
		contains(t, content, "new text")
		if strings.Contains(content, "old text") {
			t.Errorf("contenteditable not cleared:\n%s", content)
		}
		text = ok(t, b, &events.BrowserClickAction{Index: index(t, state, "Send")})
		contains(t, text, u+"/submit")
		contains(t, ok(t, b, &events.BrowserGetContentAction{}), "You typed: hello browser", "Text area: line one line two", "Colour: b")
	})

	t.Run("scroll", func(t *testing.T) {
		ok(t, b, &events.BrowserNavigateAction{URL: u + "/long"})
		text := ok(t, b, &events.BrowserScrollAction{Direction: "down"})
		contains(t, text, "Scrolled the page down")
		y1 := scrollY(t, text)
		if y1 <= 0 {
			t.Fatalf("scroll position %d after scrolling down:\n%s", y1, text)
		}
		text = ok(t, b, &events.BrowserScrollAction{Direction: "down"})
		if y2 := scrollY(t, text); y2 <= y1 {
			t.Fatalf("second scroll down: %d, not past %d", y2, y1)
		}
		ok(t, b, &events.BrowserScrollAction{Direction: "up"})
		text = ok(t, b, &events.BrowserScrollAction{Direction: "up"})
		contains(t, text, "at the top")
		text = ok(t, b, &events.BrowserScrollAction{Direction: "up"})
		contains(t, text, "Could not scroll up", "already at the top")
	})

	t.Run("big_page_state", func(t *testing.T) {
		ok(t, b, &events.BrowserNavigateAction{URL: u + "/long"})
		state := ok(t, b, &events.BrowserGetStateAction{})
		contains(t, state, `[0]<a href="/p/0">link 0</a>`, "elements away from the viewport", "-[399]")
		if strings.Contains(state, "link 399<") {
			t.Errorf("far element listed:\n%.2000s", state)
		}
		for range 8 {
			ok(t, b, &events.BrowserScrollAction{Direction: "down"})
		}
		state = ok(t, b, &events.BrowserGetStateAction{})
		if strings.Contains(state, "link 0<") {
			t.Errorf("element far above listed:\n%.2000s", state)
		}
		lines := elemRE.FindAllStringSubmatch(state, -1)
		if len(lines) == 0 {
			t.Fatalf("no elements:\n%s", state)
		}
		mid := lines[len(lines)/2]
		n, _ := strconv.Atoi(mid[1])
		text := ok(t, b, &events.BrowserClickAction{Index: n})
		contains(t, text, fmt.Sprintf("%s/p/%d", u, n))
	})

	t.Run("get_content", func(t *testing.T) {
		ok(t, b, &events.BrowserNavigateAction{URL: u + "/long"})
		first := ok(t, b, &events.BrowserGetContentAction{})
		contains(t, first, "# Long page", "Paragraph 0: lorem", "link 0", "start_from_char=30000")
		if strings.Contains(first, "](") {
			t.Error("links extracted without extract_links")
		}
		if strings.Contains(first, "THE END") {
			t.Error("first page holds the end of a long page")
		}
		total := totalChars(t, first)
		if total <= browser.MaxContentChars {
			t.Fatalf("long page has only %d characters", total)
		}
		var all strings.Builder
		all.WriteString(body(first))
		for start := browser.MaxContentChars; start < total; start += browser.MaxContentChars {
			next := ok(t, b, &events.BrowserGetContentAction{StartFromChar: start})
			contains(t, next, fmt.Sprintf("(characters %d-", start))
			all.WriteString(body(next))
		}
		if got := len([]rune(all.String())); got != total {
			t.Errorf("pages hold %d characters, want %d", got, total)
		}
		contains(t, all.String(), "Paragraph 399", "THE END")
		links := ok(t, b, &events.BrowserGetContentAction{ExtractLinks: true})
		contains(t, links, "[link 0]("+u+"/p/0)")
		contains(t, fails(t, b, &events.BrowserGetContentAction{StartFromChar: total + 10}), "beyond the end")
	})

	t.Run("mask", func(t *testing.T) {
		ok(t, b, &events.BrowserNavigateAction{URL: u + "/secret"})
		text := ok(t, b, &events.BrowserGetContentAction{})
		contains(t, text, "<secret-hidden>")
		if strings.Contains(text, secret) {
			t.Errorf("secret not masked:\n%s", text)
		}
		text = ok(t, b, &events.BrowserNavigateAction{URL: u + "/secret?k=" + secret})
		if strings.Contains(text, secret) {
			t.Errorf("secret in the URL not masked:\n%s", text)
		}
	})

	t.Run("tabs", func(t *testing.T) {
		ok(t, b, &events.BrowserNavigateAction{URL: u + "/"})
		text := ok(t, b, &events.BrowserNavigateAction{URL: u + "/about", NewTab: true})
		contains(t, text, "new tab", u+"/about")
		list := ok(t, b, &events.BrowserListTabsAction{})
		ts := tabs(t, list)
		if len(ts) != 2 {
			t.Fatalf("want 2 tabs:\n%s", list)
		}
		if ts[0].id == ts[1].id {
			t.Fatalf("tab ids not unique: %+v", ts)
		}
		cur := currentTab(t, ts)
		if cur.url != u+"/about" {
			t.Fatalf("current tab %+v, want the new one", cur)
		}
		home := ts[0]
		if home.current {
			home = ts[1]
		}
		text = ok(t, b, &events.BrowserSwitchTabAction{TabID: strings.ToLower(home.id)})
		contains(t, text, "Switched to tab "+home.id, u+"/")
		contains(t, ok(t, b, &events.BrowserGetStateAction{}), "Current URL: "+u+"/\n")
		text = fails(t, b, &events.BrowserSwitchTabAction{TabID: "ZZZZ"})
		contains(t, text, "ZZZZ", ts[0].id, ts[1].id)
		contains(t, fails(t, b, &events.BrowserCloseTabAction{TabID: "ZZZZ"}), "Valid tab ids")

		// Closing the current tab switches to the other one.
		text = ok(t, b, &events.BrowserCloseTabAction{TabID: home.id})
		contains(t, text, "Closed tab "+home.id, "Current tab: "+cur.id)
		ts = tabs(t, ok(t, b, &events.BrowserListTabsAction{}))
		if len(ts) != 1 || ts[0].id != cur.id || !ts[0].current {
			t.Fatalf("after close: %+v", ts)
		}

		// A target=_blank link opens a tab, which becomes current.
		ok(t, b, &events.BrowserNavigateAction{URL: u + "/blank"})
		state := ok(t, b, &events.BrowserGetStateAction{})
		contains(t, state, `target=_blank`)
		text = ok(t, b, &events.BrowserClickAction{Index: index(t, state, "About in a new tab")})
		contains(t, text, "new tab", u+"/about")
		ts = tabs(t, ok(t, b, &events.BrowserListTabsAction{}))
		if len(ts) != 2 || currentTab(t, ts).url != u+"/about" {
			t.Fatalf("after target=_blank click: %+v", ts)
		}

		// click with new_tab opens the link in a new tab.
		ok(t, b, &events.BrowserNavigateAction{URL: u + "/"})
		state = ok(t, b, &events.BrowserGetStateAction{})
		text = ok(t, b, &events.BrowserClickAction{Index: index(t, state, "The form"), NewTab: true})
		contains(t, text, "new tab", u+"/form")
		ts = tabs(t, ok(t, b, &events.BrowserListTabsAction{}))
		if len(ts) != 3 || currentTab(t, ts).url != u+"/form" {
			t.Fatalf("after new_tab click: %+v", ts)
		}

		// Closing every tab leaves a blank one.
		for len(ts) > 0 {
			ok(t, b, &events.BrowserCloseTabAction{TabID: ts[0].id})
			ts = ts[1:]
		}
		ts = tabs(t, ok(t, b, &events.BrowserListTabsAction{}))
		if len(ts) != 1 || ts[0].url != "about:blank" || !ts[0].current {
			t.Fatalf("after closing all tabs: %+v", ts)
		}
	})

	t.Run("get_storage", func(t *testing.T) {
		ok(t, b, &events.BrowserNavigateAction{URL: u + "/storage"})
		text := ok(t, b, &events.BrowserGetStorageAction{})
		var st browser.StorageState
		if err := json.Unmarshal([]byte(text), &st); err != nil {
			t.Fatalf("storage is not JSON: %v\n%s", err, text)
		}
		var found bool
		for _, c := range st.Cookies {
			if c.Name == "session_id" && c.Value == "abc123" && c.Domain == "127.0.0.1" && c.Path == "/" && c.Expires == -1 {
				found = true
			}
		}
		if !found {
			t.Errorf("cookie session_id missing: %s", text)
		}
		found = false
		for _, o := range st.Origins {
			for _, it := range o.LocalStorage {
				if o.Origin == u && it.Name == "token" && it.Value == "xyz789" {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("localStorage item token missing: %s", text)
		}
		contains(t, text, `"httpOnly"`, `"secure"`, `"sameSite"`, `"expires"`)
	})

	t.Run("recording", func(t *testing.T) {
		contains(t, fails(t, b, &events.BrowserStopRecordingAction{}), "No recording")
		text := ok(t, b, &events.BrowserStartRecordingAction{})
		contains(t, text, "Started recording")
		contains(t, fails(t, b, &events.BrowserStartRecordingAction{}), "already")
		ok(t, b, &events.BrowserNavigateAction{URL: u + "/long"})
		ok(t, b, &events.BrowserScrollAction{Direction: "down"})
		ok(t, b, &events.BrowserNavigateAction{URL: u + "/about", NewTab: true})
		obs := exec(t, b, &events.BrowserStopRecordingAction{})
		if obs.IsError || obs.FullOutputSaveDir == nil {
			t.Fatalf("stop: %s", obs.Text())
		}
		dir := *obs.FullOutputSaveDir
		contains(t, obs.Text(), dir, "frames")
		raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
		if err != nil {
			t.Fatal(err)
		}
		var idx browser.RecordingIndex
		if err := json.Unmarshal(raw, &idx); err != nil {
			t.Fatal(err)
		}
		if idx.FrameCount == 0 || len(idx.Frames) != idx.FrameCount {
			t.Fatalf("index: %s", raw)
		}
		contains(t, obs.Text(), fmt.Sprintf("%d frames", idx.FrameCount))
		urls := map[string]bool{}
		for _, f := range idx.Frames {
			data, err := os.ReadFile(filepath.Join(dir, f.File))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(data, []byte{0xff, 0xd8}) {
				t.Errorf("frame %s is not a JPEG", f.File)
			}
			if f.Timestamp <= 0 || f.URL == "" || len(f.TabID) != 4 {
				t.Errorf("frame entry %+v", f)
			}
			urls[f.URL] = true
		}
		t.Logf("%d frames, urls %v", idx.FrameCount, urls)
		if !urls[u+"/about"] {
			t.Errorf("no frame of the last page: %v", urls)
		}
		contains(t, fails(t, b, &events.BrowserStopRecordingAction{}), "No recording")
	})

	t.Run("navigate_errors", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://" + l.Addr().String() + "/"
		l.Close()
		text := fails(t, b, &events.BrowserNavigateAction{URL: dead})
		contains(t, text, "ERR_CONNECTION_REFUSED")
		text = fails(t, b, &events.BrowserNavigateAction{URL: "http://exa mple^.com:99999/"})
		contains(t, text, "failed")
		// The browser still works.
		contains(t, ok(t, b, &events.BrowserNavigateAction{URL: u + "/about"}), "About")
	})
}

func scrollY(t *testing.T, text string) int {
	t.Helper()
	m := regexp.MustCompile(`Scroll position: (\d+)px`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no scroll position in:\n%s", text)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func totalChars(t *testing.T, text string) int {
	t.Helper()
	m := regexp.MustCompile(`\(characters \d+-\d+ of (\d+)\)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no character count in:\n%.300s", text)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// body is the page text of a get_content observation, without the header
// and the trailer.
func body(text string) string {
	_, rest, _ := strings.Cut(text, "):\n\n")
	if i := strings.LastIndex(rest, "\n\n["); i >= 0 && strings.Contains(rest[i:], "more characters") {
		rest = rest[:i]
	}
	return rest
}

// TestSetStorageAndClose restores storage into a fresh Browser, reads it
// back in a page, and checks that Close leaves no Chromium behind.
func TestSetStorageAndClose(t *testing.T) {
	needChromium(t)
	srv := site(t)
	u := srv.URL
	b := browser.New(browser.Options{})
	state := fmt.Sprintf(`{"cookies":[{"name":"theme_cookie","value":"dark","domain":"127.0.0.1","path":"/","expires":%d,"httpOnly":false,"secure":false,"sameSite":"Lax"}],
"origins":[{"origin":%q,"localStorage":[{"name":"theme","value":"solarized"}]}]}`, time.Now().Add(time.Hour).Unix(), u)
	text := ok(t, b, &events.BrowserSetStorageAction{StorageState: json.RawMessage(state)})
	contains(t, text, "1 cookies", "1 localStorage items")
	// The helper tab used to write localStorage is not a tab of the model.
	if ts := tabs(t, ok(t, b, &events.BrowserListTabsAction{})); len(ts) != 1 {
		t.Errorf("tabs after set_storage: %+v", ts)
	}
	ok(t, b, &events.BrowserNavigateAction{URL: u + "/show"})
	contains(t, ok(t, b, &events.BrowserGetContentAction{}), "cookie=[theme_cookie=dark]", "theme=[solarized]")

	contains(t, fails(t, b, &events.BrowserSetStorageAction{StorageState: json.RawMessage(`{"cookies":[{"name":"x","value":"y"}]}`)}), "domain")

	dir := b.UserDataDir()
	if dir == "" {
		t.Fatal("no profile dir")
	}
	pids := browser.ProcessesUsing(dir)
	if len(pids) == 0 {
		t.Fatalf("no Chromium process runs with %s", dir)
	}
	checkFlags(t, pids, dir)
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if pids := browser.ProcessesUsing(dir); len(pids) != 0 {
		t.Errorf("Chromium processes left after Close: %v", pids)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("profile dir %s not removed: %v", dir, err)
	}
	if _, err := b.Execute(context.Background(), &events.BrowserListTabsAction{}); !errors.Is(err, browser.ErrClosed) {
		t.Errorf("Execute after Close: %v", err)
	}
}

// checkFlags checks the command line of the main Chromium process (the one
// without --type=).
func checkFlags(t *testing.T, pids []int, dir string) {
	t.Helper()
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--type=") }) {
			continue
		}
		t.Logf("chromium command line: %q", args)
		for _, f := range []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
			"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic", "--user-data-dir=" + dir} {
			if !slices.Contains(args, f) {
				t.Errorf("chromium runs without %s", f)
			}
		}
		for _, a := range args {
			if strings.HasPrefix(a, "--disable-extensions-except") || strings.HasPrefix(a, "--enable-unsafe-swiftshader") {
				t.Errorf("unexpected flag %s", a)
			}
		}
		return
	}
	t.Errorf("no main Chromium process among %v", pids)
}

// TestCloseDuringAction closes the browser while an action waits for a page
// that never finishes loading: the action ends with ErrClosed, promptly.
func TestCloseDuringAction(t *testing.T) {
	needChromium(t)
	release := make(chan struct{})
	hanging := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			select {
			case hanging <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		fmt.Fprint(w, "<title>ok</title>ok")
	}))
	defer srv.Close()
	defer close(release)
	b := browser.New(browser.Options{ActionTimeout: time.Minute})
	ok(t, b, &events.BrowserNavigateAction{URL: srv.URL + "/"})
	dir := b.UserDataDir()
	errc := make(chan error, 1)
	go func() {
		_, err := b.Execute(context.Background(), &events.BrowserNavigateAction{URL: srv.URL + "/hang"})
		errc <- err
	}()
	select { // the navigation is under way
	case <-hanging:
	case <-time.After(30 * time.Second):
		t.Fatal("the navigation did not reach the server")
	}
	start := time.Now()
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, browser.ErrClosed) {
			t.Errorf("interrupted action: %v, want ErrClosed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the action did not end after Close")
	}
	t.Logf("Close took %s", time.Since(start).Round(time.Millisecond))
	if pids := browser.ProcessesUsing(dir); len(pids) != 0 {
		t.Errorf("Chromium processes left after Close: %v", pids)
	}
}

// TestChromiumDies kills Chromium behind the Browser's back: the next action
// reports it (a Go error or an error observation), and the one after works
// on a fresh Chromium.
func TestChromiumDies(t *testing.T) {
	needChromium(t)
	srv := site(t)
	b := newBrowser(t, browser.Options{})
	ok(t, b, &events.BrowserNavigateAction{URL: srv.URL + "/about"})
	dir := b.UserDataDir()
	for _, pid := range browser.ProcessesUsing(dir) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		obs, err := b.Execute(context.Background(), &events.BrowserNavigateAction{URL: srv.URL + "/"})
		if err == nil && !obs.IsError {
			contains(t, obs.Text(), "Navigated to "+srv.URL+"/")
			break
		}
		t.Logf("after the kill: err=%v obs=%v", err, obs)
		if time.Now().After(deadline) {
			t.Fatal("the browser did not recover")
		}
	}
	if b.UserDataDir() == dir {
		t.Errorf("same profile dir %s after restart", dir)
	}
	if pids := browser.ProcessesUsing(dir); len(pids) != 0 {
		t.Errorf("processes of the dead Chromium left: %v", pids)
	}
}
