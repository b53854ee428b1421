package v1wire

// The start request (POST /api/v1/app-conversations, the start tasks'
// stored request) and its validation rules.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
)

// Plugin is a plugin to attach to the conversation (see agentwire.Plugin).
type Plugin = agentwire.Plugin

// GitProvider is a code host.
type GitProvider string

// EnumValues implements strictjson.Enum.
func (GitProvider) EnumValues() []string {
	return []string{"github", "gitlab", "bitbucket", "bitbucket_data_center", "forgejo", "azure_devops", "enterprise_sso"}
}

// Trigger is what started a conversation.
type Trigger string

// EnumValues implements strictjson.Enum.
func (Trigger) EnumValues() []string {
	return []string{"resolver", "gui", "suggested_task", "openhands_api", "slack", "microagent_management", "jira",
		"jira_dc", "linear", "bitbucket", "automation"}
}

// AgentType selects the default agent or the planning agent.
type AgentType string

// EnumValues implements strictjson.Enum.
func (AgentType) EnumValues() []string { return []string{"default", "plan"} }

// TaskType is the kind of a suggested task.
type TaskType string

// EnumValues implements strictjson.Enum.
func (TaskType) EnumValues() []string {
	return []string{"MERGE_CONFLICTS", "FAILING_CHECKS", "UNRESOLVED_COMMENTS", "OPEN_ISSUE", "OPEN_PR"}
}

// SuggestedTask asks ACS to write the initial message for a pull request or
// issue of a repository.
type SuggestedTask struct {
	GitProvider *GitProvider `json:"git_provider"`
	TaskType    TaskType     `json:"task_type" acs:"required"`
	Repo        string       `json:"repo" acs:"required"`
	IssueNumber int          `json:"issue_number" acs:"required,ge=1"`
	Title       string       `json:"title" acs:"maxlen=500"`
}

// ValidateStrict checks the repository.
func (t *SuggestedTask) ValidateStrict() []strictjson.Error {
	if msg := RepositoryProblem(t.Repo); msg != "" {
		return []strictjson.Error{{Loc: []any{"repo"}, Msg: strings.Replace(msg, "selected_repository", "repo", 1), Type: "value_error"}}
	}
	return nil
}

// Prompt is the initial message a suggested task starts with.
func (t *SuggestedTask) Prompt() string {
	ref := fmt.Sprintf("#%d in %s", t.IssueNumber, t.Repo)
	if t.Title != "" {
		ref += fmt.Sprintf(" (%q)", t.Title)
	}
	switch t.TaskType {
	case "MERGE_CONFLICTS":
		return "Resolve the merge conflicts of pull request " + ref + ": check out its branch, merge the base branch, resolve every conflict keeping both sides' intent, run the tests and push the result."
	case "FAILING_CHECKS":
		return "Fix the failing checks of pull request " + ref + ": check out its branch, find out why the checks fail, fix the cause, run the tests and push the fix."
	case "UNRESOLVED_COMMENTS":
		return "Address the unresolved review comments of pull request " + ref + ": check out its branch, make the changes the reviewers asked for, run the tests and push them."
	case "OPEN_PR":
		return "Review and finish pull request " + ref + ": check out its branch, understand the change, complete what is missing, run the tests and push."
	}
	return "Resolve issue " + ref + ": read the issue, reproduce the problem, fix it with a test, and push the change on a new branch."
}

