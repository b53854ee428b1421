// Package browser drives a headless Chromium for the agent's browser tools
// (browser_navigate, browser_click, ... in events/tools.go). It speaks the
// Chrome DevTools Protocol through chromedp and answers each action with a
// text observation written for an LLM, compatible with OpenHands'
// browser-use tools.
//
// Guarantees:
//   - Chromium starts lazily, on the first Execute; New, and a Close without
//     any Execute, start no process. A Chromium that died is started again
//     by the next Execute (its tabs are lost).
//   - Execute calls are serialized: one action runs at a time, bounded by
//     Options.ActionTimeout (start-up has its own bound).
//   - Every text returned to the model (and the storage JSON) passes through
//     Options.Mask.
//   - Problems the model can act on are observations with IsError; Execute
//     returns a Go error only when Chromium cannot start or dies, when the
//     Browser is closed, or when the caller's context ends.
//   - Close kills Chromium and every process running with its profile
//     directory, and removes the temporary directories the Browser made.
package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/procenv"
)

// DefaultActionTimeout bounds one action when Options.ActionTimeout is zero.
const DefaultActionTimeout = 30 * time.Second

// startTimeout bounds Chromium's start-up, which does not count against the
// action's own timeout.
const startTimeout = 60 * time.Second

// ErrClosed is returned by Execute after Close.
var ErrClosed = errors.New("browser: closed")

// chromiumNames are the programs looked up on PATH when Options.ChromiumPath
// is empty, in order.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome"}

// Options configure a Browser. The zero value is usable.
type Options struct {
	// ChromiumPath is the browser binary. Default: the first of chromium,
	// chromium-browser, google-chrome found on PATH (see FindChromium).
	ChromiumPath string
	// UserDataDir is the profile directory. Default: a fresh temporary
	// directory per Browser, removed by Close. A directory given here is
	// kept.
	UserDataDir string
	// SaveDir is where recordings go, one new directory per recording.
	// Default: a temporary directory, removed by Close.
	SaveDir string
	// Mask is applied to all text returned to the model (secret masking);
	// nil means identity.
	Mask func(string) string
	// ExtraFlags are more Chromium command-line flags ("--name" or
	// "--name=value"), such as "--window-size=1280,1024" or "--lang=en".
	ExtraFlags []string
	// ActionTimeout bounds each action (not Chromium's start-up); the
	// caller's context can end it sooner. Default: DefaultActionTimeout.
	ActionTimeout time.Duration
}

// FindChromium returns the Chromium binary to run: $ACS_CHROMIUM when set,
// else the first of chromium,
// chromium-browser and google-chrome on PATH. A distribution's shell
// launcher (Debian's /usr/bin/chromium adds flags of its own) is replaced by
// the binary it runs, /usr/lib/<name>/<name>, so that Chromium gets exactly
// our flags.
func FindChromium() (string, error) {
	if p := os.Getenv("ACS_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("browser: ACS_CHROMIUM=%s is not an executable: %w", p, err)
		}
		return p, nil
	}
	for _, n := range chromiumNames {
		if p, err := exec.LookPath(n); err == nil {
			return unwrapLauncher(p), nil
		}
	}
	return "", fmt.Errorf("browser: no Chromium found on PATH (looked for %s)", strings.Join(chromiumNames, ", "))
}

// unwrapLauncher returns the binary behind a shell-script launcher, or p.
func unwrapLauncher(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return p
	}
	head := make([]byte, 2)
	_, err = f.Read(head)
	f.Close()
	if err != nil || string(head) != "#!" {
		return p
	}
	base := filepath.Base(p)
	real := filepath.Join("/usr/lib", base, base)
	if st, err := os.Stat(real); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return real
	}
	return p
}

