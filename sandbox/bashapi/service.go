// Package bashapi is the agent server's bash API (OpenHands compatible): it
// runs one-off shell commands for clients such as an IDE terminal pane, outside
// any conversation and invisible to the agent. It is not the agent's terminal
// tool.
//
// Guarantees:
//
//   - Each command runs on its own as `/bin/bash -c <command>` in a new session
//     (and so a new process group), with stdin from /dev/null, separate stdout
//     and stderr pipes, the working directory cwd (default Options.WorkDir)
//     and a sanitised environment: the server's environment without its own
//     credentials and webhook settings (procenv.Withheld) and without
//     variables whose upper-cased names contain KEY, TOKEN, SECRET or
//     PASSWORD, plus Options.Env.
//   - Every started command is recorded as a BashCommand followed by one or more
//     BashOutput events with order 0, 1, 2, ...; the last one, and only it,
//     carries exit_code. Output is emitted while the command runs: output that
//     has waited about 100 ms is sent (cut after the last line break when
//     there is one, so that a partial line waits up to 500 ms), and no event
//     holds more than 1 MiB of raw output (stdout and stderr together, before
//     masking); a chunk never ends inside a UTF-8 sequence unless it is the
//     last. Output that arrives less than 100 ms before the shell exits and
//     its pipes close is carried by the final event, so a quick command's
//     whole output is normally in the BashOutput that Execute returns (but
//     clients must not rely on that: join the chunks).
//   - On timeout the process group gets SIGTERM, then SIGKILL once 1 s has
//     passed with any member still alive; exit_code is then -1. A command
//     killed by Close also ends with exit_code -1. A shell killed by a signal
//     N (not by the service) reports -N. The final event is written only after
//     the group is gone (or the kill has been given up on after a further 1 s).
//   - When the shell exits normally, output still written to its pipes by
//     background processes is collected for 250 ms; after that it is read and
//     discarded (so such processes do not get SIGPIPE) and they are not
//     signalled.
//   - Options.Mask, when set, is applied to every text an event carries
//     before it is stored, published or returned: each stdout and stderr
//     chunk, a BashCommand's command and cwd (the command still runs with
//     the real text), a BashError's detail; and again to every WebSocket
//     frame as it is written (which also covers events stored before a
//     secret was known). With Options.SafeCut, a chunk never ends inside a
//     secret (the bytes wait for the next chunk), so a secret printed across
//     two writes is still masked.
//   - Every event is stored as one file in Options.Dir, named
//     <YYYYmmddHHMMSSffffff>_<kind>[_<command_id>]_<id>.json (UTC), written to
//     a temporary file and renamed, so a file is never seen half written.
//     Timestamps are unique and strictly increasing within a Service, so name
//     order is creation order. Files are not fsynced: a machine crash may lose
//     the latest events. New loads the stored events, skipping (and logging)
//     files that do not decode or whose name does not match their content,
//     and removing leftover temporary files; a command stored without a final
//     output (the server died while it ran) gets one with exit_code -1.
//   - Subscribers (the websocket) see every event stored after they subscribe,
//     exactly once, and the events of one command in order. A subscriber
//     that falls more than 1024 events behind is disconnected rather than
//     silently skipped.
package bashapi

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agentwire"
)

// ErrClosed is returned by Start and Execute after Close.
var ErrClosed = errors.New("bashapi: service closed")

// Options configure a Service.
type Options struct {
	// Dir holds one file per event; it is created when missing. Required.
	Dir string
	// WorkDir is the default working directory of commands (default: the
	// process's working directory when New is called).
	WorkDir string
	// Env returns extra environment entries ("NAME=value") for each command;
	// they are not filtered and override inherited ones. May be nil.
	Env func() []string
	// Mask rewrites the text of events (stdout, stderr, command, cwd, error
	// detail) before it is stored or sent, and every WebSocket frame (for
	// example to hide secrets). May be nil.
	Mask func(string) string
	// SafeCut, when set, moves a chunk boundary n in b back so that it does
	// not split a secret (see secrets.Masker.SafeCut). May be nil.
	SafeCut func(b []byte, n int) int
	// AddSecrets, when set, is given the values of a request's secrets
	// before the command starts, so Mask hides them. May be nil.
	AddSecrets func(values ...string)
}

