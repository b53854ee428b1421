// Package agent runs conversations: it keeps a conversation's state and event
// log, builds the LLM's view of the history, and runs the agent loop (LLM call
// → ActionEvents → tools → ObservationEvents) with its status machine.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agent/history"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/atomicfile"
	"github.com/acs-project/acs/sandbox/eventlog"
	"github.com/acs-project/acs/sandbox/hooks"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/secrets"
	"github.com/acs-project/acs/sandbox/skills"
	"github.com/acs-project/acs/sandbox/tools"
)

// Errors returned by conversation operations.
var (
	ErrAlreadyRunning = errors.New("Conversation already running. Wait for completion or pause first.")
	ErrClosed         = errors.New("conversation closed")
)

const (
	metaFile  = "meta.json"
	stateFile = "state.json"
	// newMetaFile is the meta file of a create before it is renamed into
	// place (see writeCreatedMeta).
	newMetaFile = ".meta.json.new"
)

// meta is what a conversation was created with, plus its editable metadata.
type meta struct {
	ID        string                             `json:"id"`
	Request   agentwire.StartConversationRequest `json:"request"`
	Title     *string                            `json:"title"`
	Tags      map[string]string                  `json:"tags"`
	CreatedAt events.Time                        `json:"created_at"`
	// ForkedFrom and ForkedFromEvent record where a fork came from.
	ForkedFrom      *string `json:"forked_from"`
	ForkedFromEvent *string `json:"forked_from_event"`
	// SecretScheme says how the request's secret values are stored: sealed
	// with the server's key, redacted (no key), or "" (plain, older files).
	SecretScheme string `json:"secret_scheme"`
}

// state is the mutable runtime state.
type state struct {
	ExecutionStatus          agentwire.ExecutionStatus    `json:"execution_status"`
	ConfirmationPolicy       agentwire.ConfirmationPolicy `json:"confirmation_policy"`
	LastUserMessageID        *string                      `json:"last_user_message_id"`
	Stats                    agentwire.Stats              `json:"stats"`
	ActivatedKnowledgeSkills []string                     `json:"activated_knowledge_skills"`
	SystemPromptEmitted      bool                         `json:"system_prompt_emitted"`
	DynamicContext           string                       `json:"dynamic_context"`
	LastPromptTokens         int64                        `json:"last_prompt_tokens"`
	NudgedFor                string                       `json:"nudged_for"`
	SecurityAnalyzer         json.RawMessage              `json:"security_analyzer" acs:"nullable"`
	AgentState               map[string]string            `json:"agent_state"`
	BlockedActions           map[string]string            `json:"blocked_actions" acs:"nullable"`
	BlockedMessages          map[string]string            `json:"blocked_messages" acs:"nullable"`
	UpdatedAt                events.Time                  `json:"updated_at"`

	// UnannouncedSecrets are the names of secrets added after the system
	// prompt was sent; the next user message tells the LLM about them.
	UnannouncedSecrets []string `json:"unannounced_secrets"`

	// Goal is the status of the goal loop (see goal.go).
	Goal *agentwire.GoalStatus `json:"goal"`
}

// Transient is a frame sent to live subscribers only (never persisted).
// Subscribers deliver every logged event before position AfterLog first.
type Transient struct {
	Frame    []byte
	AfterLog int
}

// Options configure a conversation.
type Options struct {
	// Dir is the conversation's private persistence directory.
	Dir string
	// OnChange is called after the conversation's info changed: status,
	// stats, title, tags. Calls come one at a time, without locks held, and
	// changes during a call make one more call after it. Close waits for
	// them, so OnChange must not call Close.
	OnChange func(*Conversation)
	// Log is the logger; nil uses slog.Default.
	Log *slog.Logger
	// Masker hides secret values; the server shares one among its
	// conversations (so its HTTP, WebSocket and log output is masked too).
	// nil gives the conversation its own.
	Masker *secrets.Masker
	// Cipher seals secrets in meta.json; nil leaves them out of it (they are
	// then lost on restart).
	Cipher *secrets.Cipher
	// HTTPClient fetches LookupSecret values; nil uses http.DefaultClient.
	HTTPClient *http.Client
	// TracerProvider makes the conversation's spans; nil uses the global
	// provider (see sandbox/telemetry).
	TracerProvider trace.TracerProvider
	// SkillDirs are the user, organisation, public and sandbox skill
	// directories.
	SkillDirs skills.Dirs
	// MCPConnectTimeout bounds connecting each MCP server (default 30s).
	MCPConnectTimeout time.Duration
	// OnSecrets is called after the conversation's resolved secrets
	// changed, e.g. to refresh the bash API's environment. Its calls are
	// made as OnChange's are.
	OnSecrets func(*Conversation)
}