// Browser is one Chromium instance with its tabs, shared by the browser
// tools of one conversation. It is safe for concurrent use; actions are
// serialized.
type Browser struct {
	opts    Options
	timeout time.Duration

	// mu serializes Execute and the final clean-up of Close. The fields
	// after the stateMu group are only touched with mu held.
	mu sync.Mutex

	// stateMu guards closed, the cancel funcs and dataDir, so that Close
	// can stop Chromium while an action holds mu.
	stateMu     sync.Mutex
	closed      bool
	allocCancel context.CancelFunc
	rootCancel  context.CancelFunc
	dataDir     string // the profile directory in use, once started

	root       context.Context // chromedp context owning Chromium; nil until started
	ownDataDir bool
	saveDir    string
	ownSaveDir bool
	tabs       []*tab
	cur        *tab
	hidden     map[string]bool // helper targets not shown as tabs
	rec        *recording
	recSeq     int

	// notes are messages for the model from the tabs' background watchers
	// (dialogs), added to the next observation.
	notesMu sync.Mutex
	notes   []string
}

// New returns a Browser that launches Chromium lazily on the first action,
// so a conversation that never browses costs nothing.
func New(opts Options) *Browser {
	t := opts.ActionTimeout
	if t <= 0 {
		t = DefaultActionTimeout
	}
	return &Browser{opts: opts, timeout: t, hidden: map[string]bool{}}
}

// UserDataDir is the profile directory Chromium runs with: empty while
// Chromium is not running (before the first action, after Close).
func (b *Browser) UserDataDir() string {
	b.stateMu.Lock()
	defer b.stateMu.Unlock()
	return b.dataDir
}

func (b *Browser) mask(s string) string {
	if b.opts.Mask == nil {
		return s
	}
	return b.opts.Mask(s)
}

