package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agent"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// The stress test's size. ACS_STRESS_SEED replays a run's commands and
// ACS_STRESS_OPS changes how many there are.
const (
	stressOps      = 1200
	stressWorkers  = 4
	stressPhaseOps = 25 // per worker between two quiescent checks
)

// A running conversation driven by several goroutines with random
// commands keeps its invariants:
//   - every message sent with run=true is answered by an agent message
//     whose LLM request held it (or a summary that forgot it), or its run
//     was paused, interrupted or rejected, or it waits for confirmation;
//   - at each quiescent point no run is in progress, and Status, Info and
//     the last execution_status event agree;
//   - the log's ids are unique and its timestamps increase; a subscriber
//     receives exactly the log, in order, and no transient frame twice;
//     no action gets two results and no event is forgotten twice without
//     a navigation in between;
//   - after Close no goroutine the conversation started remains.
//
// The commands come from a seeded generator per goroutine; the seed is
// logged, and a failure lists the commands of the phase that broke.
func TestConcurrentCommandsKeepInvariants(t *testing.T) {
	seed := stressSeed(t)
	total := stressOps
	if s := os.Getenv("ACS_STRESS_OPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("ACS_STRESS_OPS=%q: want a positive integer", s)
		}
		total = n
	}
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	srv := llmtest.New(
		llmtest.Reply{Repeat: true, Match: func(r *llmtest.Request) bool { return r.Model == "stress-summarizer" }, Text: "SUMMARY"},
		llmtest.Reply{Repeat: true, Respond: func(r *llmtest.Request) llmtest.Reply { return stressReply(r, work) }})
	defer srv.Close()

	before := goroutineIDs()
	s := newStress(t, seed, srv, dir, work)
	sub := s.subscribe()
	phases := (total + stressWorkers*stressPhaseOps - 1) / (stressWorkers * stressPhaseOps)
	start := time.Now()
	for p := 0; p < phases && !t.Failed(); p++ {
		s.phase(p, min(stressPhaseOps, (total-p*stressWorkers*stressPhaseOps+stressWorkers-1)/stressWorkers))
		s.checkQuiescent(false)
	}
	if !t.Failed() {
		s.drain()
		s.checkQuiescent(true)
	}
	sub.check(t, s.c)
	s.report(time.Since(start), total >= 1000)
	if err := s.c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	checkNoLeak(t, before)
}

// stressSeed is ACS_STRESS_SEED, or a new seed; it is logged either way.
func stressSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("ACS_STRESS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ACS_STRESS_SEED=%q: want an unsigned integer", s)
		}
		seed = v
	}
	t.Logf("seed %d (replay with ACS_STRESS_SEED=%d)", seed, seed)
	return seed
}

// stressReply is the scripted agent. What it answers depends only on the
// request: up to two rounds of tools after the last user message, then a
// text answer. Tools: think alone (never confirmed), two thinks (a batch
// the confirmation policy applies to), write_file and a short terminal
// command (UNKNOWN risk, not instant). Each reply is delayed a little so
// that commands land while an LLM call is in flight.
func stressReply(r *llmtest.Request, work string) llmtest.Reply {
	rounds := 0
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != "user"; i-- {
		if r.Messages[i].Role == "assistant" && len(r.Messages[i].ToolCalls) > 0 {
			rounds++
		}
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%d", r.LastUserText(), len(r.Messages))
	x := h.Sum64()
	out := llmtest.Reply{Delay: time.Duration(x%6) * time.Millisecond, Text: "answer"}
	if rounds >= 2 {
		return out
	}
	think := llmtest.ToolCall{Name: "think", Arguments: map[string]any{"thought": "step"}}
	switch (x >> 8) % 10 {
	case 4, 5:
		out.ToolCalls = []llmtest.ToolCall{think}
	case 6, 7:
		out.ToolCalls = []llmtest.ToolCall{think, think}
	case 8:
		out.ToolCalls = []llmtest.ToolCall{{Name: "write_file",
			Arguments: map[string]any{"file_path": filepath.Join(work, "notes.txt"), "content": "x"}}}
	case 9:
		out.ToolCalls = []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{"command": "sleep 0.02"}}}
	}
	if out.ToolCalls != nil {
		out.Text = ""
	}
	return out
}