// record is the in-memory index entry of one stored event.
type record struct {
	name      string // file name
	kind      string
	id        string
	commandID string // BashOutput only
	order     int    // BashOutput only
	final     bool   // BashOutput with exit_code
	ts        time.Time
}

// subscriber receives encoded events.
type subscriber struct {
	ch   chan []byte
	gone chan struct{} // closed when the service drops the subscriber
}

const subscriberBuffer = 1024

// Service runs bash commands and stores their events. It is safe for
// concurrent use.
type Service struct {
	dir     string
	workDir string
	env     func() []string
	mask    func(string) string
	safeCut func([]byte, int) int

	addSecrets func(...string)

	mu      sync.Mutex
	byID    map[string]*record
	byName  map[string]*record
	lastTS  time.Time
	running map[string]*process // by command id
	subs    map[*subscriber]struct{}
	drains  map[*os.File]struct{} // pipes read after their command ended
	closed  bool
	closing chan struct{}
	wg      sync.WaitGroup
}

var nameRE = regexp.MustCompile(`^(\d{20})_(BashCommand|BashOutput|BashError)(?:_([0-9a-f]{32}))?_([0-9a-f]{32})\.json$`)

// New opens (creating when needed) the events directory and loads the events
// stored there.
func New(opts Options) (*Service, error) {
	if opts.Dir == "" {
		return nil, errors.New("bashapi: Options.Dir is required")
	}
	wd := opts.WorkDir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("bashapi: default work dir: %w", err)
		}
	}
	wd, err := filepath.Abs(wd)
	if err != nil {
		return nil, fmt.Errorf("bashapi: work dir: %w", err)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("bashapi: events dir: %w", err)
	}
	s := &Service{
		dir:     opts.Dir,
		workDir: wd,
		env:     opts.Env,
		mask:    opts.Mask,
		safeCut: opts.SafeCut,

		addSecrets: opts.AddSecrets,
		byID:       map[string]*record{},
		byName:     map[string]*record{},
		running:    map[string]*process{},
		subs:       map[*subscriber]struct{}{},
		drains:     map[*os.File]struct{}{},
		closing:    make(chan struct{}),
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// load indexes the stored events and completes commands left without a final
// output.
func (s *Service) load() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("bashapi: read events dir: %w", err)
	}
	type cmdState struct {
		final    bool
		maxOrder int
	}
	cmds := map[string]*cmdState{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".tmp-") {
			_ = os.Remove(filepath.Join(s.dir, name))
			continue
		}
		m := nameRE.FindStringSubmatch(name)
		if m == nil || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.dir, name))
		if err != nil {
			slog.Warn("bashapi: skipping unreadable event file", "file", name, "error", err)
			continue
		}
		ev, err := decodeEvent(m[2], b)
		if err != nil {
			slog.Warn("bashapi: skipping invalid event file", "file", name, "error", err)
			continue
		}
		if fileName(ev) != name {
			slog.Warn("bashapi: skipping event file whose name does not match its content", "file", name)
			continue
		}
		r := recordFor(name, ev)
		if _, dup := s.byID[r.id]; dup {
			slog.Warn("bashapi: skipping duplicate event id", "file", name)
			continue
		}
		s.byID[r.id] = r
		s.byName[name] = r
		if r.ts.After(s.lastTS) {
			s.lastTS = r.ts
		}
		switch r.kind {
		case agentwire.KindBashCommand:
			if cmds[r.id] == nil {
				cmds[r.id] = &cmdState{maxOrder: -1}
			}
		case agentwire.KindBashOutput:
			c := cmds[r.commandID]
			if c == nil {
				c = &cmdState{maxOrder: -1}
				cmds[r.commandID] = c
			}
			c.final = c.final || r.final
			c.maxOrder = max(c.maxOrder, r.order)
		}
	}
	for id, c := range cmds {
		if c.final || s.byID[id] == nil || s.byID[id].kind != agentwire.KindBashCommand {
			continue
		}
		code := -1
		if _, err := s.emit(&agentwire.BashOutput{CommandID: id, Order: c.maxOrder + 1, ExitCode: &code}, nil); err != nil {
			return err
		}
	}
	return nil
}

