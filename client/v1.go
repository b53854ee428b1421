package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// Client calls the V1 API of an ACS control plane (`acs serve`, or the
// API Gateway of an AWS deployment) as one user, identified by an API key.
// It is safe for concurrent use.
type Client struct {
	t transport
}

// Option configures a Client or an Agent.
type Option func(*transport)

// WithHTTPClient makes the client send its requests with hc.
func WithHTTPClient(hc *http.Client) Option { return func(t *transport) { t.http = hc } }

// WithRetry sets the retry policy (DefaultRetry otherwise).
func WithRetry(r Retry) Option { return func(t *transport) { t.retry = r } }

// New returns a client of the control plane at baseURL (such as
// "http://127.0.0.1:8000", without /api/v1) that authenticates with apiKey
// (Authorization: Bearer; "" sends no credentials).
func New(baseURL, apiKey string, opts ...Option) *Client {
	t := transport{base: strings.TrimRight(baseURL, "/"), http: http.DefaultClient, retry: DefaultRetry}
	if apiKey != "" {
		t.auth = func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+apiKey) }
	}
	for _, o := range opts {
		o(&t)
	}
	return &Client{t: t}
}

// Filter holds a search's or a count's query parameters, with the V1
// names ("title__contains", "sandbox_id__eq", "kind__eq", "limit",
// "sort_order", ...); nil means none.
type Filter = url.Values

const v1 = "/api/v1"

func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	return c.t.call(ctx, request{method: http.MethodGet, path: v1 + path, query: q, idempotent: true}, out)
}

func ids(name string, list []string) url.Values { return url.Values{name: list} }

// --- start tasks ---

// StartConversation submits a start request and returns its start task
// (WORKING): the conversation starts in the background (WaitStartTask).
// It is never retried.
func (c *Client) StartConversation(ctx context.Context, req *v1wire.StartRequest) (v1wire.StartTask, error) {
	var t v1wire.StartTask
	err := c.t.call(ctx, request{method: http.MethodPost, path: v1 + "/app-conversations", body: req}, &t)
	return t, err
}

// GetStartTasks returns the start tasks of ids in their order; nil for a
// task that does not exist or is another user's.
func (c *Client) GetStartTasks(ctx context.Context, taskIDs ...string) ([]*v1wire.StartTask, error) {
	var out []*v1wire.StartTask
	err := c.get(ctx, "/app-conversations/start-tasks", ids("ids", taskIDs), &out)
	return out, err
}

// SearchStartTasks returns one page of the user's start tasks.
func (c *Client) SearchStartTasks(ctx context.Context, f Filter) (v1wire.Page[v1wire.StartTask], error) {
	var p v1wire.Page[v1wire.StartTask]
	err := c.get(ctx, "/app-conversations/start-tasks/search", f, &p)
	return p, err
}

// CountStartTasks counts the user's start tasks that match f.
func (c *Client) CountStartTasks(ctx context.Context, f Filter) (int, error) {
	var n int
	err := c.get(ctx, "/app-conversations/start-tasks/count", f, &n)
	return n, err
}

// ErrStartFailed is the error of WaitStartTask when the task ends in ERROR.
var ErrStartFailed = fmt.Errorf("start task failed")

// WaitStartTask polls the start task id every poll (500 ms when 0) until
// it is READY or ERROR and returns it; an ERROR task comes with an error
// that wraps ErrStartFailed and names the task's detail. It returns the
// context's error (with the last task seen) when ctx ends first, and an
// ENOTFOUND error when the task does not exist.
func (c *Client) WaitStartTask(ctx context.Context, id string, poll time.Duration) (v1wire.StartTask, error) {
	return c.pollStartTask(ctx, id, poll, nil)
}

// pollStartTask is WaitStartTask, calling each (when not nil) with every
// answer.
func (c *Client) pollStartTask(ctx context.Context, id string, poll time.Duration, each func(v1wire.StartTask)) (v1wire.StartTask, error) {
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	var last v1wire.StartTask
	for {
		ts, err := c.GetStartTasks(ctx, id)
		if err != nil {
			return last, err
		}
		if len(ts) != 1 || ts[0] == nil {
			return last, &Error{Method: http.MethodGet, Path: v1 + "/app-conversations/start-tasks", Status: http.StatusNotFound,
				Err: acs.Errorf(acs.ENOTFOUND, "start task %s not found", id)}
		}
		last = *ts[0]
		if each != nil {
			each(last)
		}
		if done, err := startDone(last); done {
			return last, err
		}
		timer := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			timer.Stop()
			return last, fmt.Errorf("wait for start task %s (last %s): %w", id, last.Status, ctx.Err())
		case <-timer.C:
		}
	}
}

