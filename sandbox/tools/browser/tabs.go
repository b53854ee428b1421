package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// tab is one page target of the browser.
type tab struct {
	id    target.ID
	short string // the TabIDLen-character id the model uses
	root  bool   // the first tab, owned by the browser's root context
	// ctx is the chromedp context attached to the target; nil until the
	// tab is first used. cancel detaches and closes it (nil for root).
	ctx    context.Context
	cancel context.CancelFunc
	tr     *tracker
	// url and title as last listed by the browser.
	url, title string
}

func (t *tab) target() *chromedp.Target { return chromedp.FromContext(t.ctx).Target }

// tracker follows a tab's main-frame navigation from its events, so actions
// can tell whether a click started a navigation and when it finished.
type tracker struct {
	mu        sync.Mutex
	mainFrame cdp.FrameID
	loading   bool
	requests  int64 // navigations requested or started in the main frame
	navs      int64 // navigations committed (new document or same document)
	starts    int64 // times the main frame started loading
	stops     int64 // times the main frame stopped loading
	url       string
	changed   chan struct{} // closed and replaced on every change
}

type trackState struct {
	loading                       bool
	requests, navs, starts, stops int64
	url                           string
	changed                       <-chan struct{}
}

func newTracker() *tracker { return &tracker{changed: make(chan struct{})} }

func (tr *tracker) setMain(id string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.mainFrame == "" {
		tr.mainFrame = cdp.FrameID(id)
	}
}

func (tr *tracker) state() trackState {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return trackState{loading: tr.loading, requests: tr.requests, navs: tr.navs, starts: tr.starts, stops: tr.stops, url: tr.url, changed: tr.changed}
}

func (tr *tracker) currentURL() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.url
}

// handle runs on the tab's event loop: it must not block or send commands.
func (tr *tracker) handle(ev any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	main := func(id cdp.FrameID) bool { return tr.mainFrame == "" || id == tr.mainFrame }
	switch ev := ev.(type) {
	case *page.EventFrameRequestedNavigation:
		if !main(ev.FrameID) || ev.Disposition != page.ClientNavigationDispositionCurrentTab {
			return
		}
		tr.requests++
	case *page.EventFrameStartedNavigating:
		if !main(ev.FrameID) {
			return
		}
		tr.requests++
	case *page.EventFrameStartedLoading:
		if !main(ev.FrameID) {
			return
		}
		tr.loading = true
		tr.starts++
	case *page.EventFrameStoppedLoading:
		if !main(ev.FrameID) {
			return
		}
		tr.loading = false
		tr.stops++
	case *page.EventFrameNavigated:
		if ev.Frame == nil || ev.Frame.ParentID != "" {
			return
		}
		tr.mainFrame = ev.Frame.ID
		tr.url = ev.Frame.URL + ev.Frame.URLFragment
		tr.navs++
	case *page.EventNavigatedWithinDocument:
		if !main(ev.FrameID) {
			return
		}
		tr.url = ev.URL
		tr.navs++
	default:
		return
	}
	close(tr.changed)
	tr.changed = make(chan struct{})
}

// TabIDLen is the length of the tab ids the model uses.
const TabIDLen = 4

// shortID picks the tab's TabIDLen-character id: the last characters of its
// target id, or another window of it when that is taken by an open tab.
func (b *Browser) shortID(id target.ID) string {
	s := strings.ToUpper(string(id))
	taken := func(c string) bool {
		return slices.ContainsFunc(b.tabs, func(t *tab) bool { return t.id != id && strings.EqualFold(t.short, c) })
	}
	for end := len(s); end >= TabIDLen; end-- {
		if c := s[end-TabIDLen : end]; !taken(c) {
			return c
		}
	}
	for i := 0; ; i++ {
		if c := fmt.Sprintf("T%0*d", TabIDLen-1, i); !taken(c) {
			return c
		}
	}
}

// pageTargets lists the browser's page targets (tabs), without helper and
// prerender targets.
func (b *Browser) pageTargets(o *op) ([]*target.Info, error) {
	c, cancel := o.on(b.root)
	defer cancel()
	infos, err := chromedp.Targets(c)
	if err != nil {
		return nil, err
	}
	var out []*target.Info
	for _, in := range infos {
		if in.Type != "page" || in.Subtype != "" || b.hidden[string(in.TargetID)] {
			continue
		}
		out = append(out, in)
	}
	return out, nil
}