// Execute runs one browser action and returns its observation. Problems the
// model can act on (bad index, unknown tab, navigation error, page not
// loaded, no recording in progress, timeout of the action...) are
// observations with IsError and a clear text. A Go error means
// infrastructure failure: Chromium could not start (the error names the
// binary) or died, the Browser is closed (ErrClosed), or ctx ended.
func (b *Browser) Execute(ctx context.Context, a events.Action) (*events.BrowserObservation, error) {
	if a == nil {
		return nil, errors.New("browser: nil action")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.isClosed() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := b.ensureStarted(ctx); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(b.timeout)
	octx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	o := &op{ctx: octx, caller: ctx, deadline: deadline}

	var r result
	err := b.syncTabs(o)
	if err == nil {
		r, err = b.dispatch(o, a)
	}
	return b.finish(o, r, err)
}

func (b *Browser) dispatch(o *op, a events.Action) (result, error) {
	switch a := a.(type) {
	case *events.BrowserNavigateAction:
		return b.navigate(o, a)
	case *events.BrowserClickAction:
		return b.click(o, a)
	case *events.BrowserTypeAction:
		return b.typeText(o, a)
	case *events.BrowserGetStateAction:
		return b.getState(o, a)
	case *events.BrowserGetContentAction:
		return b.getContent(o, a)
	case *events.BrowserScrollAction:
		return b.scroll(o, a)
	case *events.BrowserGoBackAction:
		return b.goBack(o)
	case *events.BrowserListTabsAction:
		return b.listTabs(o)
	case *events.BrowserSwitchTabAction:
		return b.switchTab(o, a)
	case *events.BrowserCloseTabAction:
		return b.closeTab(o, a)
	case *events.BrowserGetStorageAction:
		return b.getStorage(o)
	case *events.BrowserSetStorageAction:
		return b.setStorage(o, a)
	case *events.BrowserStartRecordingAction:
		return b.startRecording(o)
	case *events.BrowserStopRecordingAction:
		return b.stopRecording(o)
	}
	return result{}, &unsupportedError{kind: a.Kind()}
}

// unsupportedError is a non-browser action: a programming error, reported
// as a Go error.
type unsupportedError struct{ kind string }

func (e *unsupportedError) Error() string { return "browser: unsupported action " + e.kind }

// result is what an action reports on success.
type result struct {
	text       string
	screenshot *string
	saveDir    *string
}

// userError is a failure the model can act on: it becomes an observation
// with IsError.
type userError struct{ msg string }

func (e *userError) Error() string { return e.msg }

func userErrorf(format string, args ...any) error {
	return &userError{msg: fmt.Sprintf(format, args...)}
}

// op is one running action: its deadline and the caller's context.
type op struct {
	ctx      context.Context // caller's context with the action deadline
	caller   context.Context
	deadline time.Time
}

// on derives from a chromedp context (the browser's or a tab's) a context
// that also ends with the action.
func (o *op) on(parent context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithDeadline(parent, o.deadline)
	stop := context.AfterFunc(o.ctx, cancel)
	return c, func() { stop(); cancel() }
}

// finish turns an action's outcome into the observation or the Go error,
// adding the notes of the background watchers and masking the text.
func (b *Browser) finish(o *op, r result, err error) (*events.BrowserObservation, error) {
	obs := &events.BrowserObservation{}
	text := r.text
	if err == nil {
		obs.ScreenshotData = r.screenshot
		obs.FullOutputSaveDir = r.saveDir
	} else {
		var ue *userError
		var unsup *unsupportedError
		switch {
		case errors.As(err, &ue):
			text = ue.msg
		case errors.As(err, &unsup):
			return nil, err
		case b.isClosed():
			return nil, ErrClosed
		case o.caller.Err() != nil:
			return nil, fmt.Errorf("browser: %w", o.caller.Err())
		case b.root == nil || b.root.Err() != nil:
			return nil, fmt.Errorf("browser: chromium exited: %w", err)
		case errors.Is(err, context.DeadlineExceeded) || o.ctx.Err() != nil:
			text = fmt.Sprintf("The browser action timed out after %s (%v). The page may still be loading or be unresponsive; try browser_get_state, or another action.", b.timeout, err)
		default:
			text = "Browser error: " + err.Error()
		}
		obs.IsError = true
	}
	if notes := b.takeNotes(); len(notes) > 0 {
		text += "\n" + strings.Join(notes, "\n")
	}
	obs.SetText(b.mask(text))
	return obs, nil
}

func (b *Browser) isClosed() bool {
	b.stateMu.Lock()
	defer b.stateMu.Unlock()
	return b.closed
}

// ensureStarted launches Chromium if it does not run (first use, or after it
// died). Start-up has its own timeout and ends early with ctx.
func (b *Browser) ensureStarted(ctx context.Context) error {
	if b.root != nil && b.root.Err() == nil {
		return nil
	}
	if b.root != nil {
		// Chromium died: forget it and start afresh.
		b.shutdown()
	}
	path := b.opts.ChromiumPath
	if path == "" {
		p, err := FindChromium()
		if err != nil {
			return err
		}
		path = p
	}
	dir := b.opts.UserDataDir
	own := false
	if dir == "" {
		d, err := os.MkdirTemp("", "acs-chromium-")
		if err != nil {
			return fmt.Errorf("browser: create profile directory: %w", err)
		}
		dir, own = d, true
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("browser: create profile directory: %w", err)
	}
	// chromedp's defaults (headless, no-first-run, ...) plus ours.
	allocOpts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(dir),
		// Never the agent server's own credentials.
		chromedp.NoInheritEnv, chromedp.Env(procenv.Environ()...),
	)
	for _, f := range b.opts.ExtraFlags {
		name, value, hasValue := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if name == "" {
			continue
		}
		if hasValue {
			allocOpts = append(allocOpts, chromedp.Flag(name, value))
		} else {
			allocOpts = append(allocOpts, chromedp.Flag(name, true))
		}
	}

	first := &tab{root: true, tr: newTracker()}
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), allocOpts...)
	// chromedp logs with the log package by default; send it to slog.
	logf := func(format string, args ...any) { slog.Debug("browser: chromedp: " + fmt.Sprintf(format, args...)) }
	root, rootCancel := chromedp.NewContext(allocCtx, chromedp.WithListener(first.tr.handle),
		chromedp.WithLogf(logf), chromedp.WithErrorf(logf))
	// Both cancel funcs wait for Chromium to stop; make them safe to call
	// from Close and from shutdown.
	allocCancel, rootCancel = sync.OnceFunc(allocCancel), sync.OnceFunc(rootCancel)

	b.stateMu.Lock()
	closed := b.closed
	if !closed {
		b.allocCancel, b.rootCancel, b.dataDir = allocCancel, rootCancel, dir
	}
	b.stateMu.Unlock()
	abort := func() {
		rootCancel()
		allocCancel()
		killLeftovers(dir)
		if own {
			_ = removeAllRetry(dir)
		}
		b.stateMu.Lock()
		b.allocCancel, b.rootCancel, b.dataDir = nil, nil, ""
		b.stateMu.Unlock()
	}
	if closed {
		abort()
		return ErrClosed
	}

	// The first Run binds Chromium's life to the context it gets, so it
	// must get root itself; the caller's context and the start-up timeout
	// are enforced around it.
	errc := make(chan error, 1)
	go func() { errc <- chromedp.Do(root) }()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	var err error
	select {
	case err = <-errc:
		if err != nil {
			err = fmt.Errorf("browser: start chromium %s: %w", path, err)
		}
	case <-ctx.Done():
		err = fmt.Errorf("browser: start chromium %s: %w", path, ctx.Err())
	case <-timer.C:
		err = fmt.Errorf("browser: start chromium %s: no answer within %s", path, startTimeout)
	}
	if err == nil && b.isClosed() {
		err = ErrClosed
	}
	if err != nil {
		abort()
		return err
	}
	c := chromedp.FromContext(root)
	first.id = c.Target.TargetID
	first.ctx = root
	first.tr.setMain(string(first.id))
	first.url = "about:blank"
	b.root, b.ownDataDir = root, own
	b.tabs = []*tab{first}
	first.short = b.shortID(first.id)
	b.cur = first
	b.watchDialogs(first)
	return nil
}

