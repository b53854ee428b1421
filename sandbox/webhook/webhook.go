// Package webhook pushes a sandbox's conversation events and conversation
// info to the control plane: events as JSON arrays to
// {base}/events/{conversation_id_hex}, info to {base}/conversations, both with
// the X-Session-API-Key header. Delivery is at least once: each conversation's
// events are sent in log order from a cursor persisted after every
// acknowledgement, retried with backoff until the control plane answers 2xx,
// and resumed from the cursor after a restart. An event appended while the
// pipe is idle is posted at once; events appended while a post is in flight
// (or being retried) go together in the next one, up to BatchSize.
package webhook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/eventlog"
)

// Config configures a Pusher.
type Config struct {
	// BaseURLs are the webhook bases, e.g. http://host/api/v1/webhooks.
	BaseURLs []string
	// SessionKey is sent as X-Session-API-Key.
	SessionKey string
	// FlushDelay is how long new events wait for more to batch with when
	// fewer than BatchSize are waiting. Default 0: none, an event is posted as
	// soon as it is durable and the previous post was answered (batching
	// happens only under load, from the events appended during a post).
	FlushDelay time.Duration
	// BatchSize caps events per request (default 100).
	BatchSize int
	// MaxBackoff caps the retry wait (default 5s).
	MaxBackoff time.Duration
	Client     *http.Client
}

// watch is a conversation whose events are being delivered.
type watch struct {
	cancel       context.CancelFunc
	log          *eventlog.Log
	cursorPrefix string
}

// infoFlushWait bounds how long a conversation's info waits for its
// events to be acknowledged first.
const infoFlushWait = 10 * time.Second

// Pusher delivers events and info for many conversations.
type Pusher struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	watches map[uuid.UUID]watch
	info    map[uuid.UUID]func() *agentwire.ConversationInfo
	later   map[uuid.UUID]*time.Timer // NotifyInfoAfter's, not due yet
	infoSig chan struct{}
}

// New starts a pusher. It does nothing when cfg has no base URLs.
func New(cfg Config) *Pusher {
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 100
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 5 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pusher{cfg: cfg, ctx: ctx, cancel: cancel, watches: map[uuid.UUID]watch{},
		info: map[uuid.UUID]func() *agentwire.ConversationInfo{}, later: map[uuid.UUID]*time.Timer{}, infoSig: make(chan struct{}, 1)}
	if len(cfg.BaseURLs) > 0 {
		p.wg.Add(1)
		go p.infoLoop()
	}
	return p
}

// Enabled reports whether any webhook is configured.
func (p *Pusher) Enabled() bool { return len(p.cfg.BaseURLs) > 0 }

// Watch starts delivering the conversation's events. Cursor files named
// cursorPrefix + "-N" (one per base URL) record what was acknowledged.
func (p *Pusher) Watch(id uuid.UUID, log *eventlog.Log, cursorPrefix string) {
	if !p.Enabled() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.watches[id]; ok {
		return
	}
	ctx, cancel := context.WithCancel(p.ctx)
	p.watches[id] = watch{cancel: cancel, log: log, cursorPrefix: cursorPrefix}
	for i, base := range p.cfg.BaseURLs {
		p.wg.Add(1)
		go p.pushEvents(ctx, id, log, base, fmt.Sprintf("%s-%d", cursorPrefix, i))
	}
}

// Unwatch stops delivering a conversation's events.
func (p *Pusher) Unwatch(id uuid.UUID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.watches[id]; ok {
		w.cancel()
		delete(p.watches, id)
	}
	p.cancelLaterLocked(id)
}

// Flush blocks until every watched conversation's events up to now have been
// acknowledged by every base, or ctx ends.
func (p *Pusher) Flush(ctx context.Context, id uuid.UUID, log *eventlog.Log, cursorPrefix string) error {
	return p.flushTo(ctx, cursorPrefix, log.Len())
}