// Conversation is one conversation: its state, event log, tools and loop.
// It is safe for concurrent use: one owner goroutine runs every change
// (owner.go).
type Conversation struct {
	id   uuid.UUID
	dir  string
	opts Options
	log  *eventlog.Log
	lg   *slog.Logger

	// own runs every op that reads or changes what follows (owner.go).
	own    owner
	meta   meta
	st     state
	hist   history.History // the conversation tree and its active branch, see tree.go
	kit    *kit            // tools, skills, hooks and MCP servers: replaced, never changed
	client *llm.Client
	closed bool

	masker     *secrets.Masker
	secretVals map[string]string // resolved secrets by name

	// Setup (lookups, plugins, MCP, skills, hooks) may run in the
	// background; setupDone is closed once its result is applied.
	setupDone   chan struct{}
	setupCancel context.CancelFunc

	// sessionStarted is closed when the session_start hooks have run
	// (nil without hooks); session_end waits for it.
	sessionStarted chan struct{}
	stopDenials    int // stop-hook denials in the current run

	// bg ends when the conversation closes (background hooks stop).
	bg       context.Context
	bgCancel context.CancelFunc
	hookWG   sync.WaitGroup
	// logClosed is set once nothing may be appended any more.
	logClosed bool

	tracer  trace.Tracer
	spans   []trace.Span    // the root "conversation" span and the named one
	spanCtx context.Context // parent of LLM and tool spans

	stateDirty bool
	// infoStale says the state changed since the snapshot was published.
	// Every change is noted by what persists it: emitWith, saveState,
	// setStatus, putMeta.
	infoStale bool
	// notifyChange asks publish to notify OnChange (markChanged).
	notifyChange bool
	// unsynced waits for the fsync of the last emitNoWait (nil when
	// none is outstanding).
	unsynced func() error
	// llmRetrying is set while an llm_retry state update announces a
	// retry the LLM call has not finished yet.
	llmRetrying bool
	running     bool
	rerun       bool
	pauseAsked  bool
	cancelRun   context.CancelFunc
	runDone     chan struct{}
	// interrupted is the runDone of the run an Interrupt cancelled; the
	// run records the interruption as it ends (endRun).
	interrupted chan struct{}
	// goalLoopRun is the goal loop in progress (nil: none).
	goalLoopRun *goalRun

	subs fanout

	// snapshot is what Info and Status return, published after each op:
	// they read it without asking the owner.
	snapshot atomic.Pointer[agentwire.ConversationInfo]

	// goroutines runs every goroutine the conversation starts (goAsync);
	// Close waits for them.
	goroutines group
	onChange   notifier
	onSecrets  notifier

	// llmNanos accumulates time spent in LLM calls (loop overhead
	// benchmarks subtract it).
	llmNanos atomic.Int64
}

// WorkingDirError is the error of Create when the requested working
// directory cannot be created (a file in the way, no permission, a
// read-only or full file system): Err is the os.MkdirAll error.
type WorkingDirError struct{ Err error }

func (e *WorkingDirError) Error() string { return "create working dir: " + e.Err.Error() }

func (e *WorkingDirError) Unwrap() error { return e.Err }

