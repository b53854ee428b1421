package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/wire"
	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/acs"
)

// SettingsJSON is what GET /api/v1/settings answers. The LLM key is never
// returned; llm_api_key_set says whether one is saved.
type SettingsJSON struct {
	SandboxGroupingStrategy    string          `json:"sandbox_grouping_strategy"`
	LLMModel                   *string         `json:"llm_model" acs:"emitnull"`
	LLMBaseURL                 *string         `json:"llm_base_url" acs:"emitnull"`
	LLMAPIKeySet               bool            `json:"llm_api_key_set"`
	ConfirmationPolicy         json.RawMessage `json:"confirmation_policy" acs:"nullable,emitnull"`
	MaxConversationsPerSandbox int             `json:"max_conversations_per_sandbox"`
	UpdatedAt                  *events.Time    `json:"updated_at" acs:"emitnull"`
}

// SettingsRequest is the body of POST /api/v1/settings: a partial update.
// Fields absent are kept; null clears llm_model, llm_base_url, llm_api_key
// and confirmation_policy.
type SettingsRequest struct {
	SandboxGroupingStrategy    *acs.GroupingStrategy `json:"sandbox_grouping_strategy"`
	LLMModel                   strictjson.Optional   `json:"llm_model"`
	LLMBaseURL                 strictjson.Optional   `json:"llm_base_url"`
	LLMAPIKey                  strictjson.Optional   `json:"llm_api_key"`
	ConfirmationPolicy         strictjson.Optional   `json:"confirmation_policy"`
	MaxConversationsPerSandbox *int                  `json:"max_conversations_per_sandbox" acs:"ge=1,le=1000"`
}

func settingsJSON(s acs.Settings, saved bool) SettingsJSON {
	out := SettingsJSON{SandboxGroupingStrategy: string(s.SandboxGroupingStrategy), LLMModel: s.LLMModel,
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
	return out
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
	var req SettingsRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	var errs strictjson.Errors
	model, modelSet := optString(req.LLMModel, "llm_model", &errs)
	base, baseSet := optString(req.LLMBaseURL, "llm_base_url", &errs)
	key, keySet := optString(req.LLMAPIKey, "llm_api_key", &errs)
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
	})
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, settingsJSON(s, true))
}