// syncTabs brings b.tabs in line with the browser: tabs the page opened are
// added, tabs that closed are dropped. If the current tab is gone the most
// recent tab becomes current; with no tab left, a blank one is opened.
func (b *Browser) syncTabs(o *op) error {
	infos, err := b.pageTargets(o)
	if err != nil {
		return err
	}
	present := map[target.ID]*target.Info{}
	for _, in := range infos {
		present[in.TargetID] = in
	}
	kept := b.tabs[:0]
	for _, t := range b.tabs {
		if in, ok := present[t.id]; ok {
			t.url, t.title = in.URL, in.Title
			kept = append(kept, t)
			continue
		}
		b.dropTab(t)
	}
	b.tabs = kept
	for _, in := range infos {
		if slices.ContainsFunc(b.tabs, func(t *tab) bool { return t.id == in.TargetID }) {
			continue
		}
		t := &tab{id: in.TargetID, tr: newTracker(), url: in.URL, title: in.Title}
		t.short = b.shortID(t.id)
		b.tabs = append(b.tabs, t)
	}
	if b.cur != nil && !slices.Contains(b.tabs, b.cur) {
		b.cur = nil
	}
	if b.cur == nil {
		next := (*tab)(nil)
		if len(b.tabs) == 0 {
			t, err := b.openTab(o)
			if err != nil {
				return err
			}
			next = t
		} else {
			next = b.tabs[len(b.tabs)-1]
		}
		return b.switchTo(o, next)
	}
	if err := b.attach(o, b.cur); err != nil {
		return err
	}
	if b.rec != nil && b.rec.tab != b.cur {
		return b.rec.moveTo(o, b.cur)
	}
	return nil
}

// dropTab forgets a tab that is gone.
func (b *Browser) dropTab(t *tab) {
	if b.rec != nil && b.rec.tab == t {
		b.rec.detach()
	}
	if t.cancel != nil {
		t.cancel()
		t.cancel = nil
	}
}

// attach connects a chromedp context to the tab if it has none. The first
// Run on a context binds the tab's event loop to the context it gets, so it
// gets the tab's own context; the action's deadline is enforced around it.
func (b *Browser) attach(o *op, t *tab) error {
	if t.ctx != nil {
		return nil
	}
	ctx, cancel := chromedp.NewContext(b.root, chromedp.WithTargetID(t.id), chromedp.WithListener(t.tr.handle))
	if err := b.firstRun(o, ctx, cancel); err != nil {
		return fmt.Errorf("attach to tab %s: %w", t.short, err)
	}
	t.ctx, t.cancel = ctx, cancel
	t.tr.setMain(string(t.id))
	b.watchDialogs(t)
	if u, err := evalOn[string](o, t, `location.href`); err == nil {
		t.tr.mu.Lock()
		if t.tr.url == "" {
			t.tr.url = u
		}
		t.tr.mu.Unlock()
	}
	return nil
}

func (b *Browser) firstRun(o *op, ctx context.Context, cancel context.CancelFunc) error {
	errc := make(chan error, 1)
	go func() { errc <- chromedp.Do(ctx) }()
	select {
	case err := <-errc:
		if err != nil {
			cancel()
		}
		return err
	case <-o.ctx.Done():
		cancel()
		<-errc
		return o.ctx.Err()
	}
}

// openTab opens a new blank tab (in its own window, so that it renders and
// gets animation frames), attaches to it and adds it to the tab list. It
// does not make it current.
func (b *Browser) openTab(o *op) (*tab, error) {
	t := &tab{tr: newTracker()}
	ctx, cancel := chromedp.NewContext(b.root, chromedp.WithListener(t.tr.handle))
	if err := b.firstRun(o, ctx, cancel); err != nil {
		return nil, fmt.Errorf("open a new tab: %w", err)
	}
	t.ctx, t.cancel = ctx, cancel
	t.id = t.target().TargetID
	t.tr.setMain(string(t.id))
	b.watchDialogs(t)
	t.short = b.shortID(t.id)
	t.url = "about:blank"
	t.tr.mu.Lock()
	if t.tr.url == "" {
		t.tr.url = t.url
	}
	t.tr.mu.Unlock()
	b.tabs = append(b.tabs, t)
	return t, nil
}