// stress is the conversation under test and what the commands did to it.
type stress struct {
	t    *testing.T
	seed uint64
	srv  *llmtest.Server
	c    *agent.Conversation
	llms []llm.Config

	mu       sync.Mutex
	journal  []opRecord // this phase's commands
	sent     []sentMessage
	resolved map[string]string // message id → how it was resolved
	counts   map[string]int    // command → outcome counts
	checked  int               // log events already checked for order
}

type opRecord struct {
	worker, n int
	op, arg   string
	err       error
	at        time.Duration
}

type sentMessage struct {
	id, token string
}

func newStress(t *testing.T, seed uint64, srv *llmtest.Server, dir, work string) *stress {
	base := llm.DefaultConfig()
	base.BaseURL, base.NumRetries = &srv.URL, 0
	a, b, summarizer := base, base, base
	a.Model = "stress-a"
	b.Model, b.Stream = "stress-b", true
	summarizer.Model = "stress-summarizer"
	risky := agentwire.ConfirmationPolicy{Kind: "ConfirmRisky"}
	req := agentwire.StartConversationRequest{
		Agent: &agentwire.Agent{Kind: "Agent", LLM: a,
			Tools: []agentwire.ToolRef{{Name: "terminal"}, {Name: "write_file"}},
			Condenser: &agentwire.Condenser{Kind: "LLMSummarizingCondenser", LLM: &summarizer,
				MaxSize: 40, KeepFirst: 2}},
		Workspace:          agentwire.Workspace{WorkingDir: work},
		MaxIterations:      50,
		ConfirmationPolicy: &risky,
	}
	c, err := agent.Create(context.Background(), uuid.New(), req, agent.Options{Dir: filepath.Join(dir, "conv"),
		OnChange: func(c *agent.Conversation) { c.Info() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() }) // a no-op after the test's own Close
	return &stress{t: t, seed: seed, srv: srv, c: c, llms: []llm.Config{a, b},
		resolved: map[string]string{}, counts: map[string]int{}}
}

// phase runs n commands on each worker at once and returns when all are
// done.
func (s *stress) phase(p, n int) {
	s.mu.Lock()
	s.journal = s.journal[:0]
	s.mu.Unlock()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range stressWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(s.seed, uint64(p*stressWorkers+w)))
			for i := range n {
				s.do(w, p*stressPhaseOps+i, rng, start, p%2 == 0)
			}
		}()
	}
	wg.Wait()
}

// stressPolicies are the confirmation policies the commands switch among:
// none waits, all wait, UNKNOWN risk waits, every risk waits.
var stressPolicies = func() []agentwire.ConfirmationPolicy {
	low := events.RiskLow
	return []agentwire.ConfirmationPolicy{agentwire.NeverConfirm(), {Kind: "AlwaysConfirm"}, {Kind: "ConfirmRisky"},
		{Kind: "ConfirmRisky", Threshold: &low}}
}()

// stressMix is how often each command is chosen, in percent.
var stressMix = []struct {
	op     string
	weight int
}{
	{"send", 22}, {"run", 6}, {"pause", 5}, {"interrupt", 3}, {"condense", 5}, {"switch_llm", 4},
	{"navigate", 8}, {"confirm", 10}, {"reject", 6}, {"policy", 6}, {"wait", 25},
}

