package acs

import (
	"context"
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
	TitleContains              string
	CreatedGTE, CreatedLT      *time.Time
	UpdatedGTE, UpdatedLT      *time.Time
	SandboxID                  string
	IncludeSubConversations    bool
	ExcludeConversationsBefore *time.Time
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

// Store keeps the control plane's records. Every method is safe for
// concurrent use and scoped only by the ids it is given: ownership checks
// belong to the caller. Errors wrap ErrNotFound, ErrConflict, ErrInvalid (bad
// page token) or ErrUnavailable (throttled or down; safe to retry).
//
// Update methods run fn on the current record and store the result
// atomically: concurrent updates never lose a write. fn may run more than
// once (optimistic adapters retry on contention) and must only modify the
// record it is given; if fn returns an error nothing is stored and the error
// is returned.
type Store interface {
	// CreateUser stores a new user; ErrConflict when the id exists.
	CreateUser(ctx context.Context, u User) error
	GetUser(ctx context.Context, id string) (User, error)
	// CreateAPIKey stores a key; ErrConflict when its id or hash exists.
	CreateAPIKey(ctx context.Context, k APIKey) error
	// GetAPIKeyByHash finds a key by the SHA-256 of its value.
	GetAPIKeyByHash(ctx context.Context, hash string) (APIKey, error)
	ListAPIKeys(ctx context.Context, userID string) ([]APIKey, error)
	// DeleteAPIKey revokes a key of the user; ErrNotFound otherwise.
	DeleteAPIKey(ctx context.Context, userID, id string) error

	// CreateStartTask stores a new task; ErrConflict when the id exists.
	CreateStartTask(ctx context.Context, t StartTask) error
	GetStartTask(ctx context.Context, id string) (StartTask, error)
	UpdateStartTask(ctx context.Context, id string, fn func(*StartTask) error) (StartTask, error)
	// ListStartTasks lists a user's tasks, newest first.
	ListStartTasks(ctx context.Context, ownerID string, opts ListOptions) (Page[StartTask], error)

	// CreateSandbox stores a new sandbox; ErrConflict when the id exists.
	CreateSandbox(ctx context.Context, s Sandbox) error
	GetSandbox(ctx context.Context, id string) (Sandbox, error)
	// GetSandboxBySessionKeyHash finds the sandbox whose current session key
	// hashes to hash.
	GetSandboxBySessionKeyHash(ctx context.Context, hash string) (Sandbox, error)
	UpdateSandbox(ctx context.Context, id string, fn func(*Sandbox) error) (Sandbox, error)
	// ListSandboxes lists a user's sandboxes, newest first.
	ListSandboxes(ctx context.Context, ownerID string, opts ListOptions) (Page[Sandbox], error)
	DeleteSandbox(ctx context.Context, id string) error

	// CreateConversation stores a new conversation; ErrConflict when the id
	// exists.
	CreateConversation(ctx context.Context, c Conversation) error
	GetConversation(ctx context.Context, id string) (Conversation, error)
	UpdateConversation(ctx context.Context, id string, fn func(*Conversation) error) (Conversation, error)
	// SearchConversations lists a user's conversations matching f, newest
	// first.
	SearchConversations(ctx context.Context, ownerID string, f ConversationFilter, opts ListOptions) (Page[Conversation], error)
	// ListConversationsBySandbox lists the conversations placed on a sandbox.
	ListConversationsBySandbox(ctx context.Context, sandboxID string) ([]Conversation, error)
	DeleteConversation(ctx context.Context, id string) error

	// PutEvents stores a conversation's events, each at most once: an event
	// whose id is already stored is skipped. It returns how many were new.
	PutEvents(ctx context.Context, conversationID string, evs []StoredEvent) (int, error)
	// SearchEvents pages a conversation's events in timestamp order (ties by
	// id); ErrInvalid for a page token that is not one this store issued.
	SearchEvents(ctx context.Context, conversationID string, q EventQuery) (Page[[]byte], error)
	CountEvents(ctx context.Context, conversationID string, f EventFilter) (int, error)
	// GetEvents returns events by id, nil for the missing ones, in order.
	GetEvents(ctx context.Context, conversationID string, ids []string) ([][]byte, error)
	// DeleteEvents removes all of a conversation's events.
	DeleteEvents(ctx context.Context, conversationID string) error
}

// Message is a queued start-task step.
type Message struct {
	TaskID string `json:"task_id"`
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
}