// StartRequest is the body of POST /api/v1/app-conversations. Every field is
// optional; {} is a valid request.
type StartRequest struct {
	SandboxID             *string                       `json:"sandbox_id"`
	ConversationID        *string                       `json:"conversation_id"`
	InitialMessage        *agentwire.SendMessageRequest `json:"initial_message"`
	SystemMessageSuffix   *string                       `json:"system_message_suffix"`
	Processors            json.RawMessage               `json:"processors" acs:"nullable"`
	LLMModel              *string                       `json:"llm_model"`
	SelectedRepository    *string                       `json:"selected_repository"`
	SelectedBranch        *string                       `json:"selected_branch"`
	GitProvider           *GitProvider                  `json:"git_provider"`
	SuggestedTask         *SuggestedTask                `json:"suggested_task"`
	Title                 *string                       `json:"title" acs:"maxlen=200"`
	Trigger               *Trigger                      `json:"trigger"`
	PRNumber              []int                         `json:"pr_number"`
	ParentConversationID  *string                       `json:"parent_conversation_id"`
	AgentType             AgentType                     `json:"agent_type" acs:"default=default"`
	Public                *bool                         `json:"public"`
	Plugins               []Plugin                      `json:"plugins" acs:"nullable"`
	Secrets               map[string]string             `json:"secrets" acs:"nullable"`
	ObservabilitySpanName *string                       `json:"observability_span_name" acs:"maxlen=200"`
	ObservabilityTags     []string                      `json:"observability_tags" acs:"nullable"`
	ObservabilityMetadata json.RawMessage               `json:"observability_metadata" acs:"object,nullable"`
}

var (
	repoPattern   = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	branchPattern = regexp.MustCompile(`^[A-Za-z0-9._/+@-]+$`)
	secretName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	idPattern     = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
)

// blockedSecretNames may not be overridden: they configure the agent server.
var blockedSecretNames = map[string]bool{
	"OPENVSCODE_SERVER_ROOT": true, "OH_ENABLE_VNC": true, "LOG_JSON": true, "OH_CONVERSATIONS_PATH": true,
	"OH_BASH_EVENTS_DIR": true, "PYTHONUNBUFFERED": true, "ENV_LOG_LEVEL": true, "OH_WEBHOOKS_0_BASE_URL": true,
	"OH_ALLOW_CORS_ORIGINS_0": true, "WORKER_1": true, "WORKER_2": true, "PATH": true, "HOME": true,
	"OH_SESSION_API_KEYS_0": true, "SESSION_API_KEY": true, "ACS_WORKSPACE_DIR": true,
}

// Limits on per-conversation secrets.
const (
	MaxSecrets         = 50
	MaxSecretNameLen   = 256
	MaxSecretValueSize = 65536
)

// IsEnvName reports whether name is a valid environment variable name
// (what a secret's name must be).
func IsEnvName(name string) bool { return secretName.MatchString(name) }

// RepositoryProblem says what is wrong with a selected_repository value, or
// "" when it is a valid <org>/<repository>.
func RepositoryProblem(repo string) string {
	if !repoPattern.MatchString(repo) || strings.Contains(repo, "..") || strings.HasSuffix(repo, ".git") {
		return "selected_repository must be <org>/<repository>: letters, digits, '.', '_' and '-' only"
	}
	return ""
}

// BranchProblem says what is wrong with a branch name, or "".
func BranchProblem(b string) string {
	if !branchPattern.MatchString(b) || strings.HasPrefix(b, "-") || strings.HasPrefix(b, "/") ||
		strings.HasSuffix(b, "/") || strings.HasSuffix(b, ".lock") || strings.Contains(b, "..") || strings.Contains(b, "//") || len(b) > 255 {
		return "selected_branch is not a valid git branch name"
	}
	return ""
}

// ValidProvider reports whether p is a git provider value.
func ValidProvider(p string) bool {
	for _, v := range GitProvider("").EnumValues() {
		if v == p {
			return true
		}
	}
	return false
}

// SecretNameProblem says what is wrong with a secret name, or "".
func SecretNameProblem(name string) string {
	switch {
	case len(name) > MaxSecretNameLen || !secretName.MatchString(name):
		return "secret names must be environment variable names (letters, digits and '_', not starting with a digit)"
	case blockedSecretNames[strings.ToUpper(name)] || strings.HasPrefix(strings.ToUpper(name), "LLM_"):
		return "this name configures the sandbox and cannot be a secret"
	}
	return ""
}

func verr(loc []any, typ, msg string) strictjson.Error {
	return strictjson.Error{Loc: loc, Msg: msg, Type: typ}
}

