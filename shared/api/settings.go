package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/wire"
	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

func settingsJSON(s acs.Settings, saved bool) v1wire.Settings {
	out := v1wire.Settings{SandboxGroupingStrategy: string(s.SandboxGroupingStrategy), LLMModel: s.LLMModel,
		LLMBaseURL: s.LLMBaseURL, LLMAPIKeySet: s.LLMAPIKeySealed != "", ConfirmationPolicy: s.ConfirmationPolicy,
		MaxConversationsPerSandbox: s.MaxConversationsPerSandbox}
	if out.SandboxGroupingStrategy == "" {
		out.SandboxGroupingStrategy = string(acs.NoGrouping)
	}
	if out.MaxConversationsPerSandbox == 0 {
		out.MaxConversationsPerSandbox = acs.DefaultMaxConversationsPerSandbox
	}
	if saved {
		t := events.At(s.UpdatedAt)
		out.UpdatedAt = &t
	}
	out.OpenHandsSettings = openHandsSettings(s)
	return out
}

// openHandsSettings answers the web frontend's fields: defaults, then what
// the user saved; agent_settings.llm carries the LLM settings ACS uses
// (api_key always null).
func openHandsSettings(s acs.Settings) v1wire.OpenHandsSettings {
	o := v1wire.OpenHandsSettings{Language: "en", EnableProactiveConversationStarters: true, V1Enabled: true,
		DisabledSkills: []string{}, SearchAPIKeySet: s.SearchAPIKeySealed != "", ProviderTokensSet: map[string]*string{}}
	typed := map[string]any{"language": &o.Language, "user_consents_to_analytics": &o.UserConsentsToAnalytics,
		"enable_sound_notifications": &o.EnableSoundNotifications, "enable_proactive_conversation_starters": &o.EnableProactiveConversationStarters,
		"enable_solvability_analysis": &o.EnableSolvabilityAnalysis, "max_budget_per_task": &o.MaxBudgetPerTask,
		"git_user_name": &o.GitUserName, "git_user_email": &o.GitUserEmail, "git_full_clone": &o.GitFullClone,
		"remote_runtime_resource_factor": &o.RemoteRuntimeResourceFactor, "disabled_skills": &o.DisabledSkills, "v1_enabled": &o.V1Enabled}
	for k, v := range s.UI {
		if dst, ok := typed[k]; ok {
			if err := json.Unmarshal(v, dst); err != nil {
				slog.Warn("api: a stored UI setting does not decode", "field", k, "error", err)
			}
			continue
		}
		if o.UI == nil {
			o.UI = map[string]json.RawMessage{}
		}
		o.UI[k] = v
	}
	if o.DisabledSkills == nil {
		o.DisabledSkills = []string{}
	}
	for _, t := range s.ProviderTokens {
		var host *string
		if t.Host != "" {
			h := t.Host
			host = &h
		}
		o.ProviderTokensSet[t.Provider] = host
	}
	agent := map[string]any{}
	if len(s.AgentSettings) > 0 {
		_ = json.Unmarshal(s.AgentSettings, &agent)
	}
	llm, _ := agent["llm"].(map[string]any)
	if llm == nil {
		llm = map[string]any{}
	}
	llm["model"], llm["base_url"], llm["api_key"] = s.LLMModel, s.LLMBaseURL, nil
	agent["llm"] = llm
	o.AgentSettings, _ = json.Marshal(agent)
	o.ConversationSettings = json.RawMessage("{}")
	if len(s.ConversationSettings) > 0 {
		o.ConversationSettings = s.ConversationSettings
	}
	return o
}

// getSettings: GET /api/v1/settings.
func (a *API) getSettings(w http.ResponseWriter, r *http.Request) {
	s, saved, err := a.accounts.Settings(r.Context(), userOf(r).ID)
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, settingsJSON(s, saved))
}

