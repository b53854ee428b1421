package browser

import (
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/acs-project/acs/events"
)

// MaxContentChars is the most page text one browser_get_content returns.
const MaxContentChars = 30000

// maxElements is the most interactive elements get_state numbers.
const maxElements = 5000

// listAllElements is the most elements get_state lists in full; on pages
// with more, only those around the viewport are listed.
const listAllElements = 300

var (
	schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	portRE   = regexp.MustCompile(`^[^/:?#]+:\d+([/?#]|$)`)
)

// normalizeURL adds a scheme to a bare host ("example.com/x" becomes
// https://example.com/x; localhost and loopback addresses get http://).
func normalizeURL(u string) string {
	u = strings.TrimSpace(u)
	if u == "" || strings.HasPrefix(u, "//") {
		if u != "" {
			return "https:" + u
		}
		return u
	}
	if schemeRE.MatchString(u) && !portRE.MatchString(u) {
		return u
	}
	host := strings.ToLower(u)
	if strings.HasPrefix(host, "localhost") || strings.HasPrefix(host, "127.") || strings.HasPrefix(host, "[::1]") || strings.HasPrefix(host, "0.0.0.0") {
		return "http://" + u
	}
	return "https://" + u
}

// pageInfo returns the tab's URL and title.
func pageInfo(o *op, t *tab) (string, string) {
	type info struct {
		URL   string `json:"url"`
		Title string `json:"title"`
	}
	in, err := evalOn[info](o, t, `({url: location.href, title: document.title})`)
	if err != nil {
		return t.tr.currentURL(), ""
	}
	return in.URL, in.Title
}

func describePage(url, title string) string {
	if title == "" {
		return url
	}
	return fmt.Sprintf("%s (title: %q)", url, title)
}

func (b *Browser) navigate(o *op, a *events.BrowserNavigateAction) (result, error) {
	u := normalizeURL(a.URL)
	if u == "" {
		return result{}, userErrorf("The url is empty.")
	}
	t := b.cur
	if a.NewTab {
		nt, err := b.openTab(o)
		if err != nil {
			return result{}, err
		}
		if err := b.switchTo(o, nt); err != nil {
			return result{}, err
		}
		t = nt
	}
	_, err := run(o, t, chromedp.Navigate(u))
	if err != nil {
		if o.ctx.Err() != nil || b.root.Err() != nil {
			return result{}, err
		}
		var le *chromedp.LoadError
		var pe *cdproto.Error
		switch {
		case errors.As(err, &le):
			return result{}, userErrorf("Navigation to %s failed: %s", u, le.ErrorText)
		case errors.As(err, &pe):
			return result{}, userErrorf("Navigation to %s failed: %s", u, pe.Message)
		}
		return result{}, userErrorf("Navigation to %s failed: %v", u, err)
	}
	if err := b.waitLoaded(o, t); err != nil {
		return result{}, err
	}
	url, title := pageInfo(o, t)
	var sb strings.Builder
	if a.NewTab {
		fmt.Fprintf(&sb, "Opened a new tab %s and navigated to %s", t.short, url)
	} else {
		fmt.Fprintf(&sb, "Navigated to %s", url)
	}
	if title != "" {
		fmt.Fprintf(&sb, "\nPage title: %s", title)
	}
	return result{text: sb.String()}, nil
}

// elementDesc is acsDescribe's summary of an element.
type elementDesc struct {
	Tag   string       `json:"tag"`
	Attrs [][2]*string `json:"attrs"`
	Text  string       `json:"text"`
	Near  bool         `json:"near"` // within a viewport's height of the viewport
}

var bareAttrRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)

// String renders the element compactly, e.g. <input type=text name=q
// placeholder="Search"> or <a href="/about">About us</a>.
func (d elementDesc) String() string {
	var sb strings.Builder
	sb.WriteString("<" + d.Tag)
	for _, kv := range d.Attrs {
		if kv[0] == nil {
			continue
		}
		k := *kv[0]
		sb.WriteString(" " + k)
		if kv[1] == nil {
			continue
		}
		v := *kv[1]
		switch k {
		case "type", "name", "role", "target":
			if bareAttrRE.MatchString(v) {
				sb.WriteString("=" + v)
				continue
			}
		}
		sb.WriteString(`="` + strings.ReplaceAll(v, `"`, `\"`) + `"`)
	}
	sb.WriteString(">")
	if d.Text != "" {
		sb.WriteString(d.Text + "</" + d.Tag + ">")
	}
	return sb.String()
}

