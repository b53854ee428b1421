package v1wire

// The field rules of the V1 bodies that partially update a record: each
// Validate checks the body's fields one at a time and returns the update
// they ask for, with a problem at "body" and the field for each field
// that is not valid.

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
)

// Validate checks the fields of a PATCH of a conversation: their types, a
// title of 1 to 200 characters, and valid repository, branch and provider
// values. The update holds the fields that are valid.
func (r *UpdateRequest) Validate() (acs.ConversationUpdate, strictjson.Errors) {
	var errs strictjson.Errors
	var u acs.ConversationUpdate
	u.Title = optString(r.Title, "title", &errs)
	u.SelectedRepository = optString(r.SelectedRepository, "selected_repository", &errs)
	u.SelectedBranch = optString(r.SelectedBranch, "selected_branch", &errs)
	u.GitProvider = optString(r.GitProvider, "git_provider", &errs)
	u.Public.Set = r.Public.Set
	if r.Public.Set && !r.Public.IsNull() {
		var b bool
		if err := json.Unmarshal(r.Public.Raw, &b); err != nil {
			errs = append(errs, bodyErr("public", "bool_type", "Input should be a valid boolean"))
		}
		u.Public.Value = &b
	}
	if title := u.Title; title.Set && (title.Value == nil || strings.TrimSpace(*title.Value) == "" || utf8.RuneCountInString(*title.Value) > 200) {
		errs = append(errs, bodyErr("title", "value_error", "title must be 1 to 200 characters"))
	}
	if repo := u.SelectedRepository.Value; repo != nil {
		if msg := RepositoryProblem(*repo); msg != "" {
			errs = append(errs, bodyErr("selected_repository", "value_error", msg))
		}
	}
	if branch := u.SelectedBranch.Value; branch != nil {
		if msg := BranchProblem(*branch); msg != "" {
			errs = append(errs, bodyErr("selected_branch", "value_error", msg))
		}
	}
	if p := u.GitProvider.Value; p != nil && !ValidProvider(*p) {
		errs = append(errs, bodyErr("git_provider", "enum", strictjson.EnumMessage(GitProvider("").EnumValues())))
	}
	return u, errs
}

// TitleLeaks refuses a new title holding the value of one of secrets
// (acs.TitleText), at body.title.
func TitleLeaks(title string, secrets map[string]string) strictjson.Errors {
	var errs strictjson.Errors
	for _, msg := range acs.TitleText.Leaks(title, secrets) {
		errs = append(errs, bodyErr("title", "value_error", msg))
	}
	return errs
}

func bodyErr(field, typ, msg string) strictjson.Error {
	return strictjson.Error{Loc: []any{"body", field}, Msg: msg, Type: typ}
}

// optString decodes an optional, nullable string field; a value that is
// not a string is a problem at loc and reads as absent.
func optString(o strictjson.Optional, loc string, errs *strictjson.Errors) acs.Field[string] {
	if !o.Set {
		return acs.Field[string]{}
	}
	if o.IsNull() {
		return acs.Field[string]{Set: true}
	}
	var s string
	if err := json.Unmarshal(o.Raw, &s); err != nil {
		*errs = append(*errs, bodyErr(loc, "string_type", "Input should be a valid string"))
		return acs.Field[string]{}
	}
	return acs.Field[string]{Set: true, Value: &s}
}