// do runs one random command and records it. A calm command never
// pauses or interrupts (it waits instead), so that runs reach their
// answers.
func (s *stress) do(w, n int, rng *rand.Rand, start time.Time, calm bool) {
	ctx := context.Background()
	var op, arg string
	var err error
	var ok []error // errors the command may return in a valid state
	k := rng.IntN(100)
	for _, m := range stressMix {
		if k < m.weight {
			op = m.op
			break
		}
		k -= m.weight
	}
	if calm && (op == "pause" || op == "interrupt") {
		op = "wait"
	}
	switch op {
	case "send":
		token := fmt.Sprintf("[m%d.%d]", w, n)
		run := rng.IntN(10) > 0 // one message in ten only waits for a run
		arg = fmt.Sprintf("%s run=%t", token, run)
		var msg *events.MessageEvent
		msg, err = s.c.SendMessage(ctx, agentwire.SendMessageRequest{Role: "user", Run: run,
			Content: []events.Content{events.TextItem("please look at " + token)}})
		if err == nil && run {
			s.mu.Lock()
			s.sent = append(s.sent, sentMessage{id: msg.ID, token: token})
			s.mu.Unlock()
		}
	case "run":
		ok = []error{agent.ErrAlreadyRunning}
		err = s.c.Run(ctx)
	case "pause":
		err = s.c.Pause(ctx)
	case "interrupt":
		err = s.c.Interrupt(ctx)
	case "condense":
		err = s.c.RequestCondensation(ctx)
	case "switch_llm":
		cfg := s.llms[rng.IntN(len(s.llms))]
		arg = cfg.Model
		err = s.c.SwitchLLM(ctx, cfg)
	case "navigate":
		ok = []error{agent.ErrAlreadyRunning}
		var id *string // the empty tree one time in ten
		if size := s.c.Log().Len(); size > 0 && rng.IntN(10) > 0 {
			raw, rerr := s.c.Log().ReadFrom(rng.IntN(size), 1)
			if rerr != nil {
				s.t.Errorf("read the log: %v", rerr)
				return
			}
			var e struct{ ID string }
			if jerr := json.Unmarshal(raw[0], &e); jerr != nil {
				s.t.Errorf("decode an event: %v", jerr)
				return
			}
			id, arg = &e.ID, e.ID
		}
		err = s.c.Navigate(ctx, id)
	case "confirm":
		ok = []error{agent.ErrNotWaiting}
		err = s.c.RespondToConfirmation(ctx, true, "")
	case "reject":
		ok = []error{agent.ErrNotWaiting}
		err = s.c.RespondToConfirmation(ctx, false, "no")
	case "policy":
		p := stressPolicies[rng.IntN(len(stressPolicies))]
		arg = string(p.Kind)
		if p.Threshold != nil {
			arg += "/" + string(*p.Threshold)
		}
		err = s.c.SetConfirmationPolicy(ctx, p)
	case "wait":
		// Let a run make progress: wait up to 60ms for it to end.
		ok = []error{context.DeadlineExceeded}
		wctx, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(60))*time.Millisecond)
		err = s.c.WaitIdle(wctx)
		cancel()
	}
	outcome := "ok"
	if err != nil {
		outcome = err.Error()
		if !slices.ContainsFunc(ok, func(e error) bool { return errors.Is(err, e) }) {
			s.t.Errorf("worker %d command %d: %s %s: %v", w, n, op, arg, err)
		}
	}
	s.mu.Lock()
	s.journal = append(s.journal, opRecord{worker: w, n: n, op: op, arg: arg, err: err, at: time.Since(start)})
	s.counts[op+" → "+outcome]++
	s.mu.Unlock()
}

// quiesce waits until no run is in progress.
func (s *stress) quiesce() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.c.WaitIdle(ctx); err != nil {
		s.t.Fatalf("the conversation did not become idle: %v (status %s)", err, s.c.Status())
	}
}

// drain ends the storm: nothing waits for confirmation any more, what
// waits is accepted, and one last message must be answered.
func (s *stress) drain() {
	ctx := context.Background()
	if err := s.c.SetConfirmationPolicy(ctx, agentwire.NeverConfirm()); err != nil {
		s.t.Fatal(err)
	}
	for range 10 {
		s.quiesce()
		if s.c.Status() != agentwire.StatusWaitingForConfirmation {
			break
		}
		if err := s.c.RespondToConfirmation(ctx, true, ""); err != nil {
			s.t.Fatal(err)
		}
	}
	msg, err := s.c.SendMessage(ctx, agentwire.SendMessageRequest{Role: "user", Run: true,
		Content: []events.Content{events.TextItem("last one [final]")}})
	if err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	s.sent = append(s.sent, sentMessage{id: msg.ID, token: "[final]"})
	s.mu.Unlock()
	s.quiesce()
}