type scrollInfo struct {
	Y        int  `json:"y"`
	Height   int  `json:"height"`
	Viewport int  `json:"viewport"`
	Moved    bool `json:"moved"`
	Element  bool `json:"element"`
}

func (s scrollInfo) String() string {
	below := s.Height - s.Viewport - s.Y
	if below < 0 {
		below = 0
	}
	pos := fmt.Sprintf("Scroll position: %dpx from the top, page height %dpx, viewport %dpx", s.Y, s.Height, s.Viewport)
	switch {
	case s.Y <= 0 && below <= 1:
		return pos + " (the whole page fits in the viewport)."
	case s.Y <= 0:
		return pos + fmt.Sprintf(" (at the top; %dpx more below).", below)
	case below <= 1:
		return pos + fmt.Sprintf(" (at the bottom; %dpx above).", s.Y)
	}
	return pos + fmt.Sprintf(" (%dpx above, %dpx below).", s.Y, below)
}

func (b *Browser) tabLines() string {
	var sb strings.Builder
	for _, t := range b.tabs {
		url, title := t.url, t.title
		if t == b.cur || url == "" {
			if u := t.tr.currentURL(); u != "" {
				url = u
			}
		}
		cur := ""
		if t == b.cur {
			cur = " (current)"
		}
		fmt.Fprintf(&sb, "  Tab %s%s: %s\n", t.short, cur, describePage(url, title))
	}
	return sb.String()
}

func (b *Browser) getState(o *op, a *events.BrowserGetStateAction) (result, error) {
	t := b.cur
	if err := b.waitLoaded(o, t); err != nil {
		return result{}, err
	}
	type state struct {
		URL      string        `json:"url"`
		Title    string        `json:"title"`
		Elements []elementDesc `json:"elements"`
		More     int           `json:"more"`
		Scroll   scrollInfo    `json:"scroll"`
	}
	st, err := script[state](o, t, jsState, map[string]any{"max": maxElements})
	if err != nil {
		return result{}, err
	}
	t.title = st.Title
	var sb strings.Builder
	fmt.Fprintf(&sb, "Current URL: %s\nPage title: %s\n", st.URL, st.Title)
	fmt.Fprintf(&sb, "Open tabs (%d):\n%s", len(b.tabs), b.tabLines())
	if len(st.Elements) == 0 {
		sb.WriteString("Interactive elements: none found on this page.\n")
	} else {
		fmt.Fprintf(&sb, "Interactive elements (use the [index] with browser_click and browser_type):\n")
		writeElements(&sb, st.Elements)
		if st.More > 0 {
			fmt.Fprintf(&sb, "... and %d more elements, not numbered.\n", st.More)
		}
	}
	sb.WriteString(st.Scroll.String())
	r := result{}
	if a.IncludeScreenshot {
		png, err := run(o, t, chromedp.CaptureScreenshot())
		if err != nil {
			return result{}, fmt.Errorf("screenshot: %w", err)
		}
		s := base64.StdEncoding.EncodeToString(png)
		r.screenshot = &s
		sb.WriteString("\nA screenshot of the current viewport is attached.")
	}
	r.text = sb.String()
	return r, nil
}

// writeElements lists the elements one a line. On a page with many, the
// runs of elements far from the viewport are summarized.
func writeElements(sb *strings.Builder, els []elementDesc) {
	all := len(els) <= listAllElements
	for i := 0; i < len(els); i++ {
		if all || els[i].Near {
			fmt.Fprintf(sb, "[%d]%s\n", i, els[i])
			continue
		}
		j := i
		for j+1 < len(els) && !els[j+1].Near {
			j++
		}
		fmt.Fprintf(sb, "... [%d]-[%d]: %d elements away from the viewport, not shown (scroll there and call browser_get_state again to see them)\n", i, j, j-i+1)
		i = j
	}
}

func staleIndex(i int) error {
	return userErrorf("There is no element with index %d on the current page. The page may have changed since the last browser_get_state; call browser_get_state again to get fresh indices.", i)
}

