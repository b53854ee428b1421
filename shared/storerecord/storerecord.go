// Package storerecord is the persisted JSON format of the control plane's
// records: one record type per domain type, with the JSON names the stores
// have always written (bbolt values, the "d" attribute of DynamoDB items).
// The domain types' JSON tags are the API's wire format; they are not read
// here, so renaming or retagging a domain field cannot change what is
// stored or make stored data unreadable. A domain field added or renamed
// without its record field fails to compile (the flat records convert
// with a type conversion) or fails this package's round-trip test.
//
// Changing a record's JSON names changes the stored format: add a field
// with a new name instead, and keep reading the old one.
package storerecord

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// User is the stored acs.User.
type User struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Admin     bool      `json:"admin"`
	CreatedAt time.Time `json:"created_at"`
}

// APIKey is the stored acs.APIKey.
type APIKey struct {
	ID        string    `json:"id"`
	UserID    string    `json:"user_id"`
	Name      string    `json:"name"`
	Hash      string    `json:"hash"`
	Prefix    string    `json:"prefix"`
	CreatedAt time.Time `json:"created_at"`
}

// BrowserSession is the stored acs.BrowserSession.
type BrowserSession struct {
	Hash      string           `json:"hash"`
	UserID    string           `json:"user_id"`
	Method    acs.SignInMethod `json:"method"`
	KeyHash   string           `json:"key_hash,omitempty"`
	CreatedAt time.Time        `json:"created_at"`
	ExpiresAt time.Time        `json:"expires_at"`
}