// Validate checks the fields of a settings update, given as body and
// decoded into r: their types, an llm_model of 1 to 200 characters, an
// http(s) llm_base_url, an llm_api_key of 1 to 4096 characters and a
// confirmation policy. The LLM fields of agent_settings and
// agent_settings_diff (llm.model, llm.base_url, llm.api_key) set
// llm_model, llm_base_url and llm_api_key: an empty model or base URL
// clears it, and a null or empty key keeps the stored one. The update is
// meant only when there are no problems.
func (r *SettingsRequest) Validate(body []byte) (acs.SettingsUpdate, strictjson.Errors) {
	var errs strictjson.Errors
	model := optString(r.LLMModel, "llm_model", &errs)
	base := optString(r.LLMBaseURL, "llm_base_url", &errs)
	key := optString(r.LLMAPIKey, "llm_api_key", &errs)
	ui, agentLLM := openHandsUpdate(body, r, &errs)
	if agentLLM.Model.Set {
		model = optString(agentLLM.Model, agentLLM.From+".llm.model", &errs)
		if model.Value != nil && *model.Value == "" {
			model.Value = nil // the frontend's "no model"
		}
	}
	if agentLLM.BaseURL.Set {
		base = optString(agentLLM.BaseURL, agentLLM.From+".llm.base_url", &errs)
		if base.Value != nil && *base.Value == "" {
			base.Value = nil // the frontend's "provider default"
		}
	}
	if agentLLM.APIKey.Set {
		// The frontend never sees the stored key, so cannot send it back.
		if k := optString(agentLLM.APIKey, agentLLM.From+".llm.api_key", &errs); k.Value != nil && *k.Value != "" {
			key = k
		}
	}
	if m := model.Value; m != nil && (strings.TrimSpace(*m) == "" || len(*m) > 200) {
		errs = append(errs, bodyErr("llm_model", "value_error", "llm_model must be 1 to 200 characters"))
	}
	if b := base.Value; b != nil {
		if u, err := url.Parse(*b); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, bodyErr("llm_base_url", "url_parsing", "llm_base_url must be an http(s) URL"))
		}
	}
	if k := key.Value; k != nil && (*k == "" || len(*k) > 4096) {
		errs = append(errs, bodyErr("llm_api_key", "value_error", "llm_api_key must be 1 to 4096 characters"))
	}
	var policy json.RawMessage
	if r.ConfirmationPolicy.Set && !r.ConfirmationPolicy.IsNull() {
		var p agentwire.ConfirmationPolicy
		if err := strictjson.Unmarshal(r.ConfirmationPolicy.Raw, &p, "body", "confirmation_policy"); err != nil {
			var se strictjson.Errors
			if errors.As(err, &se) {
				errs = append(errs, se...)
			}
		} else {
			policy = strictjson.MustMarshal(&p)
		}
	}
	return acs.SettingsUpdate{
		SandboxGroupingStrategy:    r.SandboxGroupingStrategy,
		LLMModel:                   model,
		LLMBaseURL:                 base,
		LLMAPIKey:                  key,
		ConfirmationPolicySet:      r.ConfirmationPolicy.Set,
		ConfirmationPolicy:         policy,
		MaxConversationsPerSandbox: r.MaxConversationsPerSandbox,
		UI:                         ui,
		AgentSettings:              acs.JSONField{Set: r.AgentSettings != nil || isNullField(body, "agent_settings"), Value: nullIfEmpty(r.AgentSettings)},
		AgentSettingsDiff:          r.AgentSettingsDiff,
		ConversationSettings:       acs.JSONField{Set: r.ConversationSettings != nil || isNullField(body, "conversation_settings"), Value: nullIfEmpty(r.ConversationSettings)},
		ConversationSettingsDiff:   r.ConversationSettingsDiff,
		SearchAPIKey:               acs.Field[string]{Set: r.SearchAPIKey != nil || isNullField(body, "search_api_key"), Value: r.SearchAPIKey},
	}, errs
}

// openHandsUpdate picks the web frontend's fields out of a settings body
// already decoded (so type-checked) into req: the UI fields as given, and
// the llm object of agent_settings / agent_settings_diff (the diff wins).
func openHandsUpdate(body []byte, req *SettingsRequest, errs *strictjson.Errors) (map[string]json.RawMessage, LLMConfig) {
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(body, &raw) // it decoded strictly already
	ui := map[string]json.RawMessage{}
	for _, k := range UIFields {
		if v, ok := raw[k]; ok {
			var buf bytes.Buffer
			if json.Compact(&buf, v) == nil {
				ui[k] = buf.Bytes()
			}
		}
	}
	var llm LLMConfig
	for _, f := range []struct {
		name string
		obj  json.RawMessage
	}{{"agent_settings", req.AgentSettings}, {"agent_settings_diff", req.AgentSettingsDiff}} {
		var m map[string]json.RawMessage
		if len(f.obj) == 0 || json.Unmarshal(f.obj, &m) != nil {
			continue
		}
		v, ok := m["llm"]
		if !ok || string(v) == "null" {
			continue
		}
		llm.From = f.name
		var fields map[string]json.RawMessage
		if json.Unmarshal(v, &fields) != nil {
			*errs = append(*errs, strictjson.Error{Loc: []any{"body", f.name, "llm"}, Msg: "Input should be a valid dictionary", Type: "dict_type"})
			continue
		}
		for name, dst := range map[string]*strictjson.Optional{"model": &llm.Model, "base_url": &llm.BaseURL, "api_key": &llm.APIKey} {
			if fv, ok := fields[name]; ok {
				*dst = strictjson.Optional{Set: true, Raw: fv}
			}
		}
	}
	return ui, llm
}

// isNullField reports whether body (a JSON object) gives name as null.
func isNullField(body []byte, name string) bool {
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) != nil {
		return false
	}
	v, ok := raw[name]
	return ok && string(v) == "null"
}

func nullIfEmpty(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}