// flushTo waits until every base acknowledged the first target events.
func (p *Pusher) flushTo(ctx context.Context, cursorPrefix string, target int) error {
	for {
		done := true
		for i := range p.cfg.BaseURLs {
			if readCursor(fmt.Sprintf("%s-%d", cursorPrefix, i)) < target {
				done = false
			}
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// NotifyInfo schedules a push of the conversation's info; get is called when
// sending so the latest state goes out. Repeated calls coalesce.
func (p *Pusher) NotifyInfo(id uuid.UUID, get func() *agentwire.ConversationInfo) {
	if !p.Enabled() {
		return
	}
	p.mu.Lock()
	p.info[id] = get
	p.cancelLaterLocked(id)
	p.mu.Unlock()
	select {
	case p.infoSig <- struct{}{}:
	default:
	}
}

// NotifyInfoAfter is NotifyInfo d from now, unless a NotifyInfo of the
// conversation comes first (which sends its latest info anyway) or it is
// unwatched. It is for a new conversation's first info when whoever asked
// for the conversation stores its own record of it once the creation is
// answered: a report before that record would be refused (retried after a
// backoff), costing both sides a request while the start is under way.
func (p *Pusher) NotifyInfoAfter(id uuid.UUID, get func() *agentwire.ConversationInfo, d time.Duration) {
	if !p.Enabled() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cancelLaterLocked(id)
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		p.mu.Lock()
		due := p.later[id] == t
		if due {
			delete(p.later, id)
		}
		p.mu.Unlock()
		if due {
			p.NotifyInfo(id, get)
		}
	})
	p.later[id] = t
}

// cancelLaterLocked drops the conversation's NotifyInfoAfter not due yet.
func (p *Pusher) cancelLaterLocked(id uuid.UUID) {
	if t, ok := p.later[id]; ok {
		t.Stop()
		delete(p.later, id)
	}
}

// Close stops all delivery.
func (p *Pusher) Close() {
	p.cancel()
	p.wg.Wait()
}

func (p *Pusher) post(ctx context.Context, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if p.cfg.SessionKey != "" {
		req.Header.Set(agentwire.SessionKeyHeader, p.cfg.SessionKey)
	}
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook %s: HTTP %d: %s", url, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}

// backoff waits before retry n (1-based): 50ms doubling to MaxBackoff.
func (p *Pusher) backoff(ctx context.Context, n int) bool {
	d := 50 * time.Millisecond << min(n-1, 10)
	if d > p.cfg.MaxBackoff {
		d = p.cfg.MaxBackoff
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func (p *Pusher) pushEvents(ctx context.Context, id uuid.UUID, log *eventlog.Log, base, cursorPath string) {
	defer p.wg.Done()
	url := strings.TrimRight(base, "/") + "/events/" + agentwire.Hex(id)
	pos := readCursor(cursorPath)
	lg := slog.With("conversation", id.String(), "webhook", base)
	for {
		if err := log.Wait(ctx, pos); err != nil {
			return
		}
		// No fixed delay by default: events appended while the previous
		// post was in flight are already waiting and go together.
		if p.cfg.FlushDelay > 0 && log.Len()-pos < p.cfg.BatchSize {
			select {
			case <-ctx.Done():
				return
			case <-time.After(p.cfg.FlushDelay):
			}
		}
		items, err := log.ReadFrom(pos, p.cfg.BatchSize)
		if err != nil {
			lg.Error("webhook: read events", "error", err)
			if !p.backoff(ctx, 5) {
				return
			}
			continue
		}
		body := append([]byte{'['}, bytes.Join(items, []byte{','})...)
		body = append(body, ']')
		for attempt := 1; ; attempt++ {
			err := p.post(ctx, url, body)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			if attempt == 1 || attempt%20 == 0 {
				lg.Warn("webhook: event delivery failed; retrying", "attempt", attempt, "error", err)
			}
			if !p.backoff(ctx, attempt) {
				return
			}
		}
		pos += len(items)
		if err := writeCursor(cursorPath, pos); err != nil {
			lg.Error("webhook: save cursor", "error", err)
		}
	}
}

func (p *Pusher) infoLoop() {
	defer p.wg.Done()
	failures := 0
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.infoSig:
		}
		p.mu.Lock()
		pending := p.info
		p.info = map[uuid.UUID]func() *agentwire.ConversationInfo{}
		p.mu.Unlock()
		failed := false
		for id, get := range pending {
			// The events logged before this info go first: a client that
			// sees "finished" on the control plane then finds the run's
			// last events there too. Bounded, so a control plane refusing
			// events does not hold every conversation's info back.
			p.mu.Lock()
			w, watched := p.watches[id]
			p.mu.Unlock()
			var target int
			if watched {
				target = w.log.Len()
			}
			info := get()
			if info == nil {
				continue
			}
			if watched {
				fctx, cancel := context.WithTimeout(p.ctx, infoFlushWait)
				p.flushTo(fctx, w.cursorPrefix, target)
				cancel()
			}
			body, err := strictjson.Marshal(info)
			if err != nil {
				slog.Error("webhook: encode conversation info", "error", err)
				continue
			}
			for _, base := range p.cfg.BaseURLs {
				if err := p.post(p.ctx, strings.TrimRight(base, "/")+"/conversations", body); err != nil {
					failed = true
					if failures%20 == 0 {
						slog.Warn("webhook: conversation info delivery failed; retrying", "conversation", id.String(), "error", err)
					}
					p.mu.Lock()
					if _, newer := p.info[id]; !newer {
						p.info[id] = get
					}
					p.mu.Unlock()
				}
			}
		}
		if failed {
			failures++
			if !p.backoff(p.ctx, failures) {
				return
			}
			select {
			case p.infoSig <- struct{}{}:
			default:
			}
		} else {
			failures = 0
		}
	}
}

func readCursor(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func writeCursor(path string, n int) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(n)), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