func recordFor(name string, ev agentwire.BashEvent) *record {
	r := &record{name: name, kind: ev.Kind(), id: ev.EventID(), ts: ev.EventTime().Time}
	if o, ok := ev.(*agentwire.BashOutput); ok {
		r.commandID = o.CommandID
		r.order = o.Order
		r.final = o.ExitCode != nil
	}
	return r
}

// fileName returns the stored file name of ev.
func fileName(ev agentwire.BashEvent) string {
	ts := ev.EventTime().UTC().Format("20060102150405.000000")
	ts = strings.Replace(ts, ".", "", 1)
	parts := []string{ts, ev.Kind()}
	if o, ok := ev.(*agentwire.BashOutput); ok {
		parts = append(parts, o.CommandID)
	}
	parts = append(parts, ev.EventID())
	return strings.Join(parts, "_") + ".json"
}

// stamp gives ev a new id and a timestamp later than every earlier one.
func (s *Service) stamp(ev agentwire.BashEvent) {
	s.mu.Lock()
	now := time.Now().UTC().Truncate(time.Microsecond)
	if !now.After(s.lastTS) {
		now = s.lastTS.Add(time.Microsecond)
	}
	s.lastTS = now
	s.mu.Unlock()
	t := events.At(now)
	id := newID()
	switch e := ev.(type) {
	case *agentwire.BashCommand:
		e.ID, e.Timestamp = id, t
	case *agentwire.BashOutput:
		e.ID, e.Timestamp = id, t
	case *agentwire.BashError:
		e.ID, e.Timestamp = id, t
	}
}