// checkQuiescent checks the invariants once no command is in flight and no
// run in progress. final: nothing may wait for confirmation any more.
func (s *stress) checkQuiescent(final bool) {
	t := s.t
	s.quiesce()
	evs := readLog(t, s.c)
	status := s.c.Status()
	info := s.c.Info()
	last := agentwire.StatusIdle
	for _, ev := range evs {
		if su, ok := ev.(*events.ConversationStateUpdateEvent); ok && su.Key == "execution_status" {
			if err := json.Unmarshal(su.Value, &last); err != nil {
				t.Fatalf("execution_status %s: %v", su.Value, err)
			}
		}
	}
	failed := false
	fail := func(format string, args ...any) {
		failed = true
		t.Errorf(format, args...)
	}
	if s.c.Running() {
		fail("a run is in progress after WaitIdle")
	}
	if status != last || info.ExecutionStatus != status {
		fail("status %s, info %s, last execution_status event %s", status, info.ExecutionStatus, last)
	}
	if status == agentwire.StatusRunning {
		fail("status running with no run in progress")
	}
	if status == agentwire.StatusError {
		fail("status error: %s", lastError(evs))
	}
	for _, msg := range checkOrder(evs[s.checked:], evs[:s.checked]) {
		fail("%s", msg)
	}
	s.checked = len(evs)
	for _, msg := range checkResults(evs) {
		fail("%s", msg)
	}
	for _, msg := range s.checkMessages(evs, status, final) {
		fail("%s", msg)
	}
	if failed {
		s.dumpPhase(evs)
	}
}

// readLog decodes every event of c's log.
func readLog(t *testing.T, c *agent.Conversation) []events.Event {
	t.Helper()
	raws, err := c.EventsUpTo("")
	if err != nil {
		t.Fatal(err)
	}
	evs := make([]events.Event, len(raws))
	for i, raw := range raws {
		if evs[i], err = events.Decode(raw); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	return evs
}

func lastError(evs []events.Event) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if e, ok := evs[i].(*events.ConversationErrorEvent); ok {
			return e.Code + ": " + e.Detail
		}
	}
	return "no ConversationErrorEvent"
}

// checkOrder checks evs, the log after prev: ids unique, timestamps
// strictly increasing.
func checkOrder(evs, prev []events.Event) []string {
	var out []string
	seen := map[string]bool{}
	var lastTS time.Time
	for _, ev := range prev {
		seen[ev.EventBase().ID] = true
		lastTS = ev.EventBase().Timestamp.Time
	}
	for i, ev := range evs {
		b := ev.EventBase()
		if seen[b.ID] {
			out = append(out, fmt.Sprintf("log position %d: id %s again (%s)", len(prev)+i, b.ID, ev.Kind()))
		}
		seen[b.ID] = true
		if !b.Timestamp.After(lastTS) {
			out = append(out, fmt.Sprintf("log position %d: timestamp %s not after %s", len(prev)+i, b.Timestamp, lastTS))
		}
		lastTS = b.Timestamp.Time
	}
	return out
}

