package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
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
	u, errs := req.Validate(body)
	if len(errs) > 0 {
		httpjson.WriteValidation(w, errs)
		return
	}
	s, err := a.accounts.UpdateSettings(r.Context(), userOf(r).ID, u)
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, settingsJSON(s, true))
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