// clickPlan is what click.js reports about the element to click.
type clickPlan struct {
	Found     bool        `json:"found"`
	X         float64     `json:"x"`
	Y         float64     `json:"y"`
	Mouse     bool        `json:"mouse"`
	Desc      elementDesc `json:"desc"`
	Href      string      `json:"href"`
	Target    string      `json:"target"`
	Navigates bool        `json:"navigates"`
	Disabled  bool        `json:"disabled"`
}

func (b *Browser) click(o *op, a *events.BrowserClickAction) (result, error) {
	t := b.cur
	plan, err := script[clickPlan](o, t, jsClick, map[string]any{"index": a.Index})
	if err != nil {
		return result{}, err
	}
	if !plan.Found {
		return result{}, staleIndex(a.Index)
	}
	if plan.Disabled {
		return result{}, userErrorf("Element [%d] %s is disabled and cannot be clicked.", a.Index, plan.Desc)
	}
	if a.NewTab && plan.Href != "" && !strings.HasPrefix(strings.ToLower(plan.Href), "javascript:") {
		nt, err := b.openTab(o)
		if err != nil {
			return result{}, err
		}
		if err := b.switchTo(o, nt); err != nil {
			return result{}, err
		}
		if _, err := run(o, nt, chromedp.Navigate(plan.Href)); err != nil {
			if o.ctx.Err() != nil || b.root.Err() != nil {
				return result{}, err
			}
			return result{}, userErrorf("Opened element [%d] %s in new tab %s, but loading %s failed: %v", a.Index, plan.Desc, nt.short, plan.Href, err)
		}
		if err := b.waitLoaded(o, nt); err != nil {
			return result{}, err
		}
		url, title := pageInfo(o, nt)
		return result{text: fmt.Sprintf("Opened element [%d] %s in new tab %s (now the current tab).\nCurrent URL: %s", a.Index, plan.Desc, nt.short, describePage(url, title))}, nil
	}

	known := map[target.ID]bool{}
	if infos, err := b.pageTargets(o); err == nil {
		for _, in := range infos {
			known[in.TargetID] = true
		}
	}
	before := t.tr.state()
	if plan.Mouse {
		var mods []chromedp.Modifier
		if a.NewTab {
			mods = append(mods, chromedp.ModifierCtrl)
		}
		if _, err := run(o, t, mouseClick(plan.X, plan.Y, mods...)); err != nil {
			return result{}, err
		}
	} else {
		ok, err := script[bool](o, t, jsJSClick, map[string]any{"index": a.Index})
		if err != nil && !errDetached(err) {
			return result{}, err
		}
		if err == nil && !ok {
			return result{}, staleIndex(a.Index)
		}
	}

	grace := 400 * time.Millisecond
	expectNewTab := a.NewTab || (plan.Href != "" && plan.Target != "" && !strings.EqualFold(plan.Target, "_self") &&
		!strings.EqualFold(plan.Target, "_parent") && !strings.EqualFold(plan.Target, "_top"))
	switch {
	case expectNewTab:
		grace = 5 * time.Second
	case plan.Navigates:
		grace = 2 * time.Second
	}
	nt, err := b.afterClick(o, t, before, known, grace)
	if err != nil {
		return result{}, err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Clicked element [%d] %s", a.Index, plan.Desc)
	if nt != nil {
		if err := b.syncTabs(o); err != nil {
			return result{}, err
		}
		if err := b.switchTo(o, nt); err != nil {
			return result{}, err
		}
		if err := b.waitNewTab(o, nt, plan.Href); err != nil {
			return result{}, err
		}
		url, title := pageInfo(o, nt)
		fmt.Fprintf(&sb, ".\nIt opened a new tab %s, which is now the current tab.\nCurrent URL: %s", nt.short, describePage(url, title))
		return result{text: sb.String()}, nil
	}
	url, title := pageInfo(o, b.cur)
	if st := t.tr.state(); st.navs > before.navs {
		fmt.Fprintf(&sb, ".\nThe page navigated. Current URL: %s", describePage(url, title))
	} else {
		fmt.Fprintf(&sb, ".\nCurrent URL: %s", describePage(url, title))
	}
	return result{text: sb.String()}, nil
}

// mouseClick moves the mouse to (x, y) and clicks the left button there.
func mouseClick(x, y float64, mods ...chromedp.Modifier) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.MouseEvent(chromedp.MouseMoved, x, y, chromedp.ButtonModifiers(mods...)),
		chromedp.MouseClickXY(x, y, chromedp.ButtonModifiers(mods...)),
	)
}

