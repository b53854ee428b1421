package acs

import (
	"context"
	"io"
	"time"
)

// Page is one page of a listing. Next is an opaque token for the next page,
// "" on the last one.
type Page[T any] struct {
	Items []T
	Next  string
}

// ListOptions page a listing. Limit is 1..100 (adapters clamp it).
type ListOptions struct {
	PageToken string
	Limit     int
}

// ConversationFilter selects a user's conversations.
type ConversationFilter struct {
	TitleContains           string
	CreatedGTE, CreatedLT   *time.Time
	UpdatedGTE, UpdatedLT   *time.Time
	SandboxID               string
	IncludeSubConversations bool
}

// StoredEvent is an event as the control plane stores it: the agent server's
// canonical JSON plus the fields searches need.
type StoredEvent struct {
	ID        string
	Kind      string
	Source    string
	Timestamp time.Time
	// Text is the lower-cased text the "body" filter matches ("" for events
	// other than messages).
	Text string
	JSON []byte
}

// EventFilter selects events. Zero fields match everything.
type EventFilter struct {
	Kind         string
	Source       string
	Body         string // case-insensitive substring of Text
	TimestampGTE *time.Time
	TimestampLT  *time.Time
}

// EventQuery is an event search.
type EventQuery struct {
	EventFilter
	PageToken string
	Limit     int
	Desc      bool
}

// The store contracts. The control plane's records are kept by one
// contract per kind of record; a service takes only those it uses, and one
// adapter type (boltstore, dynamostore) implements them all (Store).
// Conformance suites for each are in shared/storetest.
//
// Common to every contract: methods are safe for concurrent use and scoped
// only by the ids they are given (ownership checks belong to the caller).
// Errors wrap the kinds each method names (ErrNotFound, ErrConflict,
// ErrInvalid, ErrCapacity); any method may also return ErrUnavailable
// (throttled or down: safe to retry; ErrStorageFull, which wraps it, when a
// write found no space and stored nothing) and ErrInvalid for an id or
// value the adapter cannot store.
//
// Update methods run fn on the current record and store the result
// atomically: concurrent updates never lose a write. fn may run more than
// once (optimistic adapters retry on contention) and must only modify the
// record it is given; if fn returns an error nothing is stored and that
// error is returned. The record's id, owner and creation time are
// not updatable (changes fn makes to them are dropped).
//
// Listings page with ListOptions (Limit 1..100; any other value means 100)
// and return ErrInvalid for a page token the same listing did not issue.

// UserStore keeps accounts and their API keys.
type UserStore interface {
	// CreateUser stores a new user; ErrConflict when the id exists.
	CreateUser(ctx context.Context, u User) error
	// GetUser returns a user; ErrNotFound when absent.
	GetUser(ctx context.Context, id string) (User, error)
	// CreateAPIKey stores a key; ErrConflict when its id or hash exists.
	CreateAPIKey(ctx context.Context, k APIKey) error
	// GetAPIKeyByHash finds a key by the SHA-256 of its value (HashKey);
	// ErrNotFound when none has it.
	GetAPIKeyByHash(ctx context.Context, hash string) (APIKey, error)
	// ListAPIKeys lists a user's keys (none: an empty list, no error).
	ListAPIKeys(ctx context.Context, userID string) ([]APIKey, error)
	// DeleteAPIKey revokes a key of the user; ErrNotFound when absent or
	// another user's.
	DeleteAPIKey(ctx context.Context, userID, id string) error
}

// StartTaskStore keeps start tasks.
type StartTaskStore interface {
	// CreateStartTask stores a new task; ErrConflict when the id exists.
	CreateStartTask(ctx context.Context, t StartTask) error
	// GetStartTask returns a task; ErrNotFound when absent.
	GetStartTask(ctx context.Context, id string) (StartTask, error)
	// UpdateStartTask updates a task (see the update contract above);
	// ErrNotFound when absent.
	UpdateStartTask(ctx context.Context, id string, fn func(*StartTask) error) (StartTask, error)
	// ListStartTasks lists a user's tasks, newest first.
	ListStartTasks(ctx context.Context, ownerID string, opts ListOptions) (Page[StartTask], error)
	// SearchStartTasks lists a user's tasks matching f in the given order
	// (default CREATED_AT_DESC); ErrInvalid for an unknown order or a
	// foreign page token.
	SearchStartTasks(ctx context.Context, ownerID string, f StartTaskFilter, order StartTaskSort, opts ListOptions) (Page[StartTask], error)
	// CountStartTasks counts a user's tasks matching f.
	CountStartTasks(ctx context.Context, ownerID string, f StartTaskFilter) (int, error)
	// DeleteStartTask removes a task; ErrNotFound when absent.
	DeleteStartTask(ctx context.Context, id string) error
	// ListUnfinishedStartTasks lists every user's tasks that are neither
	// READY nor ERROR and were last updated before the given time, least
	// recently updated first, at most limit (clamped to 1..100): the
	// reconciler expires those whose worker stopped advancing them.
	ListUnfinishedStartTasks(ctx context.Context, updatedBefore time.Time, limit int) ([]StartTask, error)
}