// Create makes a new conversation in opts.Dir from req (already validated)
// and returns it idle. The directory must not hold a conversation yet. A
// working directory that cannot be created is a *WorkingDirError.
func Create(ctx context.Context, id uuid.UUID, req agentwire.StartConversationRequest, opts Options) (*Conversation, error) {
	if err := os.MkdirAll(req.Workspace.WorkingDir, 0o755); err != nil {
		return nil, &WorkingDirError{Err: err}
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create conversation dir: %w", err)
	}
	if err := clearUnfinished(opts.Dir); err != nil {
		return nil, fmt.Errorf("create conversation %s: %w", id, err)
	}
	req, err := openEncryptedRequest(req, opts.Cipher)
	if err != nil {
		return nil, err
	}
	now := events.Now()
	c := newConversation(id, opts)
	c.meta = meta{ID: id.String(), Request: req, Tags: req.Tags, CreatedAt: now}
	if c.meta.Tags == nil {
		c.meta.Tags = map[string]string{}
	}
	c.st = initialState(req, now)
	// Every file is written before anything is synced: the meta file and
	// the empty log. Then one sync of the meta file commits them both (the
	// file system journals the new entries together), and the
	// directories' syncs after it, which make the entries durable, find
	// little left to do. Those syncs run while the log is opened and the
	// tools are built; Create returns once they are done. No state
	// snapshot is written: the initial state is what Load derives from the
	// meta file when there is none, and the first snapshot is written when
	// the execution status first changes (or at Close, see
	// saveState). A new file costs a millisecond of kernel time on
	// some file systems, so a create makes only those it needs. A crash
	// before the syncs end leaves a create that was never acknowledged,
	// which the next Create of the id clears (clearUnfinished).
	if err := c.createMeta(); err != nil {
		return nil, err
	}
	if err := eventlog.Create(opts.Dir); err != nil {
		return nil, err
	}
	synced := make(chan error, 1)
	c.goAsync(func() { synced <- syncCreated(opts.Dir) }) // c is not shared yet: never refused
	err = c.open(ctx)
	if serr := <-synced; err == nil && serr != nil {
		c.Close()
		err = fmt.Errorf("create conversation %s: sync: %w", id, serr)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// clearUnfinished removes what a create that never finished left in dir:
// its files, when the meta file is missing or does not decode (written,
// not yet synced, when the machine stopped; a finished create's meta file
// is synced, and rewritten atomically after), except the empty files
// Prepare makes, which the create uses. A readable meta file is
// fs.ErrExist: dir holds a conversation.
func clearUnfinished(dir string) error {
	var m meta
	if err := readJSON(filepath.Join(dir, metaFile), &m); err == nil {
		return fs.ErrExist
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if prepared(e) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Prepare makes in dir, an empty directory made ahead of need, the files
// a Create in it makes, empty (a new file costs a millisecond of kernel
// time on some file systems): the create then writes them rather than
// makes them. Nothing is synced: Create syncs what it uses. Errors: a
// file already there (fs.ErrExist), or making one.
func Prepare(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, newMetaFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("prepare a conversation directory: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("prepare a conversation directory: %w", err)
	}
	return eventlog.Prepare(dir)
}

// prepared reports whether e is a file Prepare makes, still empty.
func prepared(e fs.DirEntry) bool {
	if (e.Name() != newMetaFile && e.Name() != eventlog.FileName) || !e.Type().IsRegular() {
		return false
	}
	info, err := e.Info()
	return err == nil && info.Size() == 0
}

// writeCreatedMeta writes data, a create's meta file, to path through
// newMetaFile beside it (the empty one Prepare made, or a new one),
// unsynced: Create syncs it (syncCreated).
func writeCreatedMeta(path string, data []byte, mode fs.FileMode) error {
	return atomicfile.WriteUnsyncedVia(path, filepath.Join(filepath.Dir(path), newMetaFile), data, mode)
}

// syncCreated makes a new conversation's files in dir durable: its meta
// file's content, then the directory entries (dir's, and dir's own in its
// parent). Errors: opening or syncing either.
func syncCreated(dir string) error {
	f, err := os.Open(filepath.Join(dir, metaFile))
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return atomicfile.SyncDirAndParent(dir)
}

// Load reopens a conversation persisted in opts.Dir. A conversation that was
// running when the server stopped comes back with status error, and every
// action left without an observation gets an AgentErrorEvent.
func Load(ctx context.Context, opts Options) (*Conversation, error) {
	var m meta
	if err := readJSON(filepath.Join(opts.Dir, metaFile), &m); err != nil {
		return nil, err
	}
	id, err := uuid.Parse(m.ID)
	if err != nil {
		return nil, fmt.Errorf("load conversation: bad id in %s: %w", opts.Dir, err)
	}
	c := newConversation(id, opts)
	var lost []string
	m.Request, lost = unsealRequest(m.Request, m.SecretScheme, opts.Cipher)
	if len(lost) > 0 {
		c.lg.Warn("secrets could not be restored (no OH_SECRET_KEY, or it changed); the conversation continues without them",
			"names", lost)
	}
	c.meta = m
	if err := readJSON(filepath.Join(opts.Dir, stateFile), &c.st); errors.Is(err, fs.ErrNotExist) {
		// Created, but its first snapshot was lost (a crash right after
		// the creation): the state it started with.
		c.st = initialState(m.Request, m.CreatedAt)
	} else if err != nil {
		return nil, err
	}
	if c.st.Stats.UsageToMetrics == nil {
		c.st.Stats.UsageToMetrics = map[string]*agentwire.Metrics{}
	}
	if c.st.AgentState == nil {
		c.st.AgentState = map[string]string{}
	}
	if c.st.BlockedActions == nil {
		c.st.BlockedActions = map[string]string{}
	}
	if c.st.BlockedMessages == nil {
		c.st.BlockedMessages = map[string]string{}
	}
	if err := c.open(ctx); err != nil {
		return nil, err
	}
	if err := c.recover(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if err := call(c, func() error { return c.recoverGoal(ctx) }); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// initialState is the state of a conversation created from req at now:
// idle, with the request's confirmation policy and security analyzer.
func initialState(req agentwire.StartConversationRequest, now events.Time) state {
	policy := agentwire.NeverConfirm()
	if req.ConfirmationPolicy != nil {
		policy = *req.ConfirmationPolicy
	}
	return state{ExecutionStatus: agentwire.StatusIdle, ConfirmationPolicy: policy, UpdatedAt: now,
		Stats: agentwire.Stats{UsageToMetrics: map[string]*agentwire.Metrics{}}, SecurityAnalyzer: req.SecurityAnalyzer,
		AgentState: map[string]string{}, BlockedActions: map[string]string{}, BlockedMessages: map[string]string{}}
}

func newConversation(id uuid.UUID, opts Options) *Conversation {
	lg := opts.Log
	if lg == nil {
		lg = slog.Default()
	}
	m := opts.Masker
	if m == nil {
		m = secrets.NewMasker()
	}
	bg, cancel := context.WithCancel(context.Background())
	lg = lg.With("conversation", id.String())
	c := &Conversation{id: id, dir: opts.Dir, opts: opts, lg: lg, subs: fanout{lg: lg},
		masker: m, secretVals: map[string]string{}, bg: bg, bgCancel: cancel, own: newOwner()}
	if opts.OnChange != nil {
		c.onChange = notifier{call: func() { opts.OnChange(c) }, start: c.goAsync}
	}
	if opts.OnSecrets != nil {
		c.onSecrets = notifier{call: func() { opts.OnSecrets(c) }, start: c.goAsync}
	}
	return c
}

// goAsync runs f in a goroutine Close waits for, and reports true. Once
// Close waits for them it runs nothing and reports false.
func (c *Conversation) goAsync(f func()) bool { return c.goroutines.Go(f) }

// untilClosed returns ctx, also canceled when c.bg ends (the conversation
// closes), and the function that releases it.
func (c *Conversation) untilClosed(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, stop := context.WithCancel(ctx)
	watch := func() {
		select {
		case <-c.bg.Done():
			stop()
		case <-ctx.Done():
		}
	}
	if !c.goAsync(watch) {
		stop() // Close is past c.bg's end
	}
	return ctx, stop
}

// open opens the event log, rebuilds the LLM history and builds the tools.
func (c *Conversation) open(ctx context.Context) error {
	l, err := eventlog.Open(c.dir)
	if err != nil {
		return err
	}
	c.log = l
	byID := map[string]events.Event{}
	for i := 0; i < l.Len(); i += 500 {
		batch, err := l.ReadFrom(i, 500)
		if err != nil {
			l.Close()
			return err
		}
		for _, b := range batch {
			ev, err := events.Decode(b)
			if err != nil {
				l.Close()
				return fmt.Errorf("load conversation %s: stored event: %w", c.id, err)
			}
			if history.InView(ev) {
				byID[ev.EventBase().ID] = ev
			}
			c.hist.Add(ev)
			c.replay(ev)
		}
	}
	if err := c.loadBranch(byID); err != nil {
		l.Close()
		return err
	}
	req := c.meta.Request
	c.startTrace(ctx)
	lookups := c.resolveStatic()
	env := tools.Env{ConversationID: c.id.String(), WorkDir: req.Workspace.WorkingDir,
		StateDir: filepath.Join(c.dir, "tools"), Log: c.lg, Environ: c.secretEnv(), Mask: c.masker.Mask}
	ts, err := tools.Build(ctx, env, req.Agent.Tools)
	if err != nil {
		l.Close()
		return err
	}
	c.kit = newKit(ts)
	c.client = llm.New(req.Agent.LLM)
	c.client.OnWait = c.rateLimited
	c.startOwner()
	c.startSetup(ctx, lookups)
	c.do(func() { c.infoStale = true }) // the setup may be running
	return nil
}

// recover repairs a conversation whose server stopped mid-run.
func (c *Conversation) recover(ctx context.Context) error {
	return call(c, func() error { return c.recoverRun(ctx) })
}

func (c *Conversation) recoverRun(ctx context.Context) error {
	if c.st.ExecutionStatus != agentwire.StatusRunning {
		return nil
	}
	var orphans []events.Event
	for _, a := range c.hist.Unanswered() {
		orphans = append(orphans, &events.AgentErrorEvent{ToolName: a.ToolName, ToolCallID: a.ToolCallID,
			Error: "A restart occurred while this tool was in progress. The tool call was interrupted and its result is unknown; check the state before retrying."})
	}
	if err := c.emit(ctx, orphans...); err != nil {
		return err
	}
	return c.setStatus(ctx, agentwire.StatusError)
}

// Request returns a copy of the request the conversation was created with
// (secrets included: never serve it).
func (c *Conversation) Request() agentwire.StartConversationRequest {
	return call(c, c.request)
}

func (c *Conversation) request() agentwire.StartConversationRequest {
	r := c.meta.Request
	if r.Secrets != nil {
		s := make(map[string]agentwire.SecretSource, len(r.Secrets))
		for k, v := range r.Secrets {
			s[k] = v
		}
		r.Secrets = s
	}
	return r
}

// MarkForked records that the conversation is a fork, with its title.
func (c *Conversation) MarkForked(src, event string, title *string) error {
	return call(c, func() error { return c.markForked(src, event, title) })
}

func (c *Conversation) markForked(src, event string, title *string) error {
	c.meta.ForkedFrom = &src
	if event != "" {
		c.meta.ForkedFromEvent = &event
	}
	if title != nil {
		c.meta.Title = title
	}
	return c.writeMeta()
}

// ID returns the conversation id.
func (c *Conversation) ID() uuid.UUID { return c.id }

// WorkDir returns the conversation's working directory.
func (c *Conversation) WorkDir() string { return c.meta.Request.Workspace.WorkingDir }

// Dir returns the persistence directory.
func (c *Conversation) Dir() string { return c.dir }

// Log returns the event log.
func (c *Conversation) Log() *eventlog.Log { return c.log }

// Status returns the execution status. It does not wait for the owner.
func (c *Conversation) Status() agentwire.ExecutionStatus { return c.snapshot.Load().ExecutionStatus }

// Running reports whether a run is in progress.
func (c *Conversation) Running() bool {
	return call(c, func() bool { return c.running })
}

// emit appends events durably and adds them to the history.
func (c *Conversation) emit(ctx context.Context, evs ...events.Event) error {
	return c.emitWith(ctx, evs, func(ctx context.Context) error { return c.log.Append(ctx, evs...) })
}

// emitNoWait is emit without waiting for the fsync
// (eventlog.AppendNoWait): the events are written and in the history, and
// become visible (to searches, subscribers and the webhook) once synced.
// Every later emit returns only once they are durable too, and fails if
// their fsync failed; awaitSync waits for them. It is for events
// after which the run only reads (an LLM call) until its next emit.
func (c *Conversation) emitNoWait(ctx context.Context, evs ...events.Event) error {
	return c.emitWith(ctx, evs, func(ctx context.Context) error {
		wait, err := c.log.AppendNoWait(ctx, evs...)
		if err == nil {
			c.unsynced = wait
		}
		return err
	})
}

// awaitSync waits for the fsync of the last emitNoWait, if
// any, and returns its error.
func (c *Conversation) awaitSync() error {
	wait := c.unsynced
	c.unsynced = nil
	if wait == nil {
		return nil
	}
	if err := wait(); err != nil {
		return fmt.Errorf("append events: %w", err)
	}
	return nil
}

// emitWith masks evs, stores them with appendEvs and adds them to
// the history.
func (c *Conversation) emitWith(ctx context.Context, evs []events.Event, appendEvs func(context.Context) error) error {
	c.infoStale = true // also when the append fails after a change it records
	if len(evs) == 0 {
		return nil
	}
	if err := c.maskEvents(evs); err != nil {
		return err
	}
	if err := appendEvs(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("append events: %w", err)
	}
	stale := false
	for _, ev := range evs {
		stale = c.hist.Add(ev)
	}
	c.st.UpdatedAt = events.Now()
	if stale {
		return c.loadBranch(nil)
	}
	return nil
}

// emitState appends a ConversationStateUpdateEvent for key.
func (c *Conversation) emitState(ctx context.Context, key string, value any) error {
	raw, err := strictjson.Marshal(value)
	if err != nil {
		return fmt.Errorf("encode state %s: %w", key, err)
	}
	return c.emit(ctx, &events.ConversationStateUpdateEvent{Key: key, Value: raw})
}

// setStatus changes the execution status, persists it and emits the
// state update. No-op when unchanged.
func (c *Conversation) setStatus(ctx context.Context, s agentwire.ExecutionStatus) error {
	if c.st.ExecutionStatus == s {
		return nil
	}
	c.st.ExecutionStatus = s
	c.st.UpdatedAt = events.Now()
	c.infoStale = true
	if err := c.writeState(); err != nil {
		return err
	}
	if err := c.emitState(ctx, "execution_status", s); err != nil {
		return err
	}
	c.markChanged()
	return nil
}

// saveState notes that the state changed. The snapshot is written when
// the execution status changes and at Close: the event log is the durable
// record of every state change, and Load replays it over the snapshot.
func (c *Conversation) saveState() error {
	c.st.UpdatedAt = events.Now()
	c.stateDirty, c.infoStale = true, true
	return nil
}

// writeState writes the state snapshot (not fsynced, see
// saveState).
func (c *Conversation) writeState() error {
	c.stateDirty = false
	b, err := strictjson.Marshal(&c.st)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	tmp := c.path(stateFile + ".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return os.Rename(tmp, c.path(stateFile))
}

// replay applies a logged event to the state, so the state after a
// crash is what the log says even if the snapshot was older.
func (c *Conversation) replay(ev events.Event) {
	switch e := ev.(type) {
	case *events.SystemPromptEvent:
		c.st.SystemPromptEmitted = true
		if e.DynamicContext != nil {
			c.st.DynamicContext = e.DynamicContext.Text
		}
	case *events.ConversationStateUpdateEvent:
		switch e.Key {
		case "execution_status":
			var v agentwire.ExecutionStatus
			if decodeJSON(e.Value, &v) == nil {
				c.st.ExecutionStatus = v
			}
		case "stats":
			var v agentwire.Stats
			if decodeJSON(e.Value, &v) == nil && v.UsageToMetrics != nil {
				c.st.Stats = v
			}
		case "last_user_message_id":
			var v string
			if decodeJSON(e.Value, &v) == nil {
				c.st.LastUserMessageID = &v
			}
		case "confirmation_policy":
			var v agentwire.ConfirmationPolicy
			if decodeJSON(e.Value, &v) == nil {
				c.st.ConfirmationPolicy = v
			}
		case "security_analyzer":
			if string(e.Value) == "null" {
				c.st.SecurityAnalyzer = nil
			} else {
				c.st.SecurityAnalyzer = e.Value
			}
		case "agent_state":
			var v map[string]string
			if decodeJSON(e.Value, &v) == nil {
				c.st.AgentState = v
			}
		case "blocked_actions", "blocked_messages":
			var v map[string]string
			if decodeJSON(e.Value, &v) == nil && v != nil {
				if e.Key == "blocked_actions" {
					c.st.BlockedActions = v
				} else {
					c.st.BlockedMessages = v
				}
			}
		case "goal":
			var v agentwire.GoalStatus
			if decodeJSON(e.Value, &v) == nil {
				c.st.Goal = &v
			}
		case "activated_knowledge_skills":
			var v []string
			if decodeJSON(e.Value, &v) == nil {
				c.st.ActivatedKnowledgeSkills = v
			}
		}
	}
}

// changed notifies OnChange asynchronously.
func (c *Conversation) changed() { c.onChange.notify() }

// markChanged notifies OnChange once the op ends (publish), so that the
// call reads the info of the change.
func (c *Conversation) markChanged() { c.infoStale, c.notifyChange = true, true }

// Subscribe returns a channel of transient frames (full_state snapshots,
// streaming deltas) and a function to unsubscribe. Slow subscribers lose
// frames rather than block the conversation.
func (c *Conversation) Subscribe() (<-chan Transient, func()) { return c.subs.subscribe() }

// broadcast sends frame, masked, to the subscribers.
func (c *Conversation) broadcast(frame []byte) {
	c.subs.send(Transient{Frame: c.masker.MaskBytes(frame), AfterLog: c.log.Len()})
}

// FullState returns the full_state ConversationStateUpdateEvent (not
// persisted), sent to new subscribers and after every run.
func (c *Conversation) FullState() *events.ConversationStateUpdateEvent {
	return call(c, c.fullState)
}

func (c *Conversation) fullState() *events.ConversationStateUpdateEvent {
	info := c.buildInfo()
	raw := strictjson.MustMarshal(&info)
	return events.Stamp(&events.ConversationStateUpdateEvent{Key: "full_state", Value: raw})
}

// broadcastFullState sends a full_state snapshot to subscribers. It is
// taken and sent by the owner, so they receive snapshots in the order
// they were taken. It does not run on the owner.
func (c *Conversation) broadcastFullState() {
	c.do(func() { c.broadcast(events.MustEncode(c.fullState())) })
}

// Info returns the conversation's info with secrets redacted. It does
// not wait for the owner. Its maps and slices are shared with other
// callers: do not change them.
func (c *Conversation) Info() agentwire.ConversationInfo { return *c.snapshot.Load() }

// buildInfo is the info of the state as it is. Everything in it that
// the state changes in place is a copy.
func (c *Conversation) buildInfo() agentwire.ConversationInfo {
	req := c.meta.Request
	agentCfg := req.Agent.Redact()
	combined := c.st.Stats.Combined()
	var lastEvent *string
	if head := c.hist.Head(); head != "" {
		lastEvent = &head
	}
	tags := copyMap(c.meta.Tags)
	info := agentwire.ConversationInfo{
		ID: c.id.String(), Agent: agentCfg, Workspace: req.Workspace, PersistenceDir: c.dir,
		MaxIterations: req.MaxIterations, StuckDetection: req.StuckDetection,
		ExecutionStatus: c.st.ExecutionStatus, ConfirmationPolicy: c.st.ConfirmationPolicy,
		SecurityAnalyzer:         c.st.SecurityAnalyzer,
		ActivatedKnowledgeSkills: append([]string(nil), c.st.ActivatedKnowledgeSkills...), InvokedSkills: []string{},
		BlockedActions: copyMap(c.st.BlockedActions), BlockedMessages: copyMap(c.st.BlockedMessages),
		LastUserMessageID: c.st.LastUserMessageID, LeafEventID: lastEvent,
		Stats:          c.st.Stats.Clone(),
		SecretRegistry: agentwire.SecretRegistry{SecretSources: agentwire.RedactSecrets(req.Secrets)},
		AgentState:     copyMap(c.st.AgentState), HookConfig: req.HookConfig, Goal: copyGoal(c.st.Goal),
		Title: c.meta.Title, Metrics: &combined,
		CreatedAt: c.meta.CreatedAt, UpdatedAt: c.st.UpdatedAt, Tags: tags,
		ParentConversationID: req.ParentConversationID, SubConversationIDs: []string{},
		ForkedFromConversationID: c.meta.ForkedFrom, ForkedFromEventID: c.meta.ForkedFromEvent,
		CurrentModelID: &req.Agent.LLM.Model, AvailableModels: []string{req.Agent.LLM.Model},
		ClientTools: req.ClientTools,
	}
	if info.SecretRegistry.SecretSources == nil {
		info.SecretRegistry.SecretSources = map[string]agentwire.SecretSource{}
	}
	if req.ObservabilitySpanName != nil || req.ObservabilityTags != nil || req.ObservabilityMetadata != nil {
		info.Observability = &agentwire.ObservabilityInfo{SpanName: req.ObservabilitySpanName, Tags: req.ObservabilityTags, Metadata: req.ObservabilityMetadata}
	}
	return info
}

// Close stops a run in progress, closes the tools and the log. It returns
// once every goroutine the conversation started has ended.
func (c *Conversation) Close() error {
	var (
		already             bool
		cancel, setupCancel context.CancelFunc
		done, setupDone     chan struct{}
		goal                *goalRun
	)
	c.do(func() {
		if already = c.closed; already {
			return
		}
		c.closed = true
		cancel, done = c.cancelRun, c.runDone
		setupCancel, setupDone = c.setupCancel, c.setupDone
		goal = c.goalLoopRun
		if c.stateDirty {
			c.logErr(c.writeState())
		}
	})
	if already {
		return nil
	}
	if goal != nil {
		goal.cancel()
		<-goal.done
	}
	if cancel != nil {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			c.lg.Warn("run did not stop within 10s of close")
		}
	}
	if setupCancel != nil {
		setupCancel()
		<-setupDone
	}
	k := call(c, func() *kit { return c.kit }) // the setup is over: it is the last kit
	if k.hooks != nil {
		ctx, cancel := context.WithTimeout(context.Background(), sessionEndTimeout)
		select { // session_start first (it is stopped below if still running)
		case <-c.sessionStarted:
		case <-ctx.Done():
		}
		c.runHooks(ctx, hooks.SessionEnd, hooks.Input{})
		cancel()
	}
	c.bgCancel()
	c.hookWG.Wait()
	c.do(func() { c.logClosed = true })
	k.close(c.lg)
	c.goroutines.Wait()
	c.stopOwner()
	c.endTrace()
	return c.log.Close()
}

func (c *Conversation) path(name string) string { return filepath.Join(c.dir, name) }

func decodeJSON(raw []byte, v any) error { return strictjson.Unmarshal(raw, v) }

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func writeJSON(path string, v any) error { return writeJSONWith(atomicfile.Write, path, v) }

// writeJSONWith writes v's JSON to path (mode 0600) with write, an
// atomicfile writer.
func writeJSONWith(write func(string, []byte, fs.FileMode) error, path string, v any) error {
	b, err := strictjson.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	if err := write(path, b, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	if err := strictjson.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}

// maskEvents replaces secret values in events before they are logged, in
// place, so the history the LLM sees is masked too. Events without secrets
// are left untouched. It fails (and nothing must be logged) only if an event
// cannot be masked.
func (c *Conversation) maskEvents(evs []events.Event) error {
	if c.masker.Len() == 0 {
		return nil
	}
	for _, ev := range evs {
		// Give the event its id, time and source first: the masked copy is
		// decoded strictly, and an unstamped event would fail on the
		// missing required fields (the log would stamp it anyway).
		events.Stamp(ev)
		b, err := events.Encode(ev)
		if err != nil || !c.masker.Contains(b) {
			continue
		}
		masked, err := events.Decode(c.masker.MaskBytes(b))
		if err != nil {
			// The value also occurs outside JSON strings (a number, say):
			// mask string values one by one instead.
			masked, err = events.Decode(c.masker.MaskJSONStrings(b))
		}
		if err != nil {
			return fmt.Errorf("mask secrets in %s event: %w", ev.Kind(), err)
		}
		dst, src := reflect.ValueOf(ev), reflect.ValueOf(masked)
		if dst.Type() != src.Type() {
			return fmt.Errorf("mask secrets in %s event: decoded as %s", ev.Kind(), masked.Kind())
		}
		dst.Elem().Set(src.Elem())
	}
	return nil
}

// CreatedAt returns when the conversation was created.
func (c *Conversation) CreatedAt() time.Time { return c.meta.CreatedAt.Time }