// afterClick waits for what a click set off. A navigation of the tab
// (seen within grace) is waited for until it loads. A new tab (seen within
// grace) is attached and returned. Otherwise it returns after grace.
func (b *Browser) afterClick(o *op, t *tab, before trackState, known map[target.ID]bool, grace time.Duration) (*tab, error) {
	end := time.Now().Add(grace)
	var lastPoll time.Time
	for {
		st := t.tr.state()
		if st.requests > before.requests || st.navs > before.navs || st.starts > before.starts {
			return nil, b.waitNavigation(o, t, before)
		}
		if time.Since(lastPoll) >= 100*time.Millisecond {
			lastPoll = time.Now()
			infos, err := b.pageTargets(o)
			if err != nil {
				return nil, err
			}
			for _, in := range infos {
				if known[in.TargetID] {
					continue
				}
				if err := b.syncTabs(o); err != nil {
					return nil, err
				}
				for _, nt := range b.tabs {
					if nt.id == in.TargetID {
						return nt, b.attach(o, nt)
					}
				}
			}
		}
		if time.Now().After(end) {
			return nil, nil
		}
		tm := time.NewTimer(25 * time.Millisecond)
		select {
		case <-st.changed:
		case <-tm.C:
		case <-o.ctx.Done():
			tm.Stop()
			return nil, o.ctx.Err()
		}
		tm.Stop()
	}
}

// waitNavigation waits for a navigation that started in t to finish: the
// main frame stopped loading after it started, or a same-document
// navigation committed. A requested navigation that never starts loading
// (cancelled, a download) is given up after a few seconds.
func (b *Browser) waitNavigation(o *op, t *tab, before trackState) error {
	until := o.loadBudget()
	giveUp := time.Now().Add(3 * time.Second)
	for {
		st := t.tr.state()
		switch {
		case !st.loading && st.stops > before.stops:
			return b.waitLoaded(o, t)
		case !st.loading && st.navs > before.navs && st.starts == before.starts:
			return b.waitLoaded(o, t) // same-document navigation
		case st.starts > before.starts || st.navs > before.navs:
			giveUp = until // loading: wait for it
		}
		if time.Now().After(until) || time.Now().After(giveUp) {
			return nil
		}
		tm := time.NewTimer(50 * time.Millisecond)
		select {
		case <-st.changed:
		case <-tm.C:
		case <-o.ctx.Done():
			tm.Stop()
			return o.ctx.Err()
		}
		tm.Stop()
	}
}

// waitNewTab waits for a tab a click opened to leave its initial
// about:blank (when it is headed elsewhere) and to load.
func (b *Browser) waitNewTab(o *op, t *tab, href string) error {
	until := o.loadBudget()
	if href != "" && !strings.HasPrefix(href, "about:") {
		for time.Now().Before(until) {
			u, err := evalOn[string](o, t, `location.href`)
			if err == nil && u != "about:blank" && u != "" {
				break
			}
			if o.ctx.Err() != nil {
				return o.ctx.Err()
			}
			if err := o.sleep(50 * time.Millisecond); err != nil {
				return err
			}
		}
	}
	return b.waitLoaded(o, t)
}

// typePlan is what type.js reports about the element to type into.
type typePlan struct {
	Found    bool        `json:"found"`
	Kind     string      `json:"kind"`
	Desc     elementDesc `json:"desc"`
	Type     string      `json:"type"`
	Disabled bool        `json:"disabled"`
	Readonly bool        `json:"readonly"`
	Options  []string    `json:"options"`
	Selected string      `json:"selected"`
}