// ValidateStrict checks the rules the tags cannot express.
func (r *StartRequest) ValidateStrict() []strictjson.Error {
	var errs []strictjson.Error
	if r.SelectedRepository != nil {
		if msg := RepositoryProblem(*r.SelectedRepository); msg != "" {
			errs = append(errs, verr([]any{"selected_repository"}, "value_error", msg))
		}
	}
	if r.SelectedBranch != nil {
		if msg := BranchProblem(*r.SelectedBranch); msg != "" {
			errs = append(errs, verr([]any{"selected_branch"}, "value_error", msg))
		}
		if r.SelectedRepository == nil {
			errs = append(errs, verr([]any{"selected_branch"}, "value_error", "selected_branch needs selected_repository"))
		}
	}
	if r.SandboxID != nil && !idPattern.MatchString(*r.SandboxID) {
		errs = append(errs, verr([]any{"sandbox_id"}, "value_error", "sandbox_id is not a sandbox id"))
	}
	for _, p := range []struct {
		name string
		v    *string
	}{{"conversation_id", r.ConversationID}, {"parent_conversation_id", r.ParentConversationID}} {
		if p.v != nil {
			if _, err := agentwire.ParseID(*p.v); err != nil {
				errs = append(errs, verr([]any{p.name}, "uuid_parsing", err.Error()))
			}
		}
	}
	if r.SuggestedTask != nil && r.InitialMessage != nil {
		errs = append(errs, verr([]any{"suggested_task"}, "value_error", "suggested_task and initial_message are mutually exclusive"))
	}
	if len(r.Secrets) > MaxSecrets {
		errs = append(errs, verr([]any{"secrets"}, "too_long", fmt.Sprintf("at most %d secrets are allowed", MaxSecrets)))
	}
	for name, value := range r.Secrets {
		switch {
		case len(name) > MaxSecretNameLen || !secretName.MatchString(name):
			errs = append(errs, verr([]any{"secrets", name}, "value_error",
				"secret names must be environment variable names (letters, digits and '_', not starting with a digit)"))
		case blockedSecretNames[strings.ToUpper(name)] || strings.HasPrefix(strings.ToUpper(name), "LLM_"):
			errs = append(errs, verr([]any{"secrets", name}, "value_error", "this secret name is reserved"))
		case len(value) > MaxSecretValueSize:
			errs = append(errs, verr([]any{"secrets", name}, "string_too_long", fmt.Sprintf("secret values are at most %d bytes", MaxSecretValueSize)))
		}
	}
	if r.InitialMessage != nil {
		errs = append(errs, ContentLeaks(acs.InitialMessageText, r.InitialMessage.Content, r.Secrets, "initial_message", "content")...)
	}
	errs = append(errs, TitleSecretErrors(r, r.Secrets, nil)...)
	if r.ObservabilityMetadata != nil {
		errs = append(errs, agentwire.ValidateObservabilityMetadata(r.ObservabilityMetadata)...)
	}
	return errs
}

// TitleSecretErrors refuses the titles of r (title, suggested_task.title)
// that hold the value of one of secrets (acs.TitleText), at loc + the
// field.
func TitleSecretErrors(r *StartRequest, secrets map[string]string, loc []any) strictjson.Errors {
	var errs strictjson.Errors
	check := func(text *string, field ...any) {
		if text == nil {
			return
		}
		for _, msg := range acs.TitleText.Leaks(*text, secrets) {
			errs = append(errs, verr(append(loc[:len(loc):len(loc)], field...), "value_error", msg))
		}
	}
	check(r.Title, "title")
	if r.SuggestedTask != nil {
		check(&r.SuggestedTask.Title, "suggested_task", "title")
	}
	return errs
}

// ContentLeaks refuses the text items of content that hold the value of
// one of secrets (t.Leaks), each at loc, its index and "text".
func ContentLeaks(t acs.Text, content []events.Content, secrets map[string]string, loc ...any) strictjson.Errors {
	var errs strictjson.Errors
	for i, item := range content {
		tc, ok := item.(*events.TextContent)
		if !ok {
			continue
		}
		for _, msg := range t.Leaks(tc.Text, secrets) {
			errs = append(errs, verr(append(loc[:len(loc):len(loc)], i, "text"), "value_error", msg))
		}
	}
	return errs
}
