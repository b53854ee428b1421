// Package startflow starts conversations: it validates and stores start
// requests as start tasks (Service.Submit) and advances each task one
// idempotent step per queue delivery (Worker) until READY or ERROR. The same
// code runs in `acs serve` and in the AWS provisioner.
package startflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/v1wire"
)

// Store is what the start flow reads and writes: the lifecycle's records,
// the owner's settings and secrets, and a start's atomic writes.
type Store interface {
	sandboxes.Store
	acs.SettingsStore
	acs.SecretStore
	acs.StartWrites
}

// Service accepts start requests.
type Service struct {
	Store  Store
	Queue  acs.Queue
	Sealer acs.Sealer
	// Lifecycle checks the per-user cap on running sandboxes.
	Lifecycle *sandboxes.Lifecycle
	// Placer, when set, places a start as it is submitted when that needs
	// no wait (Worker.PlaceOnSubmit: the local service, whose worker runs
	// in this process and knows which agent servers answer it).
	Placer Placer
	Now    func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// MaskedRequest is req as shown in the task: secret values replaced with
// "**********".
func MaskedRequest(req v1wire.StartRequest) []byte {
	if len(req.Secrets) > 0 {
		masked := make(map[string]string, len(req.Secrets))
		for k := range req.Secrets {
			masked[k] = "**********"
		}
		req.Secrets = masked
	}
	return strictjson.MustMarshal(&req)
}

// Submit stores a start task for user and queues its first step. The task is
// returned in status WORKING, or placed on a running sandbox with nothing
// to prepare (STARTING_CONVERSATION) when the Placer placed it. Before
// that it:
//   - applies the parent conversation's sandbox, repository, branch,
//     provider and model to a sub-conversation (an unknown parent is
//     ErrInvalid);
//   - refuses with ErrCapacity a start that needs a new sandbox when the
//     user's cap on running sandboxes is reached (nothing is paused to make
//     room);
//   - seals the per-conversation secrets.
//
// An initial message or title holding the value of one of the user's
// stored secrets is refused first, with a strictjson.Errors.
//
// A conversation_id that is not available (checkIDAvailable) is
// ErrConflict; a queue failure marks the task ERROR and returns
// ErrUnavailable (the caller may retry).
func (s *Service) Submit(ctx context.Context, user acs.User, req v1wire.StartRequest) (acs.StartTask, error) {
	if err := s.checkStoredSecrets(ctx, user.ID, req); err != nil {
		return acs.StartTask{}, err
	}
	if req.AgentType == "" {
		req.AgentType = "default"
	}
	// Requests built in code get the same validation as decoded ones: the
	// worker decodes the stored request strictly.
	if err := strictjson.Unmarshal(strictjson.MustMarshal(&req), &v1wire.StartRequest{}); err != nil {
		return acs.StartTask{}, acs.Errorf(acs.EINVALID, "start request: %v", err)
	}
	if err := s.applyParent(ctx, user, &req); err != nil {
		return acs.StartTask{}, err
	}
	applySuggestedTask(&req)
	convID, err := s.conversationID(ctx, req)
	if err != nil {
		return acs.StartTask{}, err
	}
	if err := s.checkCapacity(ctx, user.ID, req); err != nil {
		return acs.StartTask{}, err
	}
	sealed, err := s.sealSecrets(req)
	if err != nil {
		return acs.StartTask{}, err
	}
	now := s.now()
	t := acs.StartTask{ID: acs.NewID(), OwnerID: user.ID, Status: acs.TaskWorking, ConversationID: convID,
		Request: MaskedRequest(req), SealedSecrets: sealed, CreatedAt: now, UpdatedAt: now,
		Steps: []acs.StepTiming{{Status: acs.TaskWorking, StartedAt: now}}}
	if t, err = s.store(ctx, t); err != nil {
		return acs.StartTask{}, err
	}
	if err := s.Queue.Send(ctx, acs.Message{TaskID: t.ID, Step: t.Status}, 0); err != nil {
		s.notQueued(ctx, t, err)
		return acs.StartTask{}, fmt.Errorf("queue start task: %w", acs.ErrUnavailable)
	}
	return t, nil
}

// applyParent applies the parent conversation's sandbox, repository,
// branch, provider and model to a sub-conversation's request, where the
// request leaves them unset. An unknown parent is a FieldError.
func (s *Service) applyParent(ctx context.Context, user acs.User, req *v1wire.StartRequest) error {
	if req.ParentConversationID == nil {
		return nil
	}
	pid, _ := acs.NormalizeID(*req.ParentConversationID)
	parent, err := s.Store.GetConversation(ctx, pid)
	if errors.Is(err, acs.ErrNotFound) || (err == nil && parent.OwnerID != user.ID) {
		return &FieldError{Field: "parent_conversation_id", Msg: "Parent conversation not found: " + *req.ParentConversationID}
	}
	if err != nil {
		return err
	}
	if req.SandboxID == nil {
		req.SandboxID = &parent.SandboxID
	}
	if req.SelectedRepository == nil {
		req.SelectedRepository, req.SelectedBranch = parent.SelectedRepository, parent.SelectedBranch
		if parent.GitProvider != nil && req.GitProvider == nil {
			g := v1wire.GitProvider(*parent.GitProvider)
			req.GitProvider = &g
		}
	}
	if req.LLMModel == nil {
		req.LLMModel = parent.LLMModel
	}
	return nil
}

// applySuggestedTask turns a suggested task into the request's initial
// message, trigger and repository: the stored request carries the message,
// not the task.
func applySuggestedTask(req *v1wire.StartRequest) {
	st := req.SuggestedTask
	if st == nil {
		return
	}
	req.InitialMessage = &agentwire.SendMessageRequest{Role: events.RoleUser, Content: []events.Content{events.TextItem(st.Prompt())}, Run: true}
	trigger := v1wire.Trigger("suggested_task")
	req.Trigger = &trigger
	if req.SelectedRepository == nil {
		repo := st.Repo
		req.SelectedRepository, req.GitProvider = &repo, st.GitProvider
	}
	req.SuggestedTask = nil
}

// conversationID is the id of the conversation req starts: the one it
// asks for, when available, else a new one.
func (s *Service) conversationID(ctx context.Context, req v1wire.StartRequest) (string, error) {
	if req.ConversationID == nil {
		return acs.NewID(), nil
	}
	id, err := acs.NormalizeID(*req.ConversationID)
	if err != nil {
		return "", err
	}
	if err := s.checkIDAvailable(ctx, id); err != nil {
		return "", err
	}
	return id, nil
}

// sealSecrets seals the request's per-conversation secrets.
func (s *Service) sealSecrets(req v1wire.StartRequest) (map[string]string, error) {
	sealed := map[string]string{}
	for k, v := range req.Secrets {
		sv, err := s.Sealer.Seal(v)
		if err != nil {
			return nil, fmt.Errorf("seal secret %s: %w", k, err)
		}
		sealed[k] = sv
	}
	return sealed, nil
}

// store stores t, placed by the Placer when it can be, and returns it as
// stored.
func (s *Service) store(ctx context.Context, t acs.StartTask) (acs.StartTask, error) {
	if s.Placer != nil {
		placed, ok, err := s.Placer.PlaceOnSubmit(ctx, t)
		if err != nil || ok {
			return placed, err
		}
	}
	if err := s.Store.CreateStartTask(ctx, t); err != nil {
		return acs.StartTask{}, fmt.Errorf("store start task: %w", err)
	}
	return t, nil
}

// notQueued ends t, whose first step could not be queued (err), with
// ERROR, and gives back the slot a placed start reserved.
func (s *Service) notQueued(ctx context.Context, t acs.StartTask, err error) {
	slog.Error("startflow: enqueue failed", "task", t.ID, "error", err)
	if tk, err := s.Store.UpdateStartTask(ctx, t.ID, func(tk *acs.StartTask) error {
		tk.Fail("The start could not be queued; please retry.", s.now())
		return nil
	}); err == nil {
		logTaskFailed(t.ID, t.Status)
		releaseSlot(ctx, s.Store, tk)
	}
}

// placedWait bounds how long Start waits for a start the Placer placed to
// end.
const placedWait = 2 * time.Second

// Start is Submit, then, for a start the Placer placed as it was
// submitted (it waits for nothing: only its conversation is left to
// create, which the worker does at once), the wait for it to end, up to
// placedWait: the answer is the task READY (or ERROR), and the caller
// needs no poll. Any other start, one on a store that cannot tell this
// process of its writes (acs.StartTaskWatcher), and one still going at
// the bound, or when ctx ends, is returned as last read.
func (s *Service) Start(ctx context.Context, user acs.User, req v1wire.StartRequest) (acs.StartTask, error) {
	t, err := s.Submit(ctx, user, req)
	if err != nil || t.Status == acs.TaskWorking || t.Status.Done() {
		return t, err
	}
	bound := time.NewTimer(placedWait)
	defer bound.Stop()
	for {
		// Watch, then read: a write in between still wakes the wait.
		changed, stop := s.WatchTask(t.ID)
		cur, err := s.Store.GetStartTask(ctx, t.ID)
		if err == nil {
			t = cur
		}
		if err != nil || t.Status.Done() || changed == nil {
			stop()
			return t, nil
		}
		select {
		case <-changed:
		case <-bound.C:
			stop()
			return t, nil
		case <-ctx.Done():
			stop()
			return t, nil
		}
		stop()
	}
}

// errIDUnavailable is the one answer for an explicit conversation_id that
// cannot be used, whatever the reason: it names neither the reason nor the
// id, so it cannot tell another user's conversation from anything else.
var errIDUnavailable = acs.Errorf(acs.ECONFLICT, "conversation_id is not available; choose another id or leave it out to get a generated one")

// checkIDAvailable returns ErrConflict (errIDUnavailable) when id names a
// conversation or a sandbox, anyone's: ids are global, and a sandbox is
// named after the conversation it was made for (which may since have been
// deleted while the sandbox went on serving others). The answer is the
// same in every case, the caller's own conversation included, so it does
// not reveal that another user's conversation exists: the same user gets
// it for a free id whose sandbox name is taken.
func (s *Service) checkIDAvailable(ctx context.Context, id string) error {
	_, err := s.Store.GetConversation(ctx, id)
	if err == nil {
		return errIDUnavailable
	}
	if !errors.Is(err, acs.ErrNotFound) {
		return err
	}
	_, err = s.Store.GetSandbox(ctx, id)
	if err == nil {
		return errIDUnavailable
	}
	if !errors.Is(err, acs.ErrNotFound) {
		return err
	}
	return nil
}

// FieldError is a request field that refers to something that does not
// exist: an EINVALID domain error at that field (answered with 422 there).
type FieldError struct {
	Field, Msg string
}

func (e *FieldError) Error() string { return e.Msg }

// Unwrap is the domain error: EINVALID, Msg, at body.Field.
func (e *FieldError) Unwrap() error {
	return &acs.Error{Code: acs.EINVALID, Message: e.Msg, Field: []any{e.Field}}
}

// checkCapacity refuses a start that would need a new (or resumed) sandbox
// while the user is at their cap on running sandboxes.
func (s *Service) checkCapacity(ctx context.Context, owner string, req v1wire.StartRequest) error {
	if s.Lifecycle == nil || s.Lifecycle.Config.MaxRunningSandboxes <= 0 {
		return nil
	}
	need, paused, err := placer{store: s.Store}.roomAtSubmit(ctx, owner, req.SandboxID)
	if err != nil || !need {
		return err
	}
	return s.Lifecycle.CheckCapacity(ctx, owner, paused)
}

// Task returns start task id (any user's: the caller checks ownership, or
// uses OwnTask).
func (s *Service) Task(ctx context.Context, id string) (acs.StartTask, error) {
	return s.Store.GetStartTask(ctx, id)
}

// WatchTask returns changed, closed once start task id is next written,
// and stop, which releases the watch; on a store that cannot tell its
// process of writes (acs.StartTaskWatcher) changed is nil, never ready,
// and the caller polls. Watch first, then read the task: a write between
// the two still closes changed.
func (s *Service) WatchTask(id string) (changed <-chan struct{}, stop func()) {
	if w, ok := s.Store.(acs.StartTaskWatcher); ok {
		return w.WatchStartTask(id)
	}
	return nil, func() {}
}

// OwnTask returns the owner's start task id; another user's task, like a
// missing one, is acs.ErrNotFound.
func (s *Service) OwnTask(ctx context.Context, ownerID, id string) (acs.StartTask, error) {
	t, err := s.Store.GetStartTask(ctx, id)
	if errors.Is(err, acs.ErrNotFound) || (err == nil && t.OwnerID != ownerID) {
		return acs.StartTask{}, fmt.Errorf("Start task not found: %s: %w", id, acs.ErrNotFound)
	}
	return t, err
}

// SearchTasks lists the owner's start tasks matching f in the given order;
// a foreign page token wraps acs.ErrInvalid.
func (s *Service) SearchTasks(ctx context.Context, ownerID string, f acs.StartTaskFilter, order acs.StartTaskSort, opts acs.ListOptions) (acs.Page[acs.StartTask], error) {
	return s.Store.SearchStartTasks(ctx, ownerID, f, order, opts)
}

// CountTasks counts the owner's start tasks matching f.
func (s *Service) CountTasks(ctx context.Context, ownerID string, f acs.StartTaskFilter) (int, error) {
	return s.Store.CountStartTasks(ctx, ownerID, f)
}