// checkResults finds what the log holds twice on one branch: a second
// result for an action, or an event forgotten by a second condensation,
// with no navigation (which starts another branch) in between.
func checkResults(evs []events.Event) []string {
	var out []string
	answered := map[string]int{}  // tool call id → position of its result
	forgotten := map[string]int{} // event id → position of the condensation
	for i, ev := range evs {
		var call string
		switch e := ev.(type) {
		case *events.ConversationStateUpdateEvent:
			if e.Key == "leaf_event_id" {
				clear(answered)
				clear(forgotten)
			}
		case *events.ObservationEvent:
			call = e.ToolCallID
		case *events.AgentErrorEvent:
			call = e.ToolCallID
		case *events.UserRejectObservation:
			call = e.ToolCallID
		case *events.Condensation:
			for _, id := range e.ForgottenEventIDs {
				if j, dup := forgotten[id]; dup {
					out = append(out, fmt.Sprintf("event %s forgotten by the condensations at log positions %d and %d", id, j, i))
				}
				forgotten[id] = i
			}
		}
		if call == "" {
			continue
		}
		if j, dup := answered[call]; dup {
			out = append(out, fmt.Sprintf("tool call %s answered at log positions %d (%s) and %d (%s)",
				call, j, evs[j].Kind(), i, ev.Kind()))
		}
		answered[call] = i
	}
	return out
}

// checkMessages checks that every message sent with run=true was answered
// or that its run was explicitly stopped: a PauseEvent (pause, interrupt)
// or a UserRejectObservation after it, or a navigation away while its run
// waited for confirmation. Otherwise it must still wait for confirmation
// (never when final).
func (s *stress) checkMessages(evs []events.Event, status agentwire.ExecutionStatus, final bool) []string {
	pos := make(map[string]int, len(evs))
	for i, ev := range evs {
		pos[ev.EventBase().ID] = i
	}
	reqs := s.srv.Requests()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.sent {
		if s.resolved[m.id] != "" {
			continue
		}
		p, ok := pos[m.id]
		if !ok {
			out = append(out, fmt.Sprintf("message %s (%s) is not in the log", m.token, m.id))
			continue
		}
		how := resolution(evs, p, m, reqs)
		if how == "" {
			if !final && status == agentwire.StatusWaitingForConfirmation {
				continue
			}
			out = append(out, fmt.Sprintf("message %s at log position %d: no answer, pause or rejection after it (status %s)%s",
				m.token, p, status, describeAfter(evs, p, 40)))
			continue
		}
		s.resolved[m.id] = how
	}
	return out
}

// resolution says how the message at position p was resolved ("" when it
// was not).
func resolution(evs []events.Event, p int, m sentMessage, reqs []*llmtest.Request) string {
	forgotten := false
	status := agentwire.StatusIdle
	for _, ev := range evs[p+1:] {
		switch e := ev.(type) {
		case *events.MessageEvent:
			if e.Source != events.SourceAgent || e.LLMResponseID == nil {
				continue
			}
			if forgotten || requestHolds(reqs, *e.LLMResponseID, m.token) {
				return "answered"
			}
		case *events.Condensation:
			forgotten = forgotten || slices.Contains(e.ForgottenEventIDs, m.id)
		case *events.PauseEvent:
			return "paused"
		case *events.UserRejectObservation:
			return "rejected"
		case *events.ConversationStateUpdateEvent:
			switch e.Key {
			case "execution_status":
				_ = json.Unmarshal(e.Value, &status)
			case "leaf_event_id":
				if status == agentwire.StatusWaitingForConfirmation {
					return "navigated away while waiting"
				}
			}
		}
	}
	return ""
}

// requestHolds reports whether the LLM request that produced the response
// id had a user message holding token.
func requestHolds(reqs []*llmtest.Request, responseID, token string) bool {
	seq, err := strconv.Atoi(strings.TrimPrefix(responseID, "chatcmpl-llmtest-"))
	if err != nil || seq < 1 || seq > len(reqs) {
		return false
	}
	for _, m := range reqs[seq-1].Messages {
		if m.Role == "user" && strings.Contains(m.Text(), token) {
			return true
		}
	}
	return false
}