// startDone reports whether t is READY or ERROR, with the error of an
// ERROR task (it wraps ErrStartFailed and names the task's detail).
func startDone(t v1wire.StartTask) (bool, error) {
	switch t.Status {
	case "READY":
		return true, nil
	case "ERROR":
		detail := ""
		if t.Detail != nil {
			detail = *t.Detail
		}
		return true, fmt.Errorf("%w: %s: %s", ErrStartFailed, t.ID, detail)
	}
	return false, nil
}

// StartConversationAndWait starts a conversation and waits until its start
// task is READY (see FollowStart).
func (c *Client) StartConversationAndWait(ctx context.Context, req *v1wire.StartRequest, poll time.Duration) (v1wire.StartTask, error) {
	return c.FollowStart(ctx, req, poll, nil)
}

// FollowStart starts a conversation through stream-start and returns its
// start task once READY or ERROR (an ERROR task with an error wrapping
// ErrStartFailed), calling each (when not nil) with every state of the
// task as it arrives: the server sends each status as it reaches it, so
// READY is seen without a polling delay. (Behind a proxy that buffers
// answers, as API Gateway does, they arrive together when the stream
// ends.) When the stream ends or breaks before that (a proxy that limits a
// response's time ends it early), it polls the task every poll (500 ms
// when 0), as WaitStartTask. A refused request returns its error (an
// *Error) and no task.
func (c *Client) FollowStart(ctx context.Context, req *v1wire.StartRequest, poll time.Duration, each func(v1wire.StartTask)) (v1wire.StartTask, error) {
	var last v1wire.StartTask
	for t, err := range c.StreamStart(ctx, req) {
		if err != nil {
			if last.ID == "" || ctx.Err() != nil {
				return last, err
			}
			break // the task exists: poll it
		}
		last = t
		if each != nil {
			each(t)
		}
		if done, err := startDone(t); done {
			return t, err
		}
	}
	if last.ID == "" {
		return last, fmt.Errorf("stream-start: the stream ended before the task")
	}
	return c.pollStartTask(ctx, last.ID, poll, each)
}

// StreamStart submits a start request to stream-start and yields each
// state of its start task as the server streams it, until the task is
// done or the stream ends. An error (the request's, or a broken stream) is
// yielded last.
func (c *Client) StreamStart(ctx context.Context, req *v1wire.StartRequest) iter.Seq2[v1wire.StartTask, error] {
	return func(yield func(v1wire.StartTask, error) bool) {
		res, err := c.t.send(ctx, request{method: http.MethodPost, path: v1 + "/app-conversations/stream-start", body: req})
		if err != nil {
			yield(v1wire.StartTask{}, err)
			return
		}
		defer res.Body.Close()
		dec := json.NewDecoder(res.Body)
		if _, err := dec.Token(); err != nil { // [
			yield(v1wire.StartTask{}, fmt.Errorf("stream-start: read the stream: %w", err))
			return
		}
		for dec.More() {
			var t v1wire.StartTask
			if err := dec.Decode(&t); err != nil {
				yield(v1wire.StartTask{}, fmt.Errorf("stream-start: read the stream: %w", err))
				return
			}
			if !yield(t, nil) {
				return
			}
		}
	}
}

// --- conversations ---

// GetConversations returns the conversations of ids in their order; nil
// for one that does not exist or is another user's.
func (c *Client) GetConversations(ctx context.Context, convIDs ...string) ([]*v1wire.Conversation, error) {
	var out []*v1wire.Conversation
	err := c.get(ctx, "/app-conversations", ids("ids", convIDs), &out)
	return out, err
}

// GetConversation returns one conversation; an ENOTFOUND error when it
// does not exist or is another user's.
func (c *Client) GetConversation(ctx context.Context, id string) (v1wire.Conversation, error) {
	cs, err := c.GetConversations(ctx, id)
	if err != nil {
		return v1wire.Conversation{}, err
	}
	if len(cs) != 1 || cs[0] == nil {
		return v1wire.Conversation{}, &Error{Method: http.MethodGet, Path: v1 + "/app-conversations", Status: http.StatusNotFound,
			Err: acs.Errorf(acs.ENOTFOUND, "Conversation not found")}
	}
	return *cs[0], nil
}

