package startflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/v1wire"
)

// conversationSecrets are the secrets a conversation gets: the owner's
// stored secrets, overridden by the start request's.
func (w *Worker) conversationSecrets(ctx context.Context, t acs.StartTask) (map[string]string, error) {
	return MergeSecrets(ctx, w.Store, w.Sealer, t.OwnerID, t.SealedSecrets)
}

// MergeSecrets opens the owner's git provider tokens (as <PROVIDER>_TOKEN,
// e.g. GITHUB_TOKEN, which also clones selected_repository), stored
// secrets and the sealed per-conversation ones; later ones win on a name
// clash.
func MergeSecrets(ctx context.Context, st interface {
	acs.SettingsStore
	acs.SecretStore
}, sealer acs.Sealer, owner string, sealed map[string]string) (map[string]string, error) {
	out := map[string]string{}
	settings, err := st.GetSettings(ctx, owner)
	if err != nil && !errors.Is(err, acs.ErrNotFound) {
		return nil, fmt.Errorf("load settings: %w", err)
	}
	for _, t := range settings.ProviderTokens {
		v, err := sealer.Open(t.Sealed)
		if err != nil {
			slog.Warn("startflow: a git provider token does not open (was the key changed?)", "provider", t.Provider, "error", err)
			continue
		}
		out[strings.ToUpper(t.Provider)+"_TOKEN"] = v
	}
	stored, err := st.ListSecrets(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("load stored secrets: %w", err)
	}
	for _, s := range stored {
		v, err := sealer.Open(s.Sealed)
		if err != nil {
			slog.Warn("startflow: a stored secret does not open (was the key changed?)", "secret", s.Name, "error", err)
			continue
		}
		out[s.Name] = v
	}
	for k, sv := range sealed {
		v, err := sealer.Open(sv)
		if err != nil {
			return nil, failf("secret %s of this start does not open (was the key changed?)", k)
		}
		out[k] = v
	}
	return out, nil
}

// AgentRequest builds the agent server's StartConversationRequest for a task:
// the installation's LLM with the user's settings applied, the tools, the
// secrets, the project directory, and the request's message, plugins and
// observability settings.
func (w *Worker) AgentRequest(t acs.StartTask, req v1wire.StartRequest, settings acs.Settings, secrets map[string]string) (*agentwire.StartConversationRequest, error) {
	cfg := w.Config
	llmCfg := cfg.LLM
	llmCfg.UsageID = "agent"
	if settings.LLMModel != nil && *settings.LLMModel != "" {
		llmCfg.Model = *settings.LLMModel
	}
	if settings.LLMBaseURL != nil && *settings.LLMBaseURL != "" {
		u := *settings.LLMBaseURL
		llmCfg.BaseURL = &u
	}
	if settings.LLMAPIKeySealed != "" {
		k, err := w.Sealer.Open(settings.LLMAPIKeySealed)
		if err != nil {
			return nil, failf("your saved LLM API key does not open (was the server key changed?); save it again with %s", acs.RouteUpdateSettings.Ref())
		}
		llmCfg.APIKey = &k
	}
	if req.LLMModel != nil && *req.LLMModel != "" {
		llmCfg.Model = *req.LLMModel
	}
	agent := &agentwire.Agent{Kind: "Agent", LLM: llmCfg}
	tools := cfg.Tools
	if req.AgentType == "plan" {
		tools = []string{"terminal", "planning_file_editor", "task_tracker"}
	}
	for _, name := range tools {
		agent.Tools = append(agent.Tools, agentwire.ToolRef{Name: name, Params: []byte("{}")})
	}
	agent.AgentContext = &agentwire.AgentContext{SystemMessageSuffix: req.SystemMessageSuffix,
		LoadUserSkills: true, LoadProjectSkills: true}
	dashed := acs.Dashed(t.ConversationID)
	out := &agentwire.StartConversationRequest{
		Agent: agent, Workspace: agentwire.Workspace{WorkingDir: t.ProjectDir}, ConversationID: &dashed,
		MaxIterations: 500, StuckDetection: true, Autotitle: true,
		ObservabilitySpanName: req.ObservabilitySpanName, ObservabilityTags: req.ObservabilityTags,
		ObservabilityMetadata: req.ObservabilityMetadata, Plugins: req.Plugins,
	}
	if len(settings.ConfirmationPolicy) > 0 {
		var p agentwire.ConfirmationPolicy
		if err := strictjson.Unmarshal(settings.ConfirmationPolicy, &p); err == nil {
			out.ConfirmationPolicy = &p
		}
	}
	if req.ParentConversationID != nil {
		p := acs.Dashed(mustNorm(*req.ParentConversationID))
		out.ParentConversationID = &p
	}
	if len(secrets) > 0 {
		out.Secrets = map[string]agentwire.SecretSource{}
		for k, v := range secrets {
			out.Secrets[k] = agentwire.SecretSource{Kind: "StaticSecret", Value: v}
		}
	}
	if msg := InitialMessage(req); msg != nil && msg.Run {
		out.InitialMessage = msg
	}
	return out, nil
}