// StartTaskWatcher is a StartTaskStore that tells its own process when a
// start task is written, so a reader waiting for a task's next state (the
// stream-start route) wakes as it is stored instead of polling. A store
// that several processes share (DynamoDB) does not implement it; its
// readers poll.
type StartTaskWatcher interface {
	// WatchStartTask returns changed, closed once a write of task id (any
	// update of it, or its deletion) that commits after the call has
	// committed, and stop, which releases the watch (changed may then stay
	// open). A write committed before the call does not close changed, so
	// a reader watches first and reads after. A failed write closes
	// nothing.
	WatchStartTask(id string) (changed <-chan struct{}, stop func())
}

// SandboxStore keeps sandbox records and finds them by session key.
type SandboxStore interface {
	// CreateSandbox stores a new sandbox; ErrConflict when the id exists.
	CreateSandbox(ctx context.Context, s Sandbox) error
	// GetSandbox returns a sandbox; ErrNotFound when absent.
	GetSandbox(ctx context.Context, id string) (Sandbox, error)
	// GetSandboxBySessionKeyHash finds the sandbox whose current session
	// key hashes to hash; ErrNotFound when none does (or hash is "").
	GetSandboxBySessionKeyHash(ctx context.Context, hash string) (Sandbox, error)
	// UpdateSandbox updates a sandbox (see the update contract above), so a
	// slot reserved in fn (Sandbox.Reserve) never overfills it; the
	// session-key lookup follows a changed SessionKeyHash. ErrNotFound when
	// absent.
	UpdateSandbox(ctx context.Context, id string, fn func(*Sandbox) error) (Sandbox, error)
	// ListSandboxes lists a user's sandboxes, newest first.
	ListSandboxes(ctx context.Context, ownerID string, opts ListOptions) (Page[Sandbox], error)
	// ListAllSandboxes lists every user's sandboxes (the reconciler), in a
	// stable order.
	ListAllSandboxes(ctx context.Context, opts ListOptions) (Page[Sandbox], error)
	// DeleteSandbox removes a sandbox; ErrNotFound when absent.
	DeleteSandbox(ctx context.Context, id string) error
}

// ConversationStore keeps conversation records.
type ConversationStore interface {
	// CreateConversation stores a new conversation; ErrConflict when the
	// id exists.
	CreateConversation(ctx context.Context, c Conversation) error
	// GetConversation returns a conversation; ErrNotFound when absent.
	GetConversation(ctx context.Context, id string) (Conversation, error)
	// UpdateConversation updates a conversation (see the update contract
	// above); the owner's searches and counts follow it. ErrNotFound when
	// absent.
	UpdateConversation(ctx context.Context, id string, fn func(*Conversation) error) (Conversation, error)
	// SearchConversations lists a user's conversations matching f, newest
	// first.
	SearchConversations(ctx context.Context, ownerID string, f ConversationFilter, opts ListOptions) (Page[Conversation], error)
	// CountConversations counts a user's conversations matching f.
	CountConversations(ctx context.Context, ownerID string, f ConversationFilter) (int, error)
	// ListConversationsBySandbox lists the conversations placed on a
	// sandbox, in no particular order.
	ListConversationsBySandbox(ctx context.Context, sandboxID string) ([]Conversation, error)
	// DeleteConversation removes a conversation (not its events);
	// ErrNotFound when absent.
	DeleteConversation(ctx context.Context, id string) error
}

// EventStore keeps each conversation's events: the agent server's JSON,
// returned byte for byte, and the fields searches need.
type EventStore interface {
	// PutEvents stores a conversation's events, each at most once: an event
	// whose id is already stored is skipped. It returns how many were new.
	// ErrInvalid for an event without an id.
	PutEvents(ctx context.Context, conversationID string, evs []StoredEvent) (int, error)
	// SearchEvents pages a conversation's events in timestamp order (ties by
	// id); ErrInvalid for a page token that is not one this store issued.
	// With a Body filter, only events with Text can match, and a page
	// examines a bounded number of them (each adapter documents its
	// budget), so its cost does not grow with the conversation: a page may
	// then end with fewer than Limit items, or none, and a Next token.
	// Following Next until it is "" serves every match once, in order.
	SearchEvents(ctx context.Context, conversationID string, q EventQuery) (Page[[]byte], error)
	// CountEvents counts a conversation's events matching f (exactly; with
	// a Body filter adapters read only the events with Text).
	CountEvents(ctx context.Context, conversationID string, f EventFilter) (int, error)
	// GetEvents returns events by id, nil for the missing ones, in order.
	GetEvents(ctx context.Context, conversationID string, ids []string) ([][]byte, error)
	// DeleteEvents removes all of a conversation's events (none stored is
	// not an error).
	DeleteEvents(ctx context.Context, conversationID string) error
}