// SearchConversations returns one page of the user's conversations.
func (c *Client) SearchConversations(ctx context.Context, f Filter) (v1wire.Page[v1wire.Conversation], error) {
	var p v1wire.Page[v1wire.Conversation]
	err := c.get(ctx, "/app-conversations/search", f, &p)
	return p, err
}

// Conversations yields every conversation that matches f, following
// next_page_id from page to page.
func (c *Client) Conversations(ctx context.Context, f Filter) iter.Seq2[v1wire.Conversation, error] {
	return pages(f, func(q url.Values) (v1wire.Page[v1wire.Conversation], error) { return c.SearchConversations(ctx, q) })
}

// CountConversations counts the user's conversations that match f.
func (c *Client) CountConversations(ctx context.Context, f Filter) (int, error) {
	var n int
	err := c.get(ctx, "/app-conversations/count", f, &n)
	return n, err
}

// UpdateConversation applies a partial update (fields built with Set or
// Clear; the others are left alone) and returns the conversation.
func (c *Client) UpdateConversation(ctx context.Context, id string, req *v1wire.UpdateRequest) (v1wire.Conversation, error) {
	var out v1wire.Conversation
	err := c.t.call(ctx, request{method: http.MethodPatch, path: v1 + "/app-conversations/" + escape(id), body: req, idempotent: true}, &out)
	return out, err
}

// DeleteConversation deletes a conversation (and its sandbox when no
// other conversation uses it).
func (c *Client) DeleteConversation(ctx context.Context, id string) error {
	return c.t.call(ctx, request{method: http.MethodDelete, path: v1 + "/app-conversations/" + escape(id), idempotent: true}, nil)
}

// DownloadConversation returns the conversation's zip archive.
func (c *Client) DownloadConversation(ctx context.Context, id string) ([]byte, error) {
	return c.t.bytes(ctx, request{method: http.MethodGet, path: v1 + "/app-conversations/" + escape(id) + "/download", idempotent: true})
}

// SendMessage sends a user message to a conversation (resuming its sandbox
// first when paused). It is never retried.
func (c *Client) SendMessage(ctx context.Context, id string, req *v1wire.SendMessageRequest) (v1wire.SendMessageResponse, error) {
	var out v1wire.SendMessageResponse
	err := c.t.call(ctx, request{method: http.MethodPost, path: v1 + "/app-conversations/" + escape(id) + "/send-message", body: req}, &out)
	return out, err
}

// AddPendingMessage queues a message for a conversation that is starting
// (id "task-<start task id>") or delivers it to one that is ready. It is
// never retried.
func (c *Client) AddPendingMessage(ctx context.Context, id string, req *v1wire.PendingMessageRequest) (v1wire.PendingMessageResponse, error) {
	var out v1wire.PendingMessageResponse
	err := c.t.call(ctx, request{method: http.MethodPost, path: v1 + "/conversations/" + escape(id) + "/pending-messages", body: req}, &out)
	return out, err
}

// ReadFile returns a file of the conversation's workspace (path relative
// to its project directory, or absolute inside the workspace).
func (c *Client) ReadFile(ctx context.Context, id, path string) (string, error) {
	var s string
	err := c.get(ctx, "/app-conversations/"+escape(id)+"/file", url.Values{"file_path": {path}}, &s)
	return s, err
}

// GitChanges lists the changed files of the conversation's repository at
// path ("" for its project directory).
func (c *Client) GitChanges(ctx context.Context, id, path string) ([]agentwire.GitChange, error) {
	var out []agentwire.GitChange
	var q url.Values
	if path != "" {
		q = url.Values{"path": {path}}
	}
	err := c.get(ctx, "/app-conversations/"+escape(id)+"/git/changes", q, &out)
	return out, err
}

// GitDiff returns the diff of one file of the conversation's repository.
func (c *Client) GitDiff(ctx context.Context, id, path string) (agentwire.GitDiff, error) {
	var out agentwire.GitDiff
	err := c.get(ctx, "/app-conversations/"+escape(id)+"/git/diff", url.Values{"path": {path}}, &out)
	return out, err
}