// updateSettings: POST /api/v1/settings (partial update); it answers the
// settings as saved.
func (a *API) updateSettings(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var req v1wire.SettingsRequest
	if !decodeBytes(w, body, &req) {
		return
	}
	var errs strictjson.Errors
	model, modelSet := optString(req.LLMModel, "llm_model", &errs)
	base, baseSet := optString(req.LLMBaseURL, "llm_base_url", &errs)
	key, keySet := optString(req.LLMAPIKey, "llm_api_key", &errs)
	ui, agentLLM := openHandsUpdate(body, &req, &errs)
	if agentLLM.Model.Set {
		model, modelSet = optString(agentLLM.Model, agentLLM.From+".llm.model", &errs)
		if model != nil && *model == "" {
			model = nil // the frontend's "no model"
		}
	}
	if agentLLM.BaseURL.Set {
		base, baseSet = optString(agentLLM.BaseURL, agentLLM.From+".llm.base_url", &errs)
		if base != nil && *base == "" {
			base = nil // the frontend's "provider default"
		}
	}
	if agentLLM.APIKey.Set {
		// A null or empty key from the frontend means "unchanged" (it never
		// sees the stored key, so it cannot send it back).
		if k, set := optString(agentLLM.APIKey, agentLLM.From+".llm.api_key", &errs); set && k != nil && *k != "" {
			key, keySet = k, true
		}
	}
	if modelSet && model != nil && (strings.TrimSpace(*model) == "" || len(*model) > 200) {
		errs = append(errs, strictjson.Error{Loc: []any{"body", "llm_model"}, Msg: "llm_model must be 1 to 200 characters", Type: "value_error"})
	}
	if baseSet && base != nil {
		if u, err := url.Parse(*base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, strictjson.Error{Loc: []any{"body", "llm_base_url"}, Msg: "llm_base_url must be an http(s) URL", Type: "url_parsing"})
		}
	}
	if keySet && key != nil && (*key == "" || len(*key) > 4096) {
		errs = append(errs, strictjson.Error{Loc: []any{"body", "llm_api_key"}, Msg: "llm_api_key must be 1 to 4096 characters", Type: "value_error"})
	}
	var policy json.RawMessage
	policySet := req.ConfirmationPolicy.Set
	if policySet && !req.ConfirmationPolicy.IsNull() {
		var p wire.ConfirmationPolicy
		if err := strictjson.Unmarshal(req.ConfirmationPolicy.Raw, &p, "body", "confirmation_policy"); err != nil {
			var se strictjson.Errors
			if errors.As(err, &se) {
				errs = append(errs, se...)
			}
		} else {
			policy = strictjson.MustMarshal(&p)
		}
	}
	if len(errs) > 0 {
		httpjson.WriteValidation(w, errs)
		return
	}
	s, err := a.accounts.UpdateSettings(r.Context(), userOf(r).ID, accounts.SettingsUpdate{
		SandboxGroupingStrategy:    req.SandboxGroupingStrategy,
		LLMModel:                   accounts.Field{Set: modelSet, Value: model},
		LLMBaseURL:                 accounts.Field{Set: baseSet, Value: base},
		LLMAPIKey:                  accounts.Field{Set: keySet, Value: key},
		ConfirmationPolicySet:      policySet,
		ConfirmationPolicy:         policy,
		MaxConversationsPerSandbox: req.MaxConversationsPerSandbox,
		UI:                         ui,
		AgentSettings:              accounts.Raw{Set: req.AgentSettings != nil || isNullField(body, "agent_settings"), Value: nullIfEmpty(req.AgentSettings)},
		AgentSettingsDiff:          req.AgentSettingsDiff,
		ConversationSettings:       accounts.Raw{Set: req.ConversationSettings != nil || isNullField(body, "conversation_settings"), Value: nullIfEmpty(req.ConversationSettings)},
		ConversationSettingsDiff:   req.ConversationSettingsDiff,
		SearchAPIKey:               accounts.Field{Set: req.SearchAPIKey != nil || isNullField(body, "search_api_key"), Value: req.SearchAPIKey},
	})
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, settingsJSON(s, true))
}

// openHandsUpdate picks the web frontend's fields out of a settings body
// already decoded (so type-checked) into req: the UI fields as given, and
// the llm object of agent_settings / agent_settings_diff (the diff wins).
func openHandsUpdate(body []byte, req *v1wire.SettingsRequest, errs *strictjson.Errors) (map[string]json.RawMessage, v1wire.LLMConfig) {
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(body, &raw) // it decoded strictly already
	ui := map[string]json.RawMessage{}
	for _, k := range v1wire.UIFields {
		if v, ok := raw[k]; ok {
			var buf bytes.Buffer
			if json.Compact(&buf, v) == nil {
				ui[k] = buf.Bytes()
			}
		}
	}
	var llm v1wire.LLMConfig
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

// decodeBytes decodes an already read body strictly into v, answering 422
// (or 400) and returning false when it does not.
func decodeBytes(w http.ResponseWriter, body []byte, v any) bool {
	if len(bytes.TrimSpace(body)) == 0 {
		httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"body"}, Msg: "Field required", Type: "missing"}})
		return false
	}
	if err := strictjson.Unmarshal(body, v, "body"); err != nil {
		var es strictjson.Errors
		if errors.As(err, &es) {
			httpjson.WriteValidation(w, es)
			return false
		}
		httpjson.WriteDetail(w, http.StatusBadRequest, err.Error())
		return false
	}
	return true
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