// SignInToken is the stored acs.SignInToken.
type SignInToken struct {
	Hash      string    `json:"hash"`
	UserID    string    `json:"user_id"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Identity is the stored acs.Identity.
type Identity struct {
	Issuer    string    `json:"issuer"`
	Subject   string    `json:"subject"`
	UserID    string    `json:"user_id"`
	Email     string    `json:"email,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Sandbox is the stored acs.Sandbox.
type Sandbox struct {
	ID             string            `json:"id"`
	OwnerID        string            `json:"owner_id"`
	SpecID         string            `json:"spec_id"`
	Status         acs.SandboxStatus `json:"status"`
	Detail         string            `json:"detail,omitempty"`
	SessionKeyHash string            `json:"session_key_hash,omitempty"`
	AgentURL       string            `json:"agent_url,omitempty"`
	WorkingDir     string            `json:"working_dir,omitempty"`
	Slots          []string          `json:"slots"`
	CreatedByTask  string            `json:"created_by_task,omitempty"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"updated_at"`
	LastUsedAt     time.Time         `json:"last_used_at"`
	LastActivityAt time.Time         `json:"last_activity_at"`
	PausedAt       *time.Time        `json:"paused_at,omitempty"`
	ArchiveKey     string            `json:"archive_key,omitempty"`
	Tombstones     []string          `json:"tombstones,omitempty"`
	PendingFlush   bool              `json:"pending_flush,omitempty"`
	WarmPool       string            `json:"warm_pool,omitempty"`
}

// Conversation is the stored acs.Conversation.
type Conversation struct {
	ID                   string            `json:"id"`
	OwnerID              string            `json:"owner_id"`
	SandboxID            string            `json:"sandbox_id"`
	SelectedRepository   *string           `json:"selected_repository,omitempty"`
	SelectedBranch       *string           `json:"selected_branch,omitempty"`
	GitProvider          *string           `json:"git_provider,omitempty"`
	Title                *string           `json:"title,omitempty"`
	Trigger              *string           `json:"trigger,omitempty"`
	PRNumber             []int             `json:"pr_number,omitempty"`
	LLMModel             *string           `json:"llm_model,omitempty"`
	ParentConversationID *string           `json:"parent_conversation_id,omitempty"`
	Public               *bool             `json:"public,omitempty"`
	Tags                 map[string]string `json:"tags,omitempty"`
	WorkingDir           string            `json:"working_dir,omitempty"`
	SubConversationIDs   []string          `json:"sub_conversation_ids,omitempty"`
	ProjectDir           string            `json:"project_dir,omitempty"`
	TitleAt              time.Time         `json:"title_at"`
	TitlePending         bool              `json:"title_pending,omitempty"`
	Delivered            []Delivered       `json:"delivered,omitempty"`
	RateLimitedUntil     *time.Time        `json:"rate_limited_until,omitempty"`
	AgentStateAt         time.Time         `json:"agent_state_at"`
	ExecutionStatus      string            `json:"execution_status,omitempty"`
	ExecutionStatusAt    time.Time         `json:"execution_status_at"`
	Metrics              json.RawMessage   `json:"metrics,omitempty"`
	MetricsAt            time.Time         `json:"metrics_at,omitzero"`
	StartTaskID          string            `json:"start_task_id,omitempty"`
	CreatedAt            time.Time         `json:"created_at"`
	UpdatedAt            time.Time         `json:"updated_at"`
}

// Delivered is the stored acs.DeliveredMessage.
type Delivered struct {
	Digest  string `json:"digest"`
	EventID string `json:"event_id,omitempty"`
}

// StartTask is the stored acs.StartTask.
type StartTask struct {
	ID                string              `json:"id"`
	OwnerID           string              `json:"owner_id"`
	Status            acs.StartTaskStatus `json:"status"`
	Detail            *string             `json:"detail,omitempty"`
	AppConversationID *string             `json:"app_conversation_id,omitempty"`
	SandboxID         *string             `json:"sandbox_id,omitempty"`
	AgentServerURL    *string             `json:"agent_server_url,omitempty"`
	Request           json.RawMessage     `json:"request"`
	ConversationID    string              `json:"conversation_id"`
	SealedSecrets     map[string]string   `json:"sealed_secrets,omitempty"`
	Placement         string              `json:"placement,omitempty"`
	OwnWorkDir        bool                `json:"own_work_dir,omitempty"`
	WorkDir           string              `json:"work_dir,omitempty"`
	ProjectDir        string              `json:"project_dir,omitempty"`
	Command           string              `json:"command,omitempty"`
	Project           *acs.ProjectFacts   `json:"project,omitempty"`
	Steps             []Step              `json:"steps"`
	Attempts          int                 `json:"attempts"`
	CreatedAt         time.Time           `json:"created_at"`
	UpdatedAt         time.Time           `json:"updated_at"`
}

// Step is the stored acs.StepTiming.
type Step struct {
	Status    acs.StartTaskStatus `json:"status"`
	StartedAt time.Time           `json:"started_at"`
	Detail    string              `json:"detail,omitempty"`
}

// Settings is the stored acs.Settings.
type Settings struct {
	UserID                     string                     `json:"user_id"`
	SandboxGroupingStrategy    acs.GroupingStrategy       `json:"sandbox_grouping_strategy"`
	LLMModel                   *string                    `json:"llm_model,omitempty"`
	LLMBaseURL                 *string                    `json:"llm_base_url,omitempty"`
	LLMAPIKeySealed            string                     `json:"llm_api_key_sealed,omitempty"`
	ConfirmationPolicy         json.RawMessage            `json:"confirmation_policy,omitempty"`
	MaxConversationsPerSandbox int                        `json:"max_conversations_per_sandbox"`
	UpdatedAt                  time.Time                  `json:"updated_at"`
	UI                         map[string]json.RawMessage `json:"ui,omitempty"`
	AgentSettings              json.RawMessage            `json:"agent_settings,omitempty"`
	ConversationSettings       json.RawMessage            `json:"conversation_settings,omitempty"`
	SearchAPIKeySealed         string                     `json:"search_api_key_sealed,omitempty"`
	LLMProfiles                []acs.LLMProfile           `json:"llm_profiles,omitempty"`
	ActiveLLMProfile           string                     `json:"active_llm_profile,omitempty"`
	ProviderTokens             []acs.ProviderToken        `json:"provider_tokens,omitempty"`
}

// Secret is the stored acs.Secret.
type Secret struct {
	OwnerID     string    `json:"owner_id"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Sealed      string    `json:"sealed"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// PendingMessage is the stored acs.PendingMessage.
type PendingMessage struct {
	ID        string          `json:"id"`
	OwnerID   string          `json:"owner_id"`
	Key       string          `json:"key"`
	Content   json.RawMessage `json:"content"`
	CreatedAt time.Time       `json:"created_at"`
}

// Quota is the stored acs.Quota.
type Quota struct {
	UserID    string               `json:"user_id"`
	Claims    map[string]time.Time `json:"claims"`
	Placement *PlacementLock       `json:"placement,omitempty"`
}

// PlacementLock is the stored acs.PlacementLock.
type PlacementLock struct {
	Task    string    `json:"task"`
	Until   time.Time `json:"until"`
	Created string    `json:"created,omitempty"`
}

func fromConversation(c *acs.Conversation) *Conversation {
	r := &Conversation{ID: c.ID, OwnerID: c.OwnerID, SandboxID: c.SandboxID,
		SelectedRepository: c.SelectedRepository, SelectedBranch: c.SelectedBranch, GitProvider: c.GitProvider,
		Title: c.Title, Trigger: c.Trigger, PRNumber: c.PRNumber, LLMModel: c.LLMModel,
		ParentConversationID: c.ParentConversationID, Public: c.Public, Tags: c.Tags, WorkingDir: c.WorkingDir,
		SubConversationIDs: c.SubConversationIDs, ProjectDir: c.ProjectDir, TitleAt: c.TitleAt,
		TitlePending: c.TitlePending, RateLimitedUntil: c.RateLimitedUntil, AgentStateAt: c.AgentStateAt,
		ExecutionStatus: c.ExecutionStatus, ExecutionStatusAt: c.ExecutionStatusAt, Metrics: c.Metrics, MetricsAt: c.MetricsAt,
		StartTaskID: c.StartTaskID, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	if c.Delivered != nil {
		r.Delivered = make([]Delivered, len(c.Delivered))
		for i, d := range c.Delivered {
			r.Delivered[i] = Delivered(d)
		}
	}
	return r
}

func (r *Conversation) domain() acs.Conversation {
	c := acs.Conversation{ID: r.ID, OwnerID: r.OwnerID, SandboxID: r.SandboxID,
		SelectedRepository: r.SelectedRepository, SelectedBranch: r.SelectedBranch, GitProvider: r.GitProvider,
		Title: r.Title, Trigger: r.Trigger, PRNumber: r.PRNumber, LLMModel: r.LLMModel,
		ParentConversationID: r.ParentConversationID, Public: r.Public, Tags: r.Tags, WorkingDir: r.WorkingDir,
		SubConversationIDs: r.SubConversationIDs, ProjectDir: r.ProjectDir, TitleAt: r.TitleAt,
		TitlePending: r.TitlePending, RateLimitedUntil: r.RateLimitedUntil, AgentStateAt: r.AgentStateAt,
		ExecutionStatus: r.ExecutionStatus, ExecutionStatusAt: r.ExecutionStatusAt, Metrics: r.Metrics, MetricsAt: r.MetricsAt,
		StartTaskID: r.StartTaskID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.Delivered != nil {
		c.Delivered = make([]acs.DeliveredMessage, len(r.Delivered))
		for i, d := range r.Delivered {
			c.Delivered[i] = acs.DeliveredMessage(d)
		}
	}
	return c
}

func fromStartTask(t *acs.StartTask) *StartTask {
	r := &StartTask{ID: t.ID, OwnerID: t.OwnerID, Status: t.Status, Detail: t.Detail,
		AppConversationID: t.AppConversationID, SandboxID: t.SandboxID, AgentServerURL: t.AgentServerURL,
		Request: t.Request, ConversationID: t.ConversationID, SealedSecrets: t.SealedSecrets,
		Placement: t.Placement, OwnWorkDir: t.OwnWorkDir, WorkDir: t.WorkDir, ProjectDir: t.ProjectDir,
		Command: t.Command, Project: t.Project, Attempts: t.Attempts, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	if t.Steps != nil {
		r.Steps = make([]Step, len(t.Steps))
		for i, s := range t.Steps {
			r.Steps[i] = Step(s)
		}
	}
	return r
}

func (r *StartTask) domain() acs.StartTask {
	t := acs.StartTask{ID: r.ID, OwnerID: r.OwnerID, Status: r.Status, Detail: r.Detail,
		AppConversationID: r.AppConversationID, SandboxID: r.SandboxID, AgentServerURL: r.AgentServerURL,
		Request: r.Request, ConversationID: r.ConversationID, SealedSecrets: r.SealedSecrets,
		Placement: r.Placement, OwnWorkDir: r.OwnWorkDir, WorkDir: r.WorkDir, ProjectDir: r.ProjectDir,
		Command: r.Command, Project: r.Project, Attempts: r.Attempts, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.Steps != nil {
		t.Steps = make([]acs.StepTiming, len(r.Steps))
		for i, s := range r.Steps {
			t.Steps[i] = acs.StepTiming(s)
		}
	}
	return t
}

func fromQuota(q *acs.Quota) *Quota {
	r := &Quota{UserID: q.UserID, Claims: q.Claims}
	if q.Placement != nil {
		p := PlacementLock(*q.Placement)
		r.Placement = &p
	}
	return r
}

func (r *Quota) domain() acs.Quota {
	q := acs.Quota{UserID: r.UserID, Claims: r.Claims}
	if r.Placement != nil {
		p := acs.PlacementLock(*r.Placement)
		q.Placement = &p
	}
	return q
}

// record returns the record of a domain value (or pointer to one).
func record(v any) (any, error) {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		v = rv.Elem().Interface()
	}
	switch d := v.(type) {
	case acs.User:
		return User(d), nil
	case acs.APIKey:
		return APIKey(d), nil
	case acs.Sandbox:
		return Sandbox(d), nil
	case acs.Conversation:
		return fromConversation(&d), nil
	case acs.StartTask:
		return fromStartTask(&d), nil
	case acs.Settings:
		return Settings(d), nil
	case acs.Secret:
		return Secret(d), nil
	case acs.PendingMessage:
		return PendingMessage(d), nil
	case acs.Quota:
		return fromQuota(&d), nil
	case acs.BrowserSession:
		return BrowserSession(d), nil
	case acs.SignInToken:
		return SignInToken(d), nil
	case acs.Identity:
		return Identity(d), nil
	}
	return nil, fmt.Errorf("storerecord: no record type for %T", v)
}

// Marshal encodes a domain record (acs.User, acs.APIKey, acs.Sandbox,
// acs.Conversation, acs.StartTask, acs.Settings, acs.Secret,
// acs.PendingMessage, acs.Quota, acs.BrowserSession, acs.SignInToken,
// acs.Identity, or a pointer to one) as its stored JSON,
// without HTML escaping (embedded JSON such as message contents and
// metrics comes back as it was given) and without a trailing newline. It
// returns an error for any other type.
func Marshal(v any) ([]byte, error) {
	r, err := record(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Unmarshal decodes stored JSON into v, a pointer to one of the domain
// types Marshal takes, like json.Unmarshal (fields absent from data keep
// v's values); it returns the JSON error for data that is not such a
// record, and an error for any other type of v.
func Unmarshal(data []byte, v any) error {
	switch d := v.(type) {
	case *acs.User:
		return decode(data, d, func(d *acs.User) User { return User(*d) }, func(r *User) acs.User { return acs.User(*r) })
	case *acs.APIKey:
		return decode(data, d, func(d *acs.APIKey) APIKey { return APIKey(*d) }, func(r *APIKey) acs.APIKey { return acs.APIKey(*r) })
	case *acs.Sandbox:
		return decode(data, d, func(d *acs.Sandbox) Sandbox { return Sandbox(*d) }, func(r *Sandbox) acs.Sandbox { return acs.Sandbox(*r) })
	case *acs.Conversation:
		return decode(data, d, func(d *acs.Conversation) Conversation { return *fromConversation(d) }, (*Conversation).domain)
	case *acs.StartTask:
		return decode(data, d, func(d *acs.StartTask) StartTask { return *fromStartTask(d) }, (*StartTask).domain)
	case *acs.Settings:
		return decode(data, d, func(d *acs.Settings) Settings { return Settings(*d) }, func(r *Settings) acs.Settings { return acs.Settings(*r) })
	case *acs.Secret:
		return decode(data, d, func(d *acs.Secret) Secret { return Secret(*d) }, func(r *Secret) acs.Secret { return acs.Secret(*r) })
	case *acs.PendingMessage:
		return decode(data, d, func(d *acs.PendingMessage) PendingMessage { return PendingMessage(*d) },
			func(r *PendingMessage) acs.PendingMessage { return acs.PendingMessage(*r) })
	case *acs.Quota:
		return decode(data, d, func(d *acs.Quota) Quota { return *fromQuota(d) }, (*Quota).domain)
	case *acs.BrowserSession:
		return decode(data, d, func(d *acs.BrowserSession) BrowserSession { return BrowserSession(*d) },
			func(r *BrowserSession) acs.BrowserSession { return acs.BrowserSession(*r) })
	case *acs.SignInToken:
		return decode(data, d, func(d *acs.SignInToken) SignInToken { return SignInToken(*d) },
			func(r *SignInToken) acs.SignInToken { return acs.SignInToken(*r) })
	case *acs.Identity:
		return decode(data, d, func(d *acs.Identity) Identity { return Identity(*d) }, func(r *Identity) acs.Identity { return acs.Identity(*r) })
	}
	return fmt.Errorf("storerecord: no record type for %T", v)
}

// decode decodes data as record R over the record of *dst and stores its
// domain value in dst (nothing when data is not valid JSON of R).
func decode[R any, D any](data []byte, dst *D, from func(*D) R, to func(*R) D) error {
	r := from(dst)
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	*dst = to(&r)
	return nil
}