// switchTo makes t the current tab and brings it to the front; a recording
// follows it.
func (b *Browser) switchTo(o *op, t *tab) error {
	if err := b.attach(o, t); err != nil {
		return err
	}
	b.cur = t
	c, cancel := o.on(b.root)
	_, err := chromedp.CallBrowser(c, target.ActivateTarget, target.ActivateTargetParams{TargetID: t.id})
	cancel()
	if err != nil {
		return err
	}
	if b.rec != nil && b.rec.tab != t {
		return b.rec.moveTo(o, t)
	}
	return nil
}

// findTab finds an open tab by its 4-character id (case-insensitively).
func (b *Browser) findTab(id string) (*tab, error) {
	for _, t := range b.tabs {
		if strings.EqualFold(t.short, strings.TrimSpace(id)) {
			return t, nil
		}
	}
	ids := make([]string, 0, len(b.tabs))
	for _, t := range b.tabs {
		ids = append(ids, t.short)
	}
	return nil, userErrorf("No tab with id %q. Valid tab ids: %s. Use browser_list_tabs to see the open tabs.", id, strings.Join(ids, ", "))
}

// run runs a chromedp action on a tab within the action's deadline.
func run[T any](o *op, t *tab, a chromedp.Action[T]) (T, error) {
	c, cancel := o.on(t.ctx)
	defer cancel()
	return chromedp.Run(c, a)
}

// evalOn evaluates a JavaScript expression in the tab's page and decodes
// its value.
func evalOn[T any](o *op, t *tab, expr string) (T, error) {
	return run(o, t, chromedp.Evaluate[T](expr))
}

// script evaluates one of the embedded scripts with args (JSON-encoded).
func script[T any](o *op, t *tab, src string, args ...any) (T, error) {
	parts := make([]string, len(args))
	for i, a := range args {
		j, err := json.Marshal(a)
		if err != nil {
			var zero T
			return zero, err
		}
		parts[i] = string(j)
	}
	expr := "(function(){\n" + jsCommon + "\nreturn (" + src + ")(" + strings.Join(parts, ",") + ");\n})()"
	return evalOn[T](o, t, expr)
}

// sleep waits d or until the action ends.
func (o *op) sleep(d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-o.ctx.Done():
		return o.ctx.Err()
	}
}

// loadBudget is how long an action may wait for a page to load before it
// goes on with what it has, leaving time to report.
func (o *op) loadBudget() time.Time {
	return o.deadline.Add(-2 * time.Second)
}

// waitLoaded waits until the tab's main frame has stopped loading and its
// document is past "loading", or until the load budget is spent (then the
// page is used as it is).
func (b *Browser) waitLoaded(o *op, t *tab) error {
	until := o.loadBudget()
	for {
		st := t.tr.state()
		if !st.loading {
			rs, err := evalOn[string](o, t, `document.readyState`)
			if err == nil && rs != "loading" {
				return nil
			}
			if o.ctx.Err() != nil {
				return o.ctx.Err()
			}
		}
		if time.Now().After(until) {
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

// errDetached tells whether err means the tab went away.
func errDetached(err error) bool {
	return errors.Is(err, chromedp.ErrTargetDetached) || errors.Is(err, chromedp.ErrNoTarget)
}

// watchDialogs accepts the JavaScript dialogs (alert, confirm, prompt,
// beforeunload) the tab opens, which would otherwise block the page and
// every action on it, and notes them for the model. It stops with the tab.
func (b *Browser) watchDialogs(t *tab) {
	tgt := t.target()
	dialogs := cdp.Events(t.ctx, tgt, page.JavascriptDialogOpening)
	short := t.short
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.note(fmt.Sprintf("Note: the page in tab %s opened a JavaScript %s dialog saying %q; it was accepted.", short, ev.Type, ev.Message))
			c, cancel := context.WithTimeout(t.ctx, 10*time.Second)
			_, _ = cdp.Call(c, tgt, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true, PromptText: ev.DefaultPrompt})
			cancel()
		}
	}()
}

// note keeps a message for the model, added to the next observation.
func (b *Browser) note(msg string) {
	b.notesMu.Lock()
	defer b.notesMu.Unlock()
	if len(b.notes) < 20 {
		b.notes = append(b.notes, msg)
	}
}

// takeNotes returns and forgets the kept messages.
func (b *Browser) takeNotes() []string {
	b.notesMu.Lock()
	defer b.notesMu.Unlock()
	n := b.notes
	b.notes = nil
	return n
}
