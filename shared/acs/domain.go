// Package acs is the control plane's domain: conversations, sandboxes, start
// tasks, sandbox specs, users and API keys, their statuses and rules, the
// errors every layer maps to HTTP statuses, and the contract interfaces
// (Store, Queue, Runtime) that adapters implement. It imports nothing from
// this module, so the local server and the AWS functions share it unchanged.
package acs

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// SandboxStatus is the lifecycle state of a sandbox.
type SandboxStatus string

// The sandbox statuses of the spec.
const (
	SandboxStarting SandboxStatus = "STARTING"
	SandboxRunning  SandboxStatus = "RUNNING"
	SandboxPaused   SandboxStatus = "PAUSED"
	SandboxError    SandboxStatus = "ERROR"
	SandboxMissing  SandboxStatus = "MISSING"
)

// EnumValues lists the statuses.
func (SandboxStatus) EnumValues() []string {
	return []string{"STARTING", "RUNNING", "PAUSED", "ERROR", "MISSING"}
}

// ReadOnly reports whether conversations on a sandbox in this status are
// read-only (terminal statuses).
func (s SandboxStatus) ReadOnly() bool { return s == SandboxError || s == SandboxMissing }

// StartTaskStatus is the state of a start task.
type StartTaskStatus string

// The start task states, in order.
const (
	TaskWorking              StartTaskStatus = "WORKING"
	TaskWaitingForSandbox    StartTaskStatus = "WAITING_FOR_SANDBOX"
	TaskPreparingRepository  StartTaskStatus = "PREPARING_REPOSITORY"
	TaskRunningSetupScript   StartTaskStatus = "RUNNING_SETUP_SCRIPT"
	TaskSettingUpGitHooks    StartTaskStatus = "SETTING_UP_GIT_HOOKS"
	TaskSettingUpSkills      StartTaskStatus = "SETTING_UP_SKILLS"
	TaskStartingConversation StartTaskStatus = "STARTING_CONVERSATION"
	TaskReady                StartTaskStatus = "READY"
	TaskError                StartTaskStatus = "ERROR"
)

// Done reports whether the task reached READY or ERROR.
func (s StartTaskStatus) Done() bool { return s == TaskReady || s == TaskError }

// GroupingStrategy is the user's sandbox grouping setting.
type GroupingStrategy string

// The five grouping strategies.
const (
	NoGrouping          GroupingStrategy = "NO_GROUPING"
	GroupByNewest       GroupingStrategy = "GROUP_BY_NEWEST"
	LeastRecentlyUsed   GroupingStrategy = "LEAST_RECENTLY_USED"
	FewestConversations GroupingStrategy = "FEWEST_CONVERSATIONS"
	AddToAny            GroupingStrategy = "ADD_TO_ANY"
)

// EnumValues lists the strategies.
func (GroupingStrategy) EnumValues() []string {
	return []string{"NO_GROUPING", "GROUP_BY_NEWEST", "LEAST_RECENTLY_USED", "FEWEST_CONVERSATIONS", "ADD_TO_ANY"}
}

// User is an account. The admin user owns the installation's first key.
type User struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Admin     bool      `json:"admin"`
	CreatedAt time.Time `json:"created_at"`
}

// APIKey is a user's API key. Only its SHA-256 hash is stored.
type APIKey struct {
	ID        string    `json:"id"`
	UserID    string    `json:"user_id"`
	Name      string    `json:"name"`
	Hash      string    `json:"hash"`
	Prefix    string    `json:"prefix"` // first characters, to recognise a key
	CreatedAt time.Time `json:"created_at"`
}