// QuotaStore keeps each user's quota record: the claims on the running cap
// and the placement lock.
type QuotaStore interface {
	// UpdateQuota runs fn on the user's quota record (an empty one, with a
	// non-nil Claims map, when none is stored) and stores the result
	// atomically, like the other updates.
	UpdateQuota(ctx context.Context, userID string, fn func(*Quota) error) (Quota, error)
}

// SettingsStore keeps each user's settings.
type SettingsStore interface {
	// GetSettings returns a user's settings; ErrNotFound when never saved.
	GetSettings(ctx context.Context, userID string) (Settings, error)
	// PutSettings creates or replaces a user's settings; ErrInvalid
	// without a user id.
	PutSettings(ctx context.Context, s Settings) error
}

// SecretStore keeps each user's secrets, by name.
type SecretStore interface {
	// PutSecret creates or replaces a user's secret by name (the whole
	// record: callers keep CreatedAt when replacing); ErrInvalid without
	// an owner or a name.
	PutSecret(ctx context.Context, s Secret) error
	// GetSecret returns a user's secret; ErrNotFound when absent.
	GetSecret(ctx context.Context, ownerID, name string) (Secret, error)
	// ListSecrets lists a user's secrets by name.
	ListSecrets(ctx context.Context, ownerID string) ([]Secret, error)
	// DeleteSecret removes a user's secret; ErrNotFound when absent.
	DeleteSecret(ctx context.Context, ownerID, name string) error
}

// PendingMessageStore keeps the messages queued for conversations that
// cannot take them yet, in queues by key (PendingMessage.Key).
type PendingMessageStore interface {
	// AddPendingMessage queues m under m.Key and returns its 1-based
	// position; ErrCapacity when max (> 0) messages are already queued
	// there, ErrInvalid without a key or an id. Concurrent adds never
	// exceed max; adding an id already queued returns its position.
	AddPendingMessage(ctx context.Context, m PendingMessage, max int) (int, error)
	// ListPendingMessages returns the messages queued under key in the
	// order they were added.
	ListPendingMessages(ctx context.Context, key string) ([]PendingMessage, error)
	// DeletePendingMessage removes one queued message (absent is not an
	// error).
	DeletePendingMessage(ctx context.Context, key, id string) error
}

// Store is every store contract: what one adapter implements, and what a
// caller holds until it takes only the contracts it uses.
type Store interface {
	UserStore
	StartTaskStore
	SandboxStore
	ConversationStore
	EventStore
	QuotaStore
	SettingsStore
	SecretStore
	PendingMessageStore
	SessionStore
	IdentityStore
	StartWrites
}

// StartWrites stores a start task together with another record in one
// atomic write, so that a start's step costs one durable write.
type StartWrites interface {
	// UpdateStartTaskAndSandbox is UpdateSandbox(sandboxID, sandboxFn)
	// and UpdateStartTask(id, fn) as one atomic write: both are stored or
	// neither is. ErrNotFound when either is absent; an error of either
	// function is returned as it is (nothing stored). A slot reserved in
	// sandboxFn never overfills the sandbox, as with UpdateSandbox.
	UpdateStartTaskAndSandbox(ctx context.Context, id string, fn func(*StartTask) error, sandboxID string, sandboxFn func(*Sandbox) error) (StartTask, Sandbox, error)
	// CreateStartTaskAndUpdateSandbox is CreateStartTask(t) and
	// UpdateSandbox(sandboxID, sandboxFn) as one atomic write: a start
	// placed as it is submitted. ErrConflict when a task with t's id
	// exists, ErrNotFound when the sandbox is absent; an error of
	// sandboxFn is returned as it is (nothing stored). A slot reserved in
	// sandboxFn never overfills the sandbox, as with UpdateSandbox.
	CreateStartTaskAndUpdateSandbox(ctx context.Context, t StartTask, sandboxID string, sandboxFn func(*Sandbox) error) (Sandbox, error)
	// UpdateStartTaskCreatingConversation is UpdateStartTask(id, fn) and
	// CreateConversation(c) as one atomic write: both are stored or
	// neither is. ErrNotFound when the task is absent and ErrConflict when
	// c's id exists (nothing stored); an error of fn is returned as it is
	// (nothing stored).
	UpdateStartTaskCreatingConversation(ctx context.Context, id string, fn func(*StartTask) error, c Conversation) (StartTask, error)
}