// shutdown stops Chromium and forgets its tabs and recording; it keeps the
// save directory. mu must be held.
func (b *Browser) shutdown() {
	b.stateMu.Lock()
	rc, ac, dir := b.rootCancel, b.allocCancel, b.dataDir
	b.rootCancel, b.allocCancel, b.dataDir = nil, nil, ""
	b.stateMu.Unlock()
	if rc != nil {
		rc()
	}
	for _, t := range b.tabs {
		if t.cancel != nil {
			t.cancel()
		}
	}
	if b.rec != nil {
		b.rec.detach()
		b.rec = nil
	}
	if ac != nil {
		ac()
	}
	if dir != "" {
		killLeftovers(dir)
		if b.ownDataDir {
			_ = removeAllRetry(dir)
		}
	}
	b.root, b.tabs, b.cur = nil, nil, nil
	b.hidden = map[string]bool{}
}

// Close kills Chromium (and every process running with its profile
// directory) and removes the temporary directories the Browser made. It
// interrupts a running action, is safe to call more than once, and is fine
// on a Browser that never started. Later Execute calls return ErrClosed.
func (b *Browser) Close() error {
	b.stateMu.Lock()
	if b.closed {
		b.stateMu.Unlock()
		return nil
	}
	b.closed = true
	rc := b.rootCancel
	b.stateMu.Unlock()
	if rc != nil {
		// Kill Chromium first so that a running action fails fast and
		// releases mu.
		rc()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.shutdown()
	var err error
	if b.ownSaveDir && b.saveDir != "" {
		err = removeAllRetry(b.saveDir)
	}
	return err
}