// Skills lists the skills the conversation's agent loads.
func (c *Client) Skills(ctx context.Context, id string) ([]v1wire.Skill, error) {
	var out v1wire.SkillList
	err := c.get(ctx, "/app-conversations/"+escape(id)+"/skills", nil, &out)
	return out.Skills, err
}

// Hooks lists the project's hooks by event type.
func (c *Client) Hooks(ctx context.Context, id string) ([]v1wire.HookEvent, error) {
	var out v1wire.HookList
	err := c.get(ctx, "/app-conversations/"+escape(id)+"/hooks", nil, &out)
	return out.Hooks, err
}

// --- sandboxes ---

// CreateSandbox starts a sandbox of the spec specID ("" for the default)
// and returns it (STARTING). It is never retried.
func (c *Client) CreateSandbox(ctx context.Context, specID string) (v1wire.Sandbox, error) {
	var q url.Values
	if specID != "" {
		q = url.Values{"sandbox_spec_id": {specID}}
	}
	var out v1wire.Sandbox
	err := c.t.call(ctx, request{method: http.MethodPost, path: v1 + "/sandboxes", query: q}, &out)
	return out, err
}

// GetSandboxes returns the sandboxes of ids in their order; nil for one
// that does not exist or is another user's.
func (c *Client) GetSandboxes(ctx context.Context, sandboxIDs ...string) ([]*v1wire.Sandbox, error) {
	var out []*v1wire.Sandbox
	err := c.get(ctx, "/sandboxes", ids("id", sandboxIDs), &out)
	return out, err
}

// GetSandbox returns one sandbox; an ENOTFOUND error when it does not
// exist or is another user's.
func (c *Client) GetSandbox(ctx context.Context, id string) (v1wire.Sandbox, error) {
	sbs, err := c.GetSandboxes(ctx, id)
	if err != nil {
		return v1wire.Sandbox{}, err
	}
	if len(sbs) != 1 || sbs[0] == nil {
		return v1wire.Sandbox{}, &Error{Method: http.MethodGet, Path: v1 + "/sandboxes", Status: http.StatusNotFound,
			Err: acs.Errorf(acs.ENOTFOUND, "Sandbox not found")}
	}
	return *sbs[0], nil
}

// SearchSandboxes returns one page of the user's sandboxes.
func (c *Client) SearchSandboxes(ctx context.Context, f Filter) (v1wire.Page[v1wire.Sandbox], error) {
	var p v1wire.Page[v1wire.Sandbox]
	err := c.get(ctx, "/sandboxes/search", f, &p)
	return p, err
}

// PauseSandbox pauses a sandbox (its workspace is kept).
func (c *Client) PauseSandbox(ctx context.Context, id string) error {
	return c.t.call(ctx, request{method: http.MethodPost, path: v1 + "/sandboxes/" + escape(id) + "/pause", idempotent: true}, nil)
}

// ResumeSandbox resumes a paused sandbox.
func (c *Client) ResumeSandbox(ctx context.Context, id string) error {
	return c.t.call(ctx, request{method: http.MethodPost, path: v1 + "/sandboxes/" + escape(id) + "/resume", idempotent: true}, nil)
}

// DeleteSandbox deletes a sandbox and its conversations' live state.
func (c *Client) DeleteSandbox(ctx context.Context, id string) error {
	return c.t.call(ctx, request{method: http.MethodDelete, path: v1 + "/sandboxes/" + escape(id), idempotent: true}, nil)
}

// SearchSandboxSpecs returns one page of the sandbox specs.
func (c *Client) SearchSandboxSpecs(ctx context.Context, f Filter) (v1wire.Page[v1wire.Spec], error) {
	var p v1wire.Page[v1wire.Spec]
	err := c.get(ctx, "/sandbox-specs/search", f, &p)
	return p, err
}

// GetSandboxSpecs returns the specs of ids in their order (nil: unknown).
func (c *Client) GetSandboxSpecs(ctx context.Context, specIDs ...string) ([]*v1wire.Spec, error) {
	var out []*v1wire.Spec
	err := c.get(ctx, "/sandbox-specs", ids("id", specIDs), &out)
	return out, err
}

// --- settings, secrets, users and keys ---

// GetSettings returns the user's settings.
func (c *Client) GetSettings(ctx context.Context) (v1wire.Settings, error) {
	var out v1wire.Settings
	err := c.get(ctx, "/settings", nil, &out)
	return out, err
}