// InitialMessage is the request's initial message with the plugins'
// parameters appended as text (the reference's behaviour), or nil.
func InitialMessage(req v1wire.StartRequest) *agentwire.SendMessageRequest {
	if req.InitialMessage == nil {
		return nil
	}
	msg := *req.InitialMessage
	msg.Content = append([]events.Content(nil), msg.Content...)
	for _, p := range req.Plugins {
		if len(p.Parameters) > 0 && string(p.Parameters) != "null" {
			var pretty json.RawMessage = p.Parameters
			msg.Content = append(msg.Content, events.TextItem(fmt.Sprintf("Parameters of plugin %s: %s", p.Source, pretty)))
		}
	}
	return &msg
}

// messageText is the text of a message's text items, one per line ("" for
// none, or no message).
func messageText(msg *agentwire.SendMessageRequest) string {
	if msg == nil {
		return ""
	}
	var parts []string
	for _, c := range msg.Content {
		if tc, ok := c.(*events.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// startConversation creates the conversation record and the conversation on
// the agent server, delivers queued messages and marks the task READY.
func (w *Worker) startConversation(ctx context.Context, dl *delivery, t acs.StartTask, req v1wire.StartRequest) error {
	sb, client, err := w.client(ctx, dl, t)
	if err != nil {
		return err
	}
	areq, secrets, err := w.conversationRequest(ctx, t, req, sb, client)
	if err != nil {
		return err
	}
	conv := w.conversationRecord(t, req, sb, areq, secrets)
	msg := InitialMessage(req)
	if msg != nil && msg.Run {
		// Delivered with the conversation's creation below.
		conv.RecordDelivery(sandboxes.MessageDigest(msg.Content))
	}
	s := conversationStart{t: t, sb: sb, client: client, conv: conv, msg: msg,
		create: w.createOnAgent(sb, client, areq),
		// The skills' loading the placement did not wait for runs beside
		// the creation; the step's last write records it.
		recordSkills: w.skillsToRecord(ctx, dl, t, client),
		generated:    req.ConversationID == nil}
	// A generated id is this start's alone. When the conversation starts
	// idle (no initial message: one that runs would make the agent
	// server report the run at once, and each report would wait for the
	// record), nothing is delivered after the creation (no message queued
	// for the start) and no parent records it, the conversation is
	// created on the agent server first, then its record and READY are
	// stored in one write (createThenFinish). An id the caller chose may
	// be taken by a concurrent start: its record goes first, so that the
	// loser creates nothing.
	if s.generated && conv.ParentConversationID == nil && msg == nil {
		if finished, err := w.createThenFinish(ctx, &s); finished || err != nil {
			return err
		}
	}
	return w.recordThenCreate(ctx, s)
}

// conversationStart is what the last step of a start creates and where.
type conversationStart struct {
	t      acs.StartTask
	sb     acs.Sandbox
	client *client.Agent
	conv   acs.Conversation
	msg    *agentwire.SendMessageRequest
	// create creates the conversation on the agent server.
	create func(context.Context) error
	// recordSkills waits for the skills' loading and returns its record.
	recordSkills func() (func(*acs.StartTask), error)
	// generated reports that the conversation id is this start's alone.
	generated bool
}

// conversationRequest is the agent server's request for t's conversation,
// with the secrets it gets: the user's settings applied, and the browser
// tools when sb's agent server can run them.
func (w *Worker) conversationRequest(ctx context.Context, t acs.StartTask, req v1wire.StartRequest, sb acs.Sandbox, client *client.Agent) (*agentwire.StartConversationRequest, map[string]string, error) {
	settings, err := w.settings(ctx, t.OwnerID)
	if err != nil {
		return nil, nil, err
	}
	secrets, err := w.conversationSecrets(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	areq, err := w.AgentRequest(t, req, settings, secrets)
	if err != nil {
		return nil, nil, err
	}
	if req.AgentType != "plan" && w.Config.BrowserTools && w.browserUsable(ctx, sb.ID, client) {
		addTool(areq.Agent, BrowserToolSet)
	}
	return areq, secrets, nil
}

// conversationRecord is the record of t's conversation on sb.
func (w *Worker) conversationRecord(t acs.StartTask, req v1wire.StartRequest, sb acs.Sandbox, areq *agentwire.StartConversationRequest, secrets map[string]string) acs.Conversation {
	now := w.now()
	title := req.Title
	if title == nil {
		// The first message's text (the start request refused one that
		// holds a secret's value; a title that still would falls back).
		s := acs.TitleFromMessage(messageText(req.InitialMessage))
		if s == "" || len(acs.SecretsIn(s, secrets)) > 0 {
			s = acs.FallbackTitle(t.ConversationID)
		}
		title = &s
	}
	model := areq.Agent.LLM.Model
	conv := acs.Conversation{ID: t.ConversationID, OwnerID: t.OwnerID, SandboxID: sb.ID,
		SelectedRepository: req.SelectedRepository, SelectedBranch: req.SelectedBranch,
		Title: title, PRNumber: req.PRNumber, LLMModel: &model, Public: req.Public,
		WorkingDir: t.WorkDir, ProjectDir: t.ProjectDir, StartTaskID: t.ID, ExecutionStatus: string(agentwire.StatusIdle),
		CreatedAt: now, UpdatedAt: now}
	if req.GitProvider != nil {
		g := string(*req.GitProvider)
		conv.GitProvider = &g
	}
	if req.Trigger != nil {
		tr := string(*req.Trigger)
		conv.Trigger = &tr
	}
	if req.ParentConversationID != nil {
		p := mustNorm(*req.ParentConversationID)
		conv.ParentConversationID = &p
	}
	return conv
}

// createOnAgent is the creation of the conversation on sb's agent server.
// It notes that the agent server answered, or forgets that it did when
// it does not; a refused request fails the start.
func (w *Worker) createOnAgent(sb acs.Sandbox, agent *client.Agent, areq *agentwire.StartConversationRequest) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := agent.CreateConversation(ctx, areq)
		var he *client.HTTPError
		switch {
		case err == nil:
			w.answers.note(sb.ID, agent)
		case errors.As(err, &he) && he.Status == 422:
			return failf("The agent server rejected the conversation: %s", he.Detail)
		case !errors.As(err, &he):
			w.answers.forget(sb.ID)
		}
		return err
	}
}

// createThenFinish creates s's conversation on the agent server, then
// stores its record and READY in one write (finish). The agent server's
// first report of it waits for the record (conversations.ErrStarting),
// and a crash before the write is repaired by the redelivery, whose
// create finds the conversation made. When messages wait to be delivered
// it only creates: finished is false, and s is left for recordThenCreate,
// which stores the record first and READY after them.
func (w *Worker) createThenFinish(ctx context.Context, s *conversationStart) (finished bool, err error) {
	queued := make(chan bool, 1)
	go func() { queued <- w.hasQueued(ctx, s.t) }()
	err = s.create(ctx)
	q := <-queued
	if err != nil {
		return false, err
	}
	if q {
		s.generated = false
		s.create = func(context.Context) error { return nil }
		return false, nil
	}
	after, err := s.recordSkills()
	if err != nil {
		return false, err
	}
	w.touch(ctx, s.t, s.sb)
	return true, w.finish(ctx, s.t, s.conv, after)
}

// recordThenCreate stores s's conversation record, then creates the
// conversation on the agent server, delivers the messages for it and
// marks the task READY. A generated id's conversation is created while
// its record is stored: the two durable writes overlap.
func (w *Worker) recordThenCreate(ctx context.Context, s conversationStart) error {
	var created chan error
	if s.generated {
		created = make(chan error, 1)
		go func() { created <- s.create(ctx) }()
	}
	err := w.createRecord(ctx, s.t, s.conv)
	if err == nil && s.conv.ParentConversationID != nil {
		err = w.recordSubConversation(ctx, s.conv)
	}
	// The create running alongside is always waited for, so it is over
	// when the step returns (a failed step is retried whole).
	if created != nil {
		if cerr := <-created; err == nil {
			err = cerr
		}
	} else if err == nil {
		err = s.create(ctx)
	}
	if err != nil {
		return err
	}
	if s.msg != nil && !s.msg.Run {
		// run=false: deliver the message without starting the agent, once.
		if err := sendOnce(ctx, w.Store, s.client, s.t.ConversationID, s.msg); err != nil {
			return err
		}
	}
	after, err := s.recordSkills()
	if err != nil {
		return err
	}
	w.touch(ctx, s.t, s.sb)
	sandboxes.FlushPending(ctx, w.Store, s.client, s.t.ConversationID, pendingKeys(s.t)...)
	id := s.t.ConversationID
	return w.advanceAround(ctx, s.t.ID, acs.TaskStartingConversation, func(tk *acs.StartTask) { tk.AppConversationID = &id }, after, acs.TaskReady)
}

// recordSubConversation records conv on its parent's record. A parent
// deleted meanwhile is no error.
func (w *Worker) recordSubConversation(ctx context.Context, conv acs.Conversation) error {
	_, err := w.Store.UpdateConversation(ctx, *conv.ParentConversationID, func(p *acs.Conversation) error {
		if !slices.Contains(p.SubConversationIDs, conv.ID) {
			p.SubConversationIDs = append(p.SubConversationIDs, conv.ID)
		}
		return nil
	})
	if errors.Is(err, acs.ErrNotFound) {
		return nil
	}
	return err
}

// pendingKeys are the keys messages for t's conversation are queued under
// before it is ready (sandboxes.FlushPending).
func pendingKeys(t acs.StartTask) []string { return []string{"task-" + t.ID, t.ConversationID} }

// hasQueued reports whether messages wait to be delivered to t's
// conversation (under pendingKeys); a failed read counts as yes, which
// takes the path that delivers them.
func (w *Worker) hasQueued(ctx context.Context, t acs.StartTask) bool {
	for _, key := range pendingKeys(t) {
		msgs, err := w.Store.ListPendingMessages(ctx, key)
		if err != nil || len(msgs) > 0 {
			return true
		}
	}
	return false
}

// touch records that t used sb, unless the start already did (a sandbox
// it created, or reserved a slot on, was marked used and active then).
func (w *Worker) touch(ctx context.Context, t acs.StartTask, sb acs.Sandbox) {
	if sb.LastUsedAt.Before(t.CreatedAt) || sb.LastActivityAt.Before(t.CreatedAt) {
		w.life.Touch(ctx, sb, true)
	}
}

// finish stores conv, t's conversation record, and t's move to READY in
// one write, with after applied to the task when not nil. A record of
// this id that t stored earlier (a redelivery after a start that stored
// it on its own) leaves only the move; any other makes the start fail.
func (w *Worker) finish(ctx context.Context, t acs.StartTask, conv acs.Conversation, after func(*acs.StartTask)) error {
	id := t.ConversationID
	ready := func(tk *acs.StartTask) { tk.AppConversationID = &id }
	_, err := w.Store.UpdateStartTaskCreatingConversation(ctx, t.ID,
		advanceFn(w.now, acs.TaskStartingConversation, ready, after, acs.TaskReady), conv)
	if !errors.Is(err, acs.ErrConflict) {
		return err
	}
	existing, gerr := w.Store.GetConversation(ctx, conv.ID)
	switch {
	case errors.Is(gerr, acs.ErrNotFound):
		return err // the task's status conflicted
	case gerr != nil:
		return gerr
	case existing.StartTaskID != t.ID:
		return failf("%s", errIDUnavailable.Message)
	}
	return w.advanceAround(ctx, t.ID, acs.TaskStartingConversation, ready, after, acs.TaskReady)
}

// createRecord stores conv, the conversation record of t. A redelivered
// step finds its own record; any other record with this id (a concurrent
// start that asked for the same conversation_id and won) makes this start
// fail.
func (w *Worker) createRecord(ctx context.Context, t acs.StartTask, conv acs.Conversation) error {
	err := w.Store.CreateConversation(ctx, conv)
	if !errors.Is(err, acs.ErrConflict) {
		return err
	}
	existing, err := w.Store.GetConversation(ctx, conv.ID)
	if err != nil {
		return err
	}
	if existing.StartTaskID != t.ID {
		return failf("%s", errIDUnavailable.Message)
	}
	return nil
}

// sendOnce sends the initial message unless the conversation already has a
// user message (a redelivered step after a successful send).
func sendOnce(ctx context.Context, store acs.ConversationStore, client *client.Agent, convID string, msg *agentwire.SendMessageRequest) error {
	var count int
	err := client.Get(ctx, "/api/conversations/"+convID+"/events/count?kind=MessageEvent&source=user", &count)
	if err != nil {
		return err
	}
	if count > 0 {
		return nil
	}
	m := *msg
	return sandboxes.DeliverMessage(ctx, store, client, convID, &m)
}

// BrowserToolSet is the agent server's browser tool set (browser_navigate,
// browser_get_content, ... driving the sandbox's Chromium).
const BrowserToolSet = "browser_tool_set"

// browserUsable asks the sandbox's agent server whether it can run the
// browser tools: its /server_info lists browser_tool_set in usable_tools
// only when it found Chromium (and its sandbox did not turn the browser off
// with ACS_BROWSER_TOOLS=false). A server that cannot say counts as no.
// An answer is remembered for the sandbox's agent server at that address
// (what it found does not change while it runs), so later starts on the
// sandbox do not ask again.
func (w *Worker) browserUsable(ctx context.Context, sandboxID string, c *client.Agent) bool {
	if usable, ok := w.browsers.known(sandboxID, c); ok {
		return usable
	}
	var info struct {
		UsableTools []string `json:"usable_tools"`
	}
	if err := c.Get(ctx, "/server_info", &info); err != nil {
		slog.Info("startflow: the agent server's usable tools are unknown; starting without the browser", "error", err)
		return false
	}
	usable := slices.Contains(info.UsableTools, BrowserToolSet)
	w.browsers.note(sandboxID, c, usable)
	return usable
}

// browserCache remembers, per sandbox and agent server address, whether
// that agent server can run the browser tools. What an agent server found
// does not change while it runs, and a resumed sandbox answers at a new
// address. It is safe for concurrent use.
type browserCache struct{ m sync.Map }

// known returns what sandboxID's agent server at c's address answered.
func (b *browserCache) known(sandboxID string, c *client.Agent) (usable, ok bool) {
	v, ok := b.m.Load(sandboxID + " " + c.BaseURL())
	if !ok {
		return false, false
	}
	return v.(bool), true
}

// note records what sandboxID's agent server at c's address answered.
func (b *browserCache) note(sandboxID string, c *client.Agent, usable bool) {
	b.m.Store(sandboxID+" "+c.BaseURL(), usable)
}

// addTool appends the named tool to the agent's tools unless it is there.
func addTool(a *agentwire.Agent, name string) {
	for _, t := range a.Tools {
		if t.Name == name {
			return
		}
	}
	a.Tools = append(a.Tools, agentwire.ToolRef{Name: name, Params: []byte("{}")})
}
