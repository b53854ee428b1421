package startflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/wire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/agentclient"
)

// Config configures the worker.
type Config struct {
	// WebhookBaseURL is where sandboxes push events (…/api/v1/webhooks).
	WebhookBaseURL string
	// CORSOrigin may call agent servers from a browser ("" for none).
	CORSOrigin string
	// LLM is the agent's LLM configuration (model, base URL, key).
	LLM llm.Config
	// Specs are the sandbox specs; the first is the default.
	Specs []acs.SandboxSpec
	// Tools are the tools every agent gets.
	Tools []string
	// StartupTimeout bounds waiting for a sandbox (default 120s).
	StartupTimeout time.Duration
	// PollInterval spaces status checks while a sandbox boots (default 2s).
	PollInterval time.Duration
	// Visibility is the queue visibility timeout of a delivery (default 60s).
	Visibility time.Duration
	// MaxAttempts bounds retries of a step after infrastructure errors
	// (default 5).
	MaxAttempts int
}

// Worker advances start tasks.
type Worker struct {
	Store   acs.Store
	Queue   acs.Queue
	Runtime acs.Runtime
	Config  Config
	Now     func() time.Time
}

func (w *Worker) now() time.Time {
	if w.Now != nil {
		return w.Now().UTC()
	}
	return time.Now().UTC()
}

func (w *Worker) cfg() Config {
	c := w.Config
	if c.StartupTimeout == 0 {
		c.StartupTimeout = 120 * time.Second
	}
	if c.PollInterval == 0 {
		c.PollInterval = 2 * time.Second
	}
	if c.Visibility == 0 {
		c.Visibility = 60 * time.Second
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 5
	}
	if len(c.Tools) == 0 {
		c.Tools = []string{"terminal", "file_editor"}
	}
	return c
}

// Spec returns the sandbox spec with the given id ("" for the default).
func (c Config) Spec(id string) (acs.SandboxSpec, bool) {
	if len(c.Specs) == 0 {
		return acs.SandboxSpec{}, false
	}
	if id == "" {
		return c.Specs[0], true
	}
	for _, s := range c.Specs {
		if s.ID == id {
			return s, true
		}
	}
	return acs.SandboxSpec{}, false
}

// SandboxEnv is the environment every sandbox gets.
func (c Config) SandboxEnv() map[string]string {
	env := map[string]string{}
	if c.WebhookBaseURL != "" {
		env["OH_WEBHOOKS_0_BASE_URL"] = c.WebhookBaseURL
	}
	if c.CORSOrigin != "" {
		env["OH_ALLOW_CORS_ORIGINS_0"] = c.CORSOrigin
	}
	return env
}

// userError is a failure the user can act on: it ends the task at once.
type userError struct{ msg string }

func (e *userError) Error() string { return e.msg }

func failf(format string, args ...any) error { return &userError{fmt.Sprintf(format, args...)} }