// emit stamps, stores and publishes ev. locked, when set, runs under the
// service lock right after the event is indexed. A failure to store is
// returned, but the event is still published.
func (s *Service) emit(ev agentwire.BashEvent, locked func()) ([]byte, error) {
	s.stamp(ev)
	s.maskEvent(ev)
	b := encodeEvent(ev)
	name := fileName(ev)
	werr := writeFileAtomic(s.dir, name, b)
	if werr != nil {
		slog.Error("bashapi: store event", "file", name, "error", werr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if werr == nil {
		r := recordFor(name, ev)
		s.byID[r.id] = r
		s.byName[name] = r
	}
	if locked != nil {
		locked()
	}
	for sub := range s.subs {
		select {
		case sub.ch <- b:
		default:
			s.dropLocked(sub)
		}
	}
	return b, werr
}

// maskEvent masks the text fields of ev in place (output chunks are masked
// as they are cut, see emitChunk).
func (s *Service) maskEvent(ev agentwire.BashEvent) {
	if s.mask == nil {
		return
	}
	switch e := ev.(type) {
	case *agentwire.BashCommand:
		e.Command = s.mask(e.Command)
		if e.Cwd != nil {
			c := s.mask(*e.Cwd)
			e.Cwd = &c
		}
	case *agentwire.BashError:
		e.Detail = s.mask(e.Detail)
	}
}

// maskFrame masks an encoded event on its way to a socket.
func (s *Service) maskFrame(b []byte) []byte {
	if s.mask == nil {
		return b
	}
	return []byte(s.mask(string(b)))
}

func writeFileAtomic(dir, name string, b []byte) error {
	f, err := os.CreateTemp(dir, ".tmp-"+name+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// subscribe registers a subscriber; with replay it also returns, atomically,
// the names of every stored event in name order, so that no event is missed
// or seen twice. It fails after Close.
func (s *Service) subscribe(replay bool) (*subscriber, []string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, ErrClosed
	}
	sub := &subscriber{ch: make(chan []byte, subscriberBuffer), gone: make(chan struct{})}
	s.subs[sub] = struct{}{}
	var names []string
	if replay {
		names = make([]string, 0, len(s.byName))
		for n := range s.byName {
			names = append(names, n)
		}
		slices.Sort(names)
	}
	return sub, names, nil
}

func (s *Service) unsubscribe(sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.subs[sub]; ok {
		delete(s.subs, sub)
	}
}

func (s *Service) dropLocked(sub *subscriber) {
	if _, ok := s.subs[sub]; ok {
		delete(s.subs, sub)
		close(sub.gone)
	}
}

// readEvent returns the stored bytes of the named event; ok is false when the
// file has gone (cleared meanwhile).
func (s *Service) readEvent(name string) ([]byte, bool) {
	b, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			slog.Error("bashapi: read event", "file", name, "error", err)
		}
		return nil, false
	}
	return b, true
}

// Get returns the stored JSON of the event with the given id (32 hex digits or
// a dashed UUID), or false.
func (s *Service) Get(id string) ([]byte, bool) {
	id, ok := normalizeID(id)
	if !ok {
		return nil, false
	}
	s.mu.Lock()
	r := s.byID[id]
	s.mu.Unlock()
	if r == nil {
		return nil, false
	}
	return s.readEvent(r.name)
}

// Sort orders of Search.
const (
	SortTimestamp     = "TIMESTAMP"
	SortTimestampDesc = "TIMESTAMP_DESC"
)

// SearchQuery filters and pages stored events. Zero fields do not filter.
type SearchQuery struct {
	Kind      string     // BashCommand, BashOutput or BashError
	CommandID string     // events carrying this command_id (BashOutput)
	TimeGTE   *time.Time // timestamp >= TimeGTE
	TimeLT    *time.Time // timestamp < TimeLT
	OrderGT   *int       // BashOutput with order > OrderGT; other kinds pass
	Desc      bool       // newest first
	PageID    string     // the file name where the page starts
	Limit     int        // 1..100 (0 means 100)
}

// ErrUnknownPage is returned by Search for a page id that names no stored
// event.
var ErrUnknownPage = errors.New("bashapi: unknown page_id")

// Search returns the encoded events matching q, in timestamp order (or
// reverse), starting at q.PageID, and the page id of the next page ("" when
// there is none). Following next page ids visits every matching event once.
func (s *Service) Search(q SearchQuery) (items [][]byte, next string, err error) {
	limit := q.Limit
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	s.mu.Lock()
	if q.PageID != "" && s.byName[q.PageID] == nil {
		s.mu.Unlock()
		return nil, "", ErrUnknownPage
	}
	var names []string
	for _, r := range s.byName {
		if q.Kind != "" && r.kind != q.Kind {
			continue
		}
		if q.CommandID != "" && r.commandID != q.CommandID {
			continue
		}
		if q.TimeGTE != nil && r.ts.Before(*q.TimeGTE) {
			continue
		}
		if q.TimeLT != nil && !r.ts.Before(*q.TimeLT) {
			continue
		}
		if q.OrderGT != nil && r.kind == agentwire.KindBashOutput && r.order <= *q.OrderGT {
			continue
		}
		names = append(names, r.name)
	}
	s.mu.Unlock()
	slices.Sort(names)
	if q.Desc {
		slices.Reverse(names)
	}
	start := 0
	if q.PageID != "" {
		// The page starts at the page id's position, whether or not that
		// event itself matches the filters.
		start = len(names)
		for i, n := range names {
			if (!q.Desc && n >= q.PageID) || (q.Desc && n <= q.PageID) {
				start = i
				break
			}
		}
	}
	end := min(start+limit, len(names))
	for _, n := range names[start:end] {
		if b, ok := s.readEvent(n); ok {
			items = append(items, b)
		}
	}
	if end < len(names) {
		next = names[end]
	}
	return items, next, nil
}

// Clear removes the stored events of every command that is not running
// (its BashCommand and BashOutputs) and every BashError, and returns how many
// events were removed. Events of running commands stay.
func (s *Service) Clear() int {
	s.mu.Lock()
	var names []string
	for name, r := range s.byName {
		cmd := r.commandID
		if r.kind == agentwire.KindBashCommand {
			cmd = r.id
		}
		if cmd != "" && s.running[cmd] != nil {
			continue
		}
		delete(s.byName, name)
		delete(s.byID, r.id)
		names = append(names, name)
	}
	s.mu.Unlock()
	for _, n := range names {
		if err := os.Remove(filepath.Join(s.dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			slog.Error("bashapi: remove event", "file", n, "error", err)
		}
	}
	return len(names)
}

// Close kills running commands (SIGTERM to each process group, SIGKILL a
// second later), waits for their final events to be stored, disconnects
// subscribers and stops reading pipes left open by background processes.
// Later calls to Start fail with ErrClosed. Close is idempotent.
func (s *Service) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	for sub := range s.subs {
		s.dropLocked(sub)
	}
	for f := range s.drains {
		_ = f.Close()
		delete(s.drains, f)
	}
	s.mu.Unlock()
	return nil
}