// describeAfter lists the kinds (and status values) of up to n events
// after position p, for a failure message.
func describeAfter(evs []events.Event, p, n int) string {
	var b strings.Builder
	for i, ev := range evs[p+1:] {
		if i == n {
			b.WriteString("\n\t…")
			break
		}
		fmt.Fprintf(&b, "\n\t%d %s", p+1+i, ev.Kind())
		switch e := ev.(type) {
		case *events.ConversationStateUpdateEvent:
			v := string(e.Value)
			if len(v) > 60 {
				v = v[:60] + "…"
			}
			fmt.Fprintf(&b, " %s=%s", e.Key, v)
		case *events.Condensation:
			fmt.Fprintf(&b, " forgets %d from %s", len(e.ForgottenEventIDs), e.ForgottenEventIDs[0])
		case *events.MessageEvent:
			fmt.Fprintf(&b, " %s %q", e.Source, e.LLMMessage.Text())
		case *events.ActionEvent:
			fmt.Fprintf(&b, " %s %s", e.ToolName, e.ToolCallID)
		case *events.ConversationErrorEvent:
			fmt.Fprintf(&b, " %s: %s", e.Code, e.Detail)
		}
	}
	return b.String()
}

// dumpPhase logs the commands of the phase that broke an invariant, in
// the order they finished, and the log's last events.
func (s *stress) dumpPhase(evs []events.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, r := range s.journal {
		fmt.Fprintf(&b, "\n\t%8s w%d #%d %s %s", r.at.Round(time.Microsecond), r.worker, r.n, r.op, r.arg)
		if r.err != nil {
			fmt.Fprintf(&b, " → %v", r.err)
		}
	}
	s.t.Logf("seed %d; the phase's commands:%s", s.seed, b.String())
	s.t.Logf("the log's last events:%s", describeAfter(evs, max(len(evs)-80, 0)-1, 80))
}

// report logs what the commands did. With full, a run of the full size,
// the storm must have reached every state it is meant to test.
func (s *stress) report(d time.Duration, full bool) {
	seen := map[string]int{}
	for _, ev := range readLog(s.t, s.c) {
		switch e := ev.(type) {
		case *events.ConversationStateUpdateEvent:
			switch e.Key {
			case "execution_status":
				seen[strings.Trim(string(e.Value), `"`)]++
			case "leaf_event_id":
				seen["navigation"]++
			}
		case *events.Condensation, *events.PauseEvent, *events.UserRejectObservation:
			seen[ev.Kind()]++
		}
	}
	s.t.Logf("reached: %v", seen)
	s.mu.Lock()
	defer s.mu.Unlock()
	if full {
		answered := 0
		for _, h := range s.resolved {
			if h == "answered" {
				answered++
			}
		}
		if answered == 0 || seen["navigation"] == 0 || seen["waiting_for_confirmation"] == 0 ||
			seen["Condensation"] == 0 || seen["PauseEvent"] == 0 {
			s.t.Errorf("the storm missed a state it tests: %d messages answered, %v", answered, seen)
		}
	}
	keys := make([]string, 0, len(s.counts))
	ops := 0
	for k, n := range s.counts {
		keys = append(keys, k)
		ops += n
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n\t%5d %s", s.counts[k], k)
	}
	how := map[string]int{}
	for _, h := range s.resolved {
		how[h]++
	}
	s.t.Logf("%d commands in %s, %d messages resolved %v, %d events:%s", ops, d.Round(time.Millisecond),
		len(s.resolved), how, s.c.Log().Len(), b.String())
}

// subscriber reads the conversation as the agent server's WebSocket does:
// the log from the start, and transient frames after the logged events
// they follow.
type subscriber struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	logged []string // ids of the logged events received, in order
	frames []frame  // transient frames received, in order
	err    error
}

type frame struct {
	ID        string      `json:"id"`
	Kind      string      `json:"kind"`
	Key       string      `json:"key"`
	Timestamp events.Time `json:"timestamp"`
}