func (b *Browser) typeText(o *op, a *events.BrowserTypeAction) (result, error) {
	t := b.cur
	plan, err := script[typePlan](o, t, jsType, map[string]any{"index": a.Index, "text": a.Text})
	if err != nil {
		return result{}, err
	}
	switch {
	case !plan.Found:
		return result{}, staleIndex(a.Index)
	case plan.Kind == "other":
		what := "<" + plan.Desc.Tag + ">"
		if plan.Desc.Tag == "input" {
			what = fmt.Sprintf("<input type=%s>", plan.Type)
		}
		return result{}, userErrorf("Element [%d] %s is a %s, not a text field: browser_type only works on text inputs, textareas, contenteditable elements (and selects). Use browser_click for buttons, links, checkboxes and radio buttons.", a.Index, plan.Desc, what)
	case plan.Disabled:
		return result{}, userErrorf("Element [%d] %s is disabled; it cannot be typed into.", a.Index, plan.Desc)
	case plan.Readonly:
		return result{}, userErrorf("Element [%d] %s is read-only; it cannot be typed into.", a.Index, plan.Desc)
	case plan.Kind == "select":
		if plan.Selected == "" {
			return result{}, userErrorf("Element [%d] %s is a select with no option %q. Its options are: %s", a.Index, plan.Desc, a.Text, strings.Join(plan.Options, " | "))
		}
		return result{text: fmt.Sprintf("Selected option %q in element [%d] %s", plan.Selected, a.Index, plan.Desc)}, nil
	}
	if a.Text != "" {
		c, cancel := o.on(t.ctx)
		_, err := chromedp.Call(c, input.InsertText, input.InsertTextParams{Text: a.Text})
		cancel()
		if err != nil {
			return result{}, err
		}
	}
	got, err := script[*string](o, t, jsValue, map[string]any{"index": a.Index})
	if err != nil {
		return result{}, err
	}
	text := fmt.Sprintf("Typed %q into element [%d] %s", a.Text, a.Index, plan.Desc)
	if a.Text == "" {
		text = fmt.Sprintf("Cleared element [%d] %s", a.Index, plan.Desc)
	}
	if got != nil && plan.Kind != "editable" && *got != a.Text {
		text += fmt.Sprintf("\nNote: the field now holds %q (the page changed or limited the input).", *got)
	}
	return result{text: text}, nil
}

func (b *Browser) scroll(o *op, a *events.BrowserScrollAction) (result, error) {
	t := b.cur
	dir, word := 1, "down"
	switch strings.ToLower(string(a.Direction)) {
	case "", "down":
	case "up":
		dir, word = -1, "up"
	default:
		return result{}, userErrorf("Unknown scroll direction %q: use \"up\" or \"down\".", a.Direction)
	}
	s, err := script[scrollInfo](o, t, jsScroll, dir)
	if err != nil {
		return result{}, err
	}
	what := "the page"
	if s.Element {
		what = "the page's main scrollable area"
	}
	if !s.Moved {
		edge := "bottom"
		if dir < 0 {
			edge = "top"
		}
		return result{text: fmt.Sprintf("Could not scroll %s: %s is already at the %s.\n%s", word, what, edge, s)}, nil
	}
	return result{text: fmt.Sprintf("Scrolled %s %s by one viewport.\n%s", what, word, s)}, nil
}

func (b *Browser) goBack(o *op) (result, error) {
	t := b.cur
	hist, err := run(o, t, chromedp.NavigationEntries())
	if err != nil {
		return result{}, err
	}
	cur := int(hist.CurrentIndex)
	if cur <= 0 || cur >= len(hist.Entries) {
		return result{}, userErrorf("Cannot go back: there is no previous page in this tab's history.")
	}
	before := t.tr.state()
	c, cancel := o.on(t.ctx)
	_, err = chromedp.Call(c, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: hist.Entries[cur-1].ID})
	cancel()
	if err != nil {
		return result{}, err
	}
	// Wait for the history navigation to commit (a back/forward-cache
	// restore fires no load event), then for the page to load.
	for {
		st := t.tr.state()
		if st.navs > before.navs {
			break
		}
		if time.Now().After(o.loadBudget()) {
			break
		}
		tm := time.NewTimer(50 * time.Millisecond)
		select {
		case <-st.changed:
		case <-tm.C:
		case <-o.ctx.Done():
			tm.Stop()
			return result{}, o.ctx.Err()
		}
		tm.Stop()
	}
	if err := b.waitLoaded(o, t); err != nil {
		return result{}, err
	}
	url, title := pageInfo(o, t)
	return result{text: "Went back to " + describePage(url, title)}, nil
}