// UpdateSettings applies a partial update of the user's settings and
// returns them.
func (c *Client) UpdateSettings(ctx context.Context, req *v1wire.SettingsRequest) (v1wire.Settings, error) {
	var out v1wire.Settings
	err := c.t.call(ctx, request{method: http.MethodPost, path: v1 + "/settings", body: req, idempotent: true}, &out)
	return out, err
}

// ListSecrets lists the user's stored secrets (never their values).
func (c *Client) ListSecrets(ctx context.Context) ([]v1wire.Secret, error) {
	var out v1wire.SecretList
	err := c.get(ctx, "/secrets", nil, &out)
	return out.Secrets, err
}

// CreateSecret stores a secret (ECONFLICT when the name exists).
func (c *Client) CreateSecret(ctx context.Context, req *v1wire.CreateSecretRequest) (v1wire.Secret, error) {
	var out v1wire.Secret
	err := c.t.call(ctx, request{method: http.MethodPost, path: v1 + "/secrets", body: req}, &out)
	return out, err
}

// GetSecret describes one secret.
func (c *Client) GetSecret(ctx context.Context, name string) (v1wire.Secret, error) {
	var out v1wire.Secret
	err := c.get(ctx, "/secrets/"+escape(name), nil, &out)
	return out, err
}

// UpdateSecret changes a secret's value or description.
func (c *Client) UpdateSecret(ctx context.Context, name string, req *v1wire.UpdateSecretRequest) (v1wire.Secret, error) {
	var out v1wire.Secret
	err := c.t.call(ctx, request{method: http.MethodPut, path: v1 + "/secrets/" + escape(name), body: req, idempotent: true}, &out)
	return out, err
}

// DeleteSecret deletes a secret.
func (c *Client) DeleteSecret(ctx context.Context, name string) error {
	return c.t.call(ctx, request{method: http.MethodDelete, path: v1 + "/secrets/" + escape(name), idempotent: true}, nil)
}

// CreateUser makes a user and its first API key (admins only). It is
// never retried.
func (c *Client) CreateUser(ctx context.Context, name string) (v1wire.NewUser, error) {
	var out v1wire.NewUser
	err := c.t.call(ctx, request{method: http.MethodPost, path: v1 + "/users", body: &v1wire.NameRequest{Name: name}}, &out)
	return out, err
}

// Me returns the calling user.
func (c *Client) Me(ctx context.Context) (v1wire.User, error) {
	var out v1wire.User
	err := c.get(ctx, "/users/me", nil, &out)
	return out, err
}

// CreateKey makes an API key of the calling user; its value is in the
// answer only. It is never retried.
func (c *Client) CreateKey(ctx context.Context, name string) (v1wire.NewKey, error) {
	var out v1wire.NewKey
	err := c.t.call(ctx, request{method: http.MethodPost, path: v1 + "/keys", body: &v1wire.NameRequest{Name: name}}, &out)
	return out, err
}

// ListKeys lists the calling user's keys (never their values).
func (c *Client) ListKeys(ctx context.Context) ([]v1wire.Key, error) {
	var out []v1wire.Key
	err := c.get(ctx, "/keys", nil, &out)
	return out, err
}

// DeleteKey revokes a key.
func (c *Client) DeleteKey(ctx context.Context, id string) error {
	return c.t.call(ctx, request{method: http.MethodDelete, path: v1 + "/keys/" + escape(id), idempotent: true}, nil)
}

// RevokeSessions ends every browser session of a user ("me": the caller's
// own; another user's: admins only) and returns how many it ended.
func (c *Client) RevokeSessions(ctx context.Context, userID string) (int, error) {
	var out v1wire.RevokedSessions
	err := c.t.call(ctx, request{method: http.MethodDelete, path: v1 + "/users/" + escape(userID) + "/sessions", idempotent: true}, &out)
	return out.Revoked, err
}

// Success is the answer of the routes that answer {"success": true}.
type Success = agentwire.Success

// pages yields the items of every page get returns, following
// next_page_id; f's own page_id is where it starts.
func pages[T any](f Filter, get func(url.Values) (v1wire.Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		q := url.Values{}
		for k, v := range f {
			q[k] = append([]string(nil), v...)
		}
		for {
			p, err := get(q)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range p.Items {
				if !yield(it, nil) {
					return
				}
			}
			if p.NextPageID == nil {
				return
			}
			q.Set("page_id", *p.NextPageID)
		}
	}
}