func (s *stress) subscribe() *subscriber {
	c := s.c
	transient, unsubscribe := c.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	sub := &subscriber{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(sub.done)
		defer unsubscribe()
		log := c.Log()
		pos := 0
		drain := func(upto int) error {
			for pos < upto {
				raws, err := log.ReadFrom(pos, min(100, upto-pos))
				if err != nil {
					return err
				}
				for _, raw := range raws {
					var e struct{ ID string }
					if err := json.Unmarshal(raw, &e); err != nil {
						return err
					}
					sub.mu.Lock()
					sub.logged = append(sub.logged, e.ID)
					sub.mu.Unlock()
				}
				pos += len(raws)
			}
			return nil
		}
		for {
			changed := log.Changed()
			err := drain(log.Len())
			if err == nil {
				select {
				case <-ctx.Done():
					return
				case <-changed:
				case tr := <-transient:
					var f frame
					if err = drain(tr.AfterLog); err == nil {
						err = json.Unmarshal(tr.Frame, &f)
					}
					sub.mu.Lock()
					sub.frames = append(sub.frames, f)
					sub.mu.Unlock()
				}
			}
			if err != nil {
				sub.mu.Lock()
				sub.err = err
				sub.mu.Unlock()
				return
			}
		}
	}()
	return sub
}

// check waits until the subscriber has read the log as it is now, stops
// it and checks what it received: the log, in order (a prefix of it, if
// events were appended since), and every transient frame once.
func (sub *subscriber) check(t *testing.T, c *agent.Conversation) {
	t.Helper()
	n := c.Log().Len()
	caughtUp := testwait.Until(10*time.Second, func() bool {
		sub.mu.Lock()
		defer sub.mu.Unlock()
		return len(sub.logged) >= n || sub.err != nil
	})
	sub.cancel()
	<-sub.done
	if sub.err != nil {
		t.Errorf("subscriber: %v", sub.err)
	}
	if !caughtUp {
		t.Errorf("subscriber: %d of %d logged events after 10s", len(sub.logged), n)
	}
	raws, err := c.EventsUpTo("")
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.logged) > len(raws) {
		t.Errorf("subscriber: received %d logged events, the log holds %d", len(sub.logged), len(raws))
	}
	for i, raw := range raws[:min(len(raws), len(sub.logged))] {
		var e struct{ ID string }
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		if sub.logged[i] != e.ID {
			t.Errorf("subscriber: log position %d is %s, received %s", i, e.ID, sub.logged[i])
			break
		}
	}
	seen := map[string]bool{}
	fullStates, late := 0, 0
	var lastFull time.Time
	for i, f := range sub.frames {
		if f.ID == "" || seen[f.ID] {
			t.Errorf("subscriber: transient frame %d (%s) has id %q, empty or seen before", i, f.Kind, f.ID)
		}
		seen[f.ID] = true
		if f.Key == "full_state" {
			fullStates++
			if f.Timestamp.Before(lastFull) {
				late++
			}
			lastFull = f.Timestamp.Time
		}
	}
	if late > 0 {
		t.Errorf("subscriber: %d of %d full_state frames arrived after a newer one", late, fullStates)
	}
	t.Logf("subscriber: %d logged events, %d transient frames (%d full_state)", len(sub.logged), len(sub.frames), fullStates)
}

// goroutineIDs returns the ids of the goroutines running now, without
// those of the test's LLM server and its HTTP connections.
func goroutineIDs() map[string]string {
	out := goroutineStacks()
	for id, g := range out {
		if strings.Contains(g, "/llm/llmtest.") || strings.Contains(g, "net/http.(*conn).serve") ||
			strings.Contains(g, "net/http.(*persistConn)") {
			delete(out, id)
		}
	}
	return out
}

// checkNoLeak waits until every goroutine started since before has
// ended, and fails with their stacks if some do not.
func checkNoLeak(t *testing.T, before map[string]string) {
	t.Helper()
	var left []string
	ok := testwait.Until(10*time.Second, func() bool {
		left = left[:0]
		for id, g := range goroutineIDs() {
			if _, old := before[id]; !old {
				left = append(left, g)
			}
		}
		return len(left) == 0
	})
	if !ok {
		t.Errorf("%d goroutines started with the conversation remain after Close:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
}