// Sandbox is an execution environment owned by one user.
type Sandbox struct {
	ID      string        `json:"id"`
	OwnerID string        `json:"owner_id"`
	SpecID  string        `json:"spec_id"`
	Status  SandboxStatus `json:"status"`
	Detail  string        `json:"detail,omitempty"`
	// SessionKeyHash is the SHA-256 of the agent server's current session key.
	SessionKeyHash string `json:"session_key_hash,omitempty"`
	// AgentURL is the agent server's base URL while running.
	AgentURL   string `json:"agent_url,omitempty"`
	WorkingDir string `json:"working_dir,omitempty"`
	// Slots are the conversations placed on the sandbox (by conversation
	// id). A slot is reserved atomically before a conversation starts there
	// and released when it is deleted; reserving twice is a no-op, so a
	// redelivered placement never counts a conversation twice.
	Slots []string `json:"slots"`
	// CreatedByTask is the start task that created the sandbox, if any (so a
	// redelivered step recognises its own sandbox).
	CreatedByTask string    `json:"created_by_task,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	// LastUsedAt is the last start or message on the sandbox (placement's
	// "least recently used").
	LastUsedAt time.Time `json:"last_used_at"`
	// LastActivityAt is the last sign of work: a start, a message, events
	// from its agent server, a file read (the idle timeout's clock).
	LastActivityAt time.Time `json:"last_activity_at"`
	// PausedAt is when the sandbox was last paused (the cleanup clock).
	PausedAt *time.Time `json:"paused_at,omitempty"`
	// ArchiveKey names the internal archive of the workspace taken at
	// cleanup (never served to users).
	ArchiveKey string `json:"archive_key,omitempty"`
	// Tombstones are conversations deleted while the sandbox could not be
	// told (paused): their reports are ignored, and they are deleted on the
	// agent server when it is next ready.
	Tombstones []string `json:"tombstones,omitempty"`
	// PendingFlush is set when messages were queued for its conversations
	// while it could not take them; the next time it is ready they are
	// delivered.
	PendingFlush bool `json:"pending_flush,omitempty"`
	// WarmPool is "hit" when the runtime gave the sandbox a pre-started
	// pod from its warm pool, "miss" when it had none ready ("" without a
	// pool).
	WarmPool string `json:"warm_pool,omitempty"`
}

// IsTombstone reports whether conversation id was deleted.
func (s *Sandbox) IsTombstone(id string) bool {
	for _, x := range s.Tombstones {
		if x == id {
			return true
		}
	}
	return false
}

// ConversationCount is how many conversations hold a slot.
func (s *Sandbox) ConversationCount() int { return len(s.Slots) }

// HasSlot reports whether conversation id holds a slot.
func (s *Sandbox) HasSlot(id string) bool {
	for _, x := range s.Slots {
		if x == id {
			return true
		}
	}
	return false
}

// Reserve gives conversation id a slot. It is a no-op when id already holds
// one; otherwise max > 0 caps the count (ErrCapacity when full) and the
// sandbox must be able to host a new conversation (ErrConflict otherwise).
func (s *Sandbox) Reserve(id string, max int) error {
	if s.HasSlot(id) {
		return nil
	}
	if s.Status.ReadOnly() {
		return fmt.Errorf("sandbox %s is %s: %w", s.ID, s.Status, ErrConflict)
	}
	if max > 0 && len(s.Slots) >= max {
		return fmt.Errorf("sandbox %s has %d conversations (the limit): %w", s.ID, len(s.Slots), ErrCapacity)
	}
	s.Slots = append(s.Slots, id)
	return nil
}

// Release frees conversation id's slot (no-op without one).
func (s *Sandbox) Release(id string) {
	for i, x := range s.Slots {
		if x == id {
			s.Slots = append(s.Slots[:i:i], s.Slots[i+1:]...)
			return
		}
	}
}

// Conversation is a conversation record. It has no JSON form of its own:
// the V1 API shows it as v1wire.Conversation and stores keep it as
// storerecord.Conversation.
type Conversation struct {
	ID                   string
	OwnerID              string
	SandboxID            string
	SelectedRepository   *string
	SelectedBranch       *string
	GitProvider          *string
	Title                *string
	Trigger              *string
	PRNumber             []int
	LLMModel             *string
	ParentConversationID *string
	Public               *bool
	Tags                 map[string]string
	WorkingDir           string
	// SubConversationIDs are the conversations started with this one as
	// their parent.
	SubConversationIDs []string
	// ProjectDir is where the repository was cloned (WorkingDir without
	// one): the root of file, git, skills and hooks reads.
	ProjectDir string
	// TitleAt is when the title was last set: the control plane's time of
	// the user's rename, or the time of the agent server's report that
	// set it. TitlePending is set by the user's rename until a report
	// carries that title; until then reports do not change the title, and
	// afterwards only reports newer than TitleAt do (ApplyReportedTitle).
	TitleAt      time.Time
	TitlePending bool
	// Delivered are the user messages the control plane delivered to the
	// agent server (oldest first, at most MaxDelivered): the events
	// webhook stores a user message as the user's only when it matches one.
	Delivered []DeliveredMessage
	// RateLimitedUntil is set while the agent backs off an LLM rate limit;
	// AgentStateAt is when the agent state it comes from was reported
	// (older reports are ignored).
	RateLimitedUntil *time.Time
	AgentStateAt     time.Time
	// ExecutionStatus is the agent's status as last reported, and
	// ExecutionStatusAt when it was reported (older reports are ignored).
	ExecutionStatus   string
	ExecutionStatusAt time.Time
	// Metrics are the agent's metrics as last reported, and MetricsAt
	// when they were reported (older reports are ignored).
	Metrics     json.RawMessage
	MetricsAt   time.Time
	StartTaskID string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// DeliveredMessage is a user message the control plane delivered: the digest of
// its content and, once the agent server reported it, the id of that event.
type DeliveredMessage struct {
	Digest  string
	EventID string
}

// MaxDelivered bounds Conversation.Delivered; the oldest go first.
const MaxDelivered = 100

// RecordDelivery notes a user message about to be delivered.
func (c *Conversation) RecordDelivery(digest string) {
	if len(c.Delivered) >= MaxDelivered {
		c.Delivered = append(c.Delivered[:0:0], c.Delivered[len(c.Delivered)-MaxDelivered+1:]...)
	}
	c.Delivered = append(c.Delivered, DeliveredMessage{Digest: digest})
}

// ClaimDelivery reports whether the user message event eventID with this
// content digest is one the control plane delivered: either it was
// claimed before by the same event (a redelivered report), or an unclaimed
// delivery with the digest exists, which it then claims. Each delivery
// vouches for one event.
func (c *Conversation) ClaimDelivery(digest, eventID string) bool {
	for _, d := range c.Delivered {
		if d.EventID == eventID && d.Digest == digest {
			return true
		}
	}
	for i, d := range c.Delivered {
		if d.EventID == "" && d.Digest == digest {
			c.Delivered[i].EventID = eventID
			return true
		}
	}
	return false
}

// RenameByUser sets the title the user chose at now: reports the agent
// server sent before it learnt that title no longer change it.
func (c *Conversation) RenameByUser(title string, now time.Time) {
	c.Title, c.TitleAt, c.TitlePending = &title, now, true
}

// ApplyReportedTitle applies a title an agent server reported at at. While
// the user's rename is pending, only a report carrying it counts (it ends
// the wait; reports made before the agent server had it carry the old
// title); otherwise a report changes the title only when newer than the
// last title set.
func (c *Conversation) ApplyReportedTitle(title string, at time.Time) {
	if c.TitlePending {
		if c.Title != nil && *c.Title == title {
			c.TitlePending = false
			c.TitleAt = at
		}
		return
	}
	if !at.After(c.TitleAt) {
		return
	}
	if c.Title == nil || *c.Title != title {
		c.Title = &title
	}
	c.TitleAt = at
}

// StepTiming records when a start task entered a status.
type StepTiming struct {
	Status    StartTaskStatus `json:"status"`
	StartedAt time.Time       `json:"started_at"`
	Detail    string          `json:"detail,omitempty"`
}

// StartTask is the asynchronous start of a conversation. Like
// Conversation, it has no JSON form of its own (v1wire.StartTask on the
// wire, storerecord.StartTask in stores).
type StartTask struct {
	ID                string
	OwnerID           string
	Status            StartTaskStatus
	Detail            *string
	AppConversationID *string
	SandboxID         *string
	AgentServerURL    *string
	// Request is the start request as shown to users (secrets masked).
	Request json.RawMessage
	// ConversationID is chosen when the task is created, so every step and
	// redelivery works on the same conversation.
	ConversationID string
	// SealedSecrets are the per-conversation secret values, sealed (see
	// Sealer); never shown.
	SealedSecrets map[string]string
	// Placement says which strategy placed the conversation and why.
	Placement string
	// OwnWorkDir is set when the conversation works in its own
	// subdirectory of the sandbox's working directory (grouping).
	OwnWorkDir bool
	// WorkDir and ProjectDir are the conversation's working directory and
	// where its repository is (set while preparing the repository).
	WorkDir    string
	ProjectDir string
	// Command is the agent server's bash command id of a step in progress
	// (clone, setup script), polled by later deliveries.
	Command string
	// Project is what preparing the repository found in the project
	// directory, so that the steps after it skip the agent server when
	// there is nothing to do; nil when not known.
	Project *ProjectFacts
	Steps   []StepTiming
	// Attempts counts deliveries of the current step (for backoff and limits).
	Attempts  int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ProjectFacts are what a start found in the project directory it
// prepared.
type ProjectFacts struct {
	// SetupScript: .openhands/setup.sh exists.
	SetupScript bool `json:"setup_script,omitempty"`
	// PreCommit: .openhands/pre-commit.sh exists (before any setup script
	// ran, which may add it).
	PreCommit bool `json:"pre_commit,omitempty"`
}

// Advance moves the task to status at now and records the step.
func (t *StartTask) Advance(status StartTaskStatus, now time.Time) {
	t.Status = status
	t.Attempts = 0
	t.UpdatedAt = now
	t.Steps = append(t.Steps, StepTiming{Status: status, StartedAt: now})
}

// Fail moves the task to ERROR with a detail a user can act on.
func (t *StartTask) Fail(detail string, now time.Time) {
	t.Detail = &detail
	t.Advance(TaskError, now)
	t.Steps[len(t.Steps)-1].Detail = detail
}

// SandboxSpec is a template for sandboxes.
type SandboxSpec struct {
	ID         string            `json:"id"`
	Command    []string          `json:"command"`
	CreatedAt  time.Time         `json:"created_at"`
	InitialEnv map[string]string `json:"initial_env"`
	WorkingDir string            `json:"working_dir"`
}

// NewID returns a random 32-character hex id (a UUID v4 without dashes).
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return hex.EncodeToString(b[:])
}

// NormalizeID accepts a UUID with or without dashes (any case) and returns
// its 32-character lower-case hex form.
func NormalizeID(s string) (string, error) {
	h := strings.ToLower(strings.ReplaceAll(s, "-", ""))
	if len(h) != 32 || (len(s) != 32 && len(s) != 36) {
		return "", fmt.Errorf("%w: %q is not a UUID", ErrInvalid, truncate(s, 64))
	}
	if _, err := hex.DecodeString(h); err != nil {
		return "", fmt.Errorf("%w: %q is not a UUID", ErrInvalid, truncate(s, 64))
	}
	if len(s) == 36 && (s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-') {
		return "", fmt.Errorf("%w: %q is not a UUID", ErrInvalid, truncate(s, 64))
	}
	return h, nil
}

// Dashed returns the 8-4-4-4-12 form of a 32-character hex id.
func Dashed(h string) string {
	if len(h) != 32 {
		return h
	}
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewSecret returns a random base62 string of n characters (for API and
// session keys).
func NewSecret(n int) string {
	out := make([]byte, n)
	max := big.NewInt(int64(len(base62)))
	for i := range out {
		v, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic(err)
		}
		out[i] = base62[v.Int64()]
	}
	return string(out)
}

// HashKey returns the hex SHA-256 of an API or session key.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