// Run receives and handles deliveries with n concurrent handlers until ctx
// ends.
func (w *Worker) Run(ctx context.Context, n int) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				ds, err := w.Queue.Receive(ctx, 1, 5*time.Second, w.cfg().Visibility)
				if err != nil {
					if ctx.Err() == nil {
						slog.Error("startflow: receive", "error", err)
						time.Sleep(time.Second)
					}
					continue
				}
				for _, d := range ds {
					if err := w.Handle(ctx, d); err != nil && ctx.Err() == nil {
						slog.Error("startflow: handle", "task", d.TaskID, "error", err)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// Handle runs one step of the delivered task, then acknowledges the delivery
// (task done) or makes it visible again when the next step is due. An
// infrastructure error leaves the message for redelivery with backoff, and
// ends the task with ERROR after MaxAttempts.
func (w *Worker) Handle(ctx context.Context, d acs.Delivery) error {
	t, err := w.Store.GetStartTask(ctx, d.TaskID)
	if errors.Is(err, acs.ErrNotFound) {
		return w.Queue.Delete(ctx, d.Receipt)
	}
	if err != nil {
		return err
	}
	if t.Status.Done() {
		return w.Queue.Delete(ctx, d.Receipt)
	}
	delay, done, err := w.Step(ctx, t)
	if err != nil {
		var ue *userError
		if errors.As(err, &ue) {
			if ferr := w.fail(ctx, t.ID, ue.msg); ferr != nil {
				return ferr
			}
			return w.Queue.Delete(ctx, d.Receipt)
		}
		attempts := t.Attempts + 1
		if attempts >= w.cfg().MaxAttempts {
			if ferr := w.fail(ctx, t.ID, fmt.Sprintf("%s failed after %d attempts: %v", t.Status, attempts, err)); ferr != nil {
				return ferr
			}
			return w.Queue.Delete(ctx, d.Receipt)
		}
		_, _ = w.Store.UpdateStartTask(ctx, t.ID, func(tk *acs.StartTask) error { tk.Attempts = attempts; return nil })
		backoff := time.Duration(1<<min(attempts, 5)) * 500 * time.Millisecond
		slog.Warn("startflow: step failed; retrying", "task", t.ID, "status", t.Status, "attempt", attempts, "error", err)
		if derr := w.Queue.Delay(ctx, d.Receipt, backoff); derr != nil {
			return derr
		}
		return err
	}
	if done {
		return w.Queue.Delete(ctx, d.Receipt)
	}
	return w.Queue.Delay(ctx, d.Receipt, delay)
}

func (w *Worker) fail(ctx context.Context, taskID, detail string) error {
	_, err := w.Store.UpdateStartTask(ctx, taskID, func(tk *acs.StartTask) error {
		if tk.Status.Done() {
			return nil
		}
		tk.Fail(detail, w.now())
		return nil
	})
	return err
}

// Step runs the task's current step. It returns when the next step is due
// (delay) or that the task is finished (done).
func (w *Worker) Step(ctx context.Context, t acs.StartTask) (delay time.Duration, done bool, err error) {
	var req StartRequest
	if err := strictjson.Unmarshal(t.Request, &req); err != nil {
		return 0, false, failf("the stored start request is unreadable: %v", err)
	}
	switch t.Status {
	case acs.TaskWorking:
		return 0, false, w.place(ctx, t, req)
	case acs.TaskWaitingForSandbox:
		return w.waitForSandbox(ctx, t)
	case acs.TaskStartingConversation:
		return 0, true, w.startConversation(ctx, t, req)
	default:
		return 0, true, nil
	}
}

// advance stores the task's move from one status to the next, with changes
// applied. A task already in the target status is left as it is (a redelivery
// of a step that completed), so no step is recorded twice.
func (w *Worker) advance(ctx context.Context, id string, from, to acs.StartTaskStatus, change func(*acs.StartTask)) error {
	_, err := w.Store.UpdateStartTask(ctx, id, func(tk *acs.StartTask) error {
		switch tk.Status {
		case to:
			return nil
		case from:
		default:
			return fmt.Errorf("task is %s, expected %s: %w", tk.Status, from, acs.ErrConflict)
		}
		if change != nil {
			change(tk)
		}
		tk.Advance(to, w.now())
		return nil
	})
	return err
}

// place chooses the sandbox: the explicit sandbox_id, else a new sandbox
// (NO_GROUPING). A new sandbox's id is the conversation id, so a redelivered
// step finds the sandbox it created instead of making another.
func (w *Worker) place(ctx context.Context, t acs.StartTask, req StartRequest) error {
	if req.SandboxID != nil {
		sb, err := w.Store.GetSandbox(ctx, *req.SandboxID)
		if errors.Is(err, acs.ErrNotFound) || (err == nil && sb.OwnerID != t.OwnerID) {
			return failf("Sandbox not found: %s", *req.SandboxID)
		}
		if err != nil {
			return err
		}
		if sb.Status.ReadOnly() {
			return failf("Sandbox %s is %s and cannot host a new conversation", sb.ID, sb.Status)
		}
		if _, err := w.Store.UpdateSandbox(ctx, sb.ID, func(s *acs.Sandbox) error {
			s.Conversations++
			s.LastUsedAt = w.now()
			return nil
		}); err != nil {
			return err
		}
		id := sb.ID
		return w.advance(ctx, t.ID, acs.TaskWorking, acs.TaskWaitingForSandbox, func(tk *acs.StartTask) {
			tk.SandboxID = &id
			tk.Placement = "explicit sandbox_id (no capacity check)"
		})
	}
	spec, ok := w.cfg().Spec("")
	if !ok {
		return failf("no sandbox spec is configured")
	}
	now := w.now()
	sb := acs.Sandbox{ID: t.ConversationID, OwnerID: t.OwnerID, SpecID: spec.ID, Status: acs.SandboxStarting,
		Conversations: 1, CreatedByTask: t.ID, CreatedAt: now, UpdatedAt: now, LastUsedAt: now}
	if err := w.Store.CreateSandbox(ctx, sb); err != nil {
		if !errors.Is(err, acs.ErrConflict) {
			return err
		}
		existing, gerr := w.Store.GetSandbox(ctx, sb.ID)
		if gerr != nil {
			return gerr
		}
		if existing.CreatedByTask != t.ID {
			return failf("sandbox id %s is already in use", sb.ID)
		}
	}
	if err := w.startRuntime(ctx, sb.ID, t.OwnerID, spec); err != nil {
		return err
	}
	id := sb.ID
	return w.advance(ctx, t.ID, acs.TaskWorking, acs.TaskWaitingForSandbox, func(tk *acs.StartTask) {
		tk.SandboxID = &id
		tk.Placement = "NO_GROUPING: a new sandbox for this conversation"
	})
}

// startRuntime starts (idempotently) a sandbox's compute and records the key
// hash and status the runtime reports.
func (w *Worker) startRuntime(ctx context.Context, id, owner string, spec acs.SandboxSpec) error {
	st, err := w.Runtime.Start(ctx, acs.StartRequest{SandboxID: id, OwnerID: owner, Spec: spec,
		SessionKey: acs.NewSecret(40), Env: w.cfg().SandboxEnv()})
	if err != nil {
		return fmt.Errorf("start sandbox %s: %w", id, err)
	}
	return w.recordStatus(ctx, id, st)
}

// recordStatus copies a runtime status onto the sandbox record.
func (w *Worker) recordStatus(ctx context.Context, id string, st acs.RuntimeStatus) error {
	_, err := w.Store.UpdateSandbox(ctx, id, func(s *acs.Sandbox) error {
		ApplyRuntimeStatus(s, st, w.now())
		return nil
	})
	return err
}

// ApplyRuntimeStatus updates a sandbox record from its runtime's report.
func ApplyRuntimeStatus(s *acs.Sandbox, st acs.RuntimeStatus, now time.Time) {
	if st.SessionKey != "" {
		s.SessionKeyHash = acs.HashKey(st.SessionKey)
	}
	if s.Status != st.Status || s.AgentURL != st.AgentURL || s.Detail != st.Detail {
		s.Status, s.AgentURL, s.Detail = st.Status, st.AgentURL, st.Detail
		s.UpdatedAt = now
	}
	if st.WorkingDir != "" {
		s.WorkingDir = st.WorkingDir
	}
}

func (w *Worker) waitForSandbox(ctx context.Context, t acs.StartTask) (time.Duration, bool, error) {
	cfg := w.cfg()
	sb, err := w.Store.GetSandbox(ctx, *t.SandboxID)
	if errors.Is(err, acs.ErrNotFound) {
		return 0, false, failf("Sandbox %s was deleted while the conversation was starting", *t.SandboxID)
	}
	if err != nil {
		return 0, false, err
	}
	st, err := w.Runtime.Status(ctx, sb.ID)
	if err != nil {
		return 0, false, err
	}
	waited := w.now().Sub(t.Steps[len(t.Steps)-1].StartedAt)
	switch st.Status {
	case acs.SandboxRunning:
		if err := w.recordStatus(ctx, sb.ID, st); err != nil {
			return 0, false, err
		}
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		aliveErr := agentclient.New(st.AgentURL, st.SessionKey).Alive(actx)
		cancel()
		if aliveErr == nil {
			url := st.AgentURL
			return 0, false, w.advance(ctx, t.ID, acs.TaskWaitingForSandbox, acs.TaskStartingConversation, func(tk *acs.StartTask) { tk.AgentServerURL = &url })
		}
	case acs.SandboxPaused:
		spec, _ := cfg.Spec(sb.SpecID)
		st, err := w.Runtime.Resume(ctx, sb.ID, acs.NewSecret(40), mergeEnv(spec.InitialEnv, cfg.SandboxEnv()))
		if err != nil {
			return 0, false, fmt.Errorf("resume sandbox %s: %w", sb.ID, err)
		}
		if err := w.recordStatus(ctx, sb.ID, st); err != nil {
			return 0, false, err
		}
	case acs.SandboxError:
		_ = w.recordStatus(ctx, sb.ID, st)
		return 0, false, failf("Sandbox %s failed to start: %s", sb.ID, st.Detail)
	case acs.SandboxMissing:
		_ = w.recordStatus(ctx, sb.ID, st)
		return 0, false, failf("Sandbox %s no longer exists", sb.ID)
	default:
		if err := w.recordStatus(ctx, sb.ID, st); err != nil {
			return 0, false, err
		}
	}
	if waited > cfg.StartupTimeout {
		return 0, false, failf("Sandbox %s did not become ready within %s (status %s)", sb.ID, cfg.StartupTimeout, st.Status)
	}
	return cfg.PollInterval, false, nil
}

func mergeEnv(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// AgentRequest builds the agent server's StartConversationRequest for a task.
func (w *Worker) AgentRequest(t acs.StartTask, req StartRequest, workDir string) *wire.StartConversationRequest {
	cfg := w.cfg()
	llmCfg := cfg.LLM
	llmCfg.UsageID = "agent"
	if req.LLMModel != nil && *req.LLMModel != "" {
		llmCfg.Model = *req.LLMModel
	}
	agent := &wire.Agent{Kind: "Agent", LLM: llmCfg}
	for _, name := range cfg.Tools {
		agent.Tools = append(agent.Tools, wire.ToolRef{Name: name, Params: []byte("{}")})
	}
	agent.AgentContext = &wire.AgentContext{SystemMessageSuffix: req.SystemMessageSuffix,
		LoadUserSkills: true, LoadProjectSkills: true}
	dashed := acs.Dashed(t.ConversationID)
	out := &wire.StartConversationRequest{
		Agent: agent, Workspace: wire.Workspace{WorkingDir: workDir}, ConversationID: &dashed,
		MaxIterations: 500, StuckDetection: true, Autotitle: true,
		ObservabilitySpanName: req.ObservabilitySpanName, ObservabilityTags: req.ObservabilityTags,
		ObservabilityMetadata: req.ObservabilityMetadata, Plugins: req.Plugins,
	}
	if req.ParentConversationID != nil {
		p := acs.Dashed(mustNorm(*req.ParentConversationID))
		out.ParentConversationID = &p
	}
	if len(t.Secrets) > 0 {
		out.Secrets = map[string]wire.SecretSource{}
		for k, v := range t.Secrets {
			out.Secrets[k] = wire.SecretSource{Kind: "StaticSecret", Value: v}
		}
	}
	if req.InitialMessage != nil && req.InitialMessage.Run {
		msg := *req.InitialMessage
		out.InitialMessage = &msg
	}
	return out
}

func mustNorm(id string) string {
	h, err := acs.NormalizeID(id)
	if err != nil {
		return id
	}
	return h
}

func (w *Worker) startConversation(ctx context.Context, t acs.StartTask, req StartRequest) error {
	sb, err := w.Store.GetSandbox(ctx, *t.SandboxID)
	if err != nil {
		return err
	}
	st, err := w.Runtime.Status(ctx, sb.ID)
	if err != nil {
		return err
	}
	if st.Status != acs.SandboxRunning {
		return fmt.Errorf("sandbox %s is %s, not RUNNING", sb.ID, st.Status)
	}
	now := w.now()
	title := req.Title
	if title == nil {
		s := "Conversation " + t.ConversationID[:5]
		title = &s
	}
	conv := acs.Conversation{ID: t.ConversationID, OwnerID: t.OwnerID, SandboxID: sb.ID,
		SelectedRepository: req.SelectedRepository, SelectedBranch: req.SelectedBranch,
		Title: title, PRNumber: req.PRNumber, LLMModel: &w.Config.LLM.Model, Public: req.Public,
		WorkingDir: st.WorkingDir, StartTaskID: t.ID, ExecutionStatus: string(wire.StatusIdle),
		CreatedAt: now, UpdatedAt: now}
	if req.LLMModel != nil {
		conv.LLMModel = req.LLMModel
	}
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
	if err := w.Store.CreateConversation(ctx, conv); err != nil && !errors.Is(err, acs.ErrConflict) {
		return err
	}
	client := agentclient.New(st.AgentURL, st.SessionKey)
	areq := w.AgentRequest(t, req, st.WorkingDir)
	if _, err := client.CreateConversation(ctx, areq); err != nil {
		var he *agentclient.HTTPError
		if errors.As(err, &he) && he.Status == 422 {
			return failf("The agent server rejected the conversation: %s", he.Detail)
		}
		return err
	}
	if req.InitialMessage != nil && !req.InitialMessage.Run {
		// run=false: deliver the message without starting the agent, once.
		if err := w.sendOnce(ctx, client, t.ConversationID, req.InitialMessage); err != nil {
			return err
		}
	}
	if _, err := w.Store.UpdateSandbox(ctx, sb.ID, func(s *acs.Sandbox) error { s.LastUsedAt = w.now(); return nil }); err != nil {
		return err
	}
	id := t.ConversationID
	return w.advance(ctx, t.ID, acs.TaskStartingConversation, acs.TaskReady, func(tk *acs.StartTask) { tk.AppConversationID = &id })
}

// sendOnce sends the initial message unless the conversation already has a
// user message (a redelivered step after a successful send).
func (w *Worker) sendOnce(ctx context.Context, client *agentclient.Client, convID string, msg *wire.SendMessageRequest) error {
	var count int
	err := client.Get(ctx, "/api/conversations/"+convID+"/events/count?kind=MessageEvent&source=user", &count)
	if err != nil {
		return err
	}
	if count > 0 {
		return nil
	}
	m := *msg
	return client.SendMessage(ctx, convID, &m)
}