// Blobs keeps large opaque objects: workspace archives and transcripts. Keys
// are slash-separated paths. Methods are safe for concurrent use.
type Blobs interface {
	// Put stores the object, replacing any previous one, once r is fully
	// read; a failed Put leaves no partial object.
	Put(ctx context.Context, key string, r io.Reader) error
	// Get opens an object; ErrNotFound when absent.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes an object (absent is not an error).
	Delete(ctx context.Context, key string) error
	// List returns the keys starting with prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
}

// Sealer encrypts values at rest (stored secrets, LLM keys, start-task
// secrets). Open fails for a value not sealed with the same key.
type Sealer interface {
	Seal(plain string) (string, error)
	Open(sealed string) (string, error)
}

// Message is a queued start-task step.
type Message struct {
	TaskID string `json:"task_id"`
	// Step is the task's status when the message was sent (optional): a
	// redelivery that finds the task past it knows the worker made
	// progress before it died.
	Step StartTaskStatus `json:"step,omitempty"`
}

// Delivery is a received message.
type Delivery struct {
	Message
	// Receipt identifies this delivery for Delete and Delay.
	Receipt string
	// ReceiveCount counts deliveries of this message, this one included.
	ReceiveCount int
}

// Queue carries start-task steps. Delivery is at least once: a received
// message that is neither deleted nor delayed before its visibility timeout
// is delivered again.
type Queue interface {
	// Send enqueues m, first visible after delay.
	Send(ctx context.Context, m Message, delay time.Duration) error
	// Receive returns up to max visible messages, waiting up to wait for the
	// first; each stays invisible for visibility.
	Receive(ctx context.Context, max int, wait, visibility time.Duration) ([]Delivery, error)
	// Delete acknowledges a delivery. Deleting twice is not an error.
	Delete(ctx context.Context, receipt string) error
	// Delay makes a delivered message visible again after d (a visibility
	// change): the way a step is retried or polled later.
	Delay(ctx context.Context, receipt string, d time.Duration) error
}

// RuntimeStatus is what a runtime reports about a sandbox.
type RuntimeStatus struct {
	Status SandboxStatus
	// AgentURL is the agent server's base URL (when running).
	AgentURL string
	// SessionKey is the agent server's current session key (when running).
	SessionKey string
	WorkingDir string
	Detail     string
	// WarmPool is "hit" when the sandbox was given a pre-started runtime
	// from a warm pool, "miss" when its spec has a pool but none was
	// available, and "" without a pool.
	WarmPool string
}

// WarmPool is implemented by runtimes that keep pre-started, unclaimed
// sandboxes per spec (Kubernetes). Fill brings each spec's pool to its
// configured size, replacing failed or outdated members.
type WarmPool interface {
	Fill(ctx context.Context, specs []SandboxSpec) (PoolReport, error)
}

// PoolReport says what a Fill changed.
type PoolReport struct {
	Created int `json:"created"`
	Removed int `json:"removed"`
	Warm    int `json:"warm"`
}

// StartRequest asks a runtime for a sandbox.
type StartRequest struct {
	SandboxID  string
	OwnerID    string
	Spec       SandboxSpec
	SessionKey string
	Env        map[string]string
}

// Runtime runs sandboxes (processes locally, pods on Kubernetes). Methods are
// safe for concurrent use.
type Runtime interface {
	// Start creates the sandbox's compute and returns its status (usually
	// STARTING). Starting a sandbox that exists returns its current status
	// and keeps its session key, so retries never create a second one.
	Start(ctx context.Context, req StartRequest) (RuntimeStatus, error)
	// Status reports a sandbox; an unknown one is MISSING (not an error).
	Status(ctx context.Context, id string) (RuntimeStatus, error)
	// Pause releases the sandbox's compute and keeps its workspace.
	// ErrNotFound for an unknown sandbox.
	Pause(ctx context.Context, id string) error
	// Resume restarts a paused sandbox with a new session key.
	Resume(ctx context.Context, id, sessionKey string, env map[string]string) (RuntimeStatus, error)
	// Delete removes the sandbox and its workspace. Deleting an unknown
	// sandbox is not an error.
	Delete(ctx context.Context, id string) error
	// Archive writes a gzip-compressed tar of the sandbox's workspace to w
	// (running or paused). ErrNotFound for an unknown sandbox.
	Archive(ctx context.Context, id string, w io.Writer) error
}