func (b *Browser) getContent(o *op, a *events.BrowserGetContentAction) (result, error) {
	t := b.cur
	if a.StartFromChar < 0 {
		return result{}, userErrorf("start_from_char must be 0 or more.")
	}
	if err := b.waitLoaded(o, t); err != nil {
		return result{}, err
	}
	type content struct {
		URL   string `json:"url"`
		Title string `json:"title"`
		Text  string `json:"text"`
	}
	c, err := script[content](o, t, jsContent, map[string]any{"links": a.ExtractLinks})
	if err != nil {
		return result{}, err
	}
	// Mask the whole text before paging, so offsets stay stable and no
	// secret is split across pages.
	text := []rune(b.mask(c.Text))
	total := len(text)
	start := a.StartFromChar
	if start > 0 && start >= total {
		return result{}, userErrorf("start_from_char %d is beyond the end of the page content (%d characters). Use a smaller start_from_char, or 0 to read from the beginning.", start, total)
	}
	end := min(start+MaxContentChars, total)
	var sb strings.Builder
	fmt.Fprintf(&sb, "Content of %s", describePage(c.URL, c.Title))
	if total == 0 {
		sb.WriteString(":\n(the page has no visible text)")
		return result{text: sb.String()}, nil
	}
	fmt.Fprintf(&sb, " (characters %d-%d of %d):\n\n", start, end, total)
	sb.WriteString(string(text[start:end]))
	if end < total {
		fmt.Fprintf(&sb, "\n\n[%d more characters. Call browser_get_content with start_from_char=%d to read on.]", total-end, end)
	}
	return result{text: sb.String()}, nil
}

func (b *Browser) listTabs(o *op) (result, error) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Open tabs (%d):\n%s", len(b.tabs), b.tabLines())
	sb.WriteString("Use the 4-character tab id with browser_switch_tab or browser_close_tab.")
	return result{text: sb.String()}, nil
}

func (b *Browser) switchTab(o *op, a *events.BrowserSwitchTabAction) (result, error) {
	t, err := b.findTab(a.TabID)
	if err != nil {
		return result{}, err
	}
	if err := b.switchTo(o, t); err != nil {
		return result{}, err
	}
	if err := b.waitLoaded(o, t); err != nil {
		return result{}, err
	}
	url, title := pageInfo(o, t)
	return result{text: fmt.Sprintf("Switched to tab %s: %s", t.short, describePage(url, title))}, nil
}

func (b *Browser) closeTab(o *op, a *events.BrowserCloseTabAction) (result, error) {
	t, err := b.findTab(a.TabID)
	if err != nil {
		return result{}, err
	}
	closedDesc := describePage(t.tr.currentURL(), t.title)
	if t.tr.currentURL() == "" {
		closedDesc = describePage(t.url, t.title)
	}
	if len(b.tabs) == 1 {
		// Keep the browser with a tab: open a blank one first.
		if _, err := b.openTab(o); err != nil {
			return result{}, err
		}
	}
	if err := b.closeTarget(o, t); err != nil {
		return result{}, err
	}
	var rest []*tab
	for _, x := range b.tabs {
		if x != t {
			rest = append(rest, x)
		}
	}
	b.tabs = rest
	if b.cur == t || b.cur == nil {
		if err := b.switchTo(o, b.tabs[len(b.tabs)-1]); err != nil {
			return result{}, err
		}
	}
	url, title := pageInfo(o, b.cur)
	return result{text: fmt.Sprintf("Closed tab %s (%s).\nCurrent tab: %s: %s", t.short, closedDesc, b.cur.short, describePage(url, title))}, nil
}

// closeTarget closes a tab's target and waits until the browser no longer
// lists it.
func (b *Browser) closeTarget(o *op, t *tab) error {
	if b.rec != nil && b.rec.tab == t {
		b.rec.detach()
	}
	if t.cancel != nil {
		// Cancelling a tab's own context closes its target and waits.
		t.cancel()
		t.cancel = nil
	} else {
		c, cancel := o.on(b.root)
		_, err := chromedp.CallBrowser(c, target.CloseTarget, target.CloseTargetParams{TargetID: t.id})
		cancel()
		if err != nil {
			return fmt.Errorf("close tab %s: %w", t.short, err)
		}
	}
	for {
		infos, err := b.pageTargets(o)
		if err != nil {
			return err
		}
		gone := true
		for _, in := range infos {
			if in.TargetID == t.id {
				gone = false
			}
		}
		if gone || time.Now().After(o.loadBudget()) {
			return nil
		}
		if err := o.sleep(20 * time.Millisecond); err != nil {
			return err
		}
	}
}
