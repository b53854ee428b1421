package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/agentwire/settingsschema"
	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/v1wire"
)

// getAgentSchema: GET /api/v1/settings/agent-schema.
func (a *API) getAgentSchema(w http.ResponseWriter, r *http.Request) {
	httpjson.WriteJSON(w, http.StatusOK, settingsschema.Agent())
}

// getConversationSchema: GET /api/v1/settings/conversation-schema.
func (a *API) getConversationSchema(w http.ResponseWriter, r *http.Request) {
	httpjson.WriteJSON(w, http.StatusOK, settingsschema.Conversation())
}

// profileName returns the {name} path value, or answers 422 when it is not
// a profile name.
func profileName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("name")
	if !v1wire.ProfileNameRE.MatchString(name) {
		httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"path", "name"},
			Msg: "String should match pattern '^[A-Za-z0-9._-]{1,64}$'", Type: "string_pattern_mismatch"}})
		return "", false
	}
	return name, true
}

// listProfiles: GET /api/v1/settings/profiles (keys never returned).
func (a *API) listProfiles(w http.ResponseWriter, r *http.Request) {
	list, active, err := a.accounts.LLMProfiles(r.Context(), userOf(r).ID)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := v1wire.ProfileList{Profiles: []v1wire.ProfileInfo{}}
	for _, p := range list {
		out.Profiles = append(out.Profiles, v1wire.ProfileInfo{Name: p.Name, Model: p.Model, BaseURL: p.BaseURL, APIKeySet: p.APIKeySealed != ""})
	}
	if active != "" {
		out.ActiveProfile = &active
	}
	httpjson.WriteJSON(w, http.StatusOK, out)
}

// getProfile: GET /api/v1/settings/profiles/{name} (config.api_key is
// always null).
func (a *API) getProfile(w http.ResponseWriter, r *http.Request) {
	name, ok := profileName(w, r)
	if !ok {
		return
	}
	p, err := a.accounts.LLMProfile(r.Context(), userOf(r).ID, name)
	if err != nil {
		writeErr(w, err)
		return
	}
	cfg := map[string]any{}
	if len(p.Config) > 0 {
		_ = json.Unmarshal(p.Config, &cfg)
	}
	cfg["model"], cfg["base_url"], cfg["api_key"] = p.Model, p.BaseURL, nil
	b, _ := json.Marshal(cfg)
	httpjson.WriteJSON(w, http.StatusOK, v1wire.ProfileDetail{Name: name, Config: b, APIKeySet: p.APIKeySealed != ""})
}

// saveProfile: POST /api/v1/settings/profiles/{name} (201; the body is
// optional).
func (a *API) saveProfile(w http.ResponseWriter, r *http.Request) {
	name, ok := profileName(w, r)
	if !ok {
		return
	}
	var req v1wire.SaveProfileRequest
	if !httpjson.DecodeBody(w, r, &req, true) {
		return
	}
	var in *accounts.ProfileInput
	if len(req.LLM) > 0 && string(req.LLM) != "null" {
		var errs strictjson.Errors
		in = llmProfileInput(req.LLM, &errs)
		if len(errs) > 0 {
			httpjson.WriteValidation(w, errs)
			return
		}
	}
	if err := a.accounts.SaveLLMProfile(r.Context(), userOf(r).ID, name, in, req.IncludeSecrets, req.PreserveExistingAPIKey); err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusCreated, v1wire.ProfileMutation{Name: name, Message: "Profile '" + name + "' saved"})
}

// llmProfileInput checks an LLM object's model, base_url and api_key and
// keeps its other keys for the UI.
func llmProfileInput(llm json.RawMessage, errs *strictjson.Errors) *accounts.ProfileInput {
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(llm, &fields) // an object: decoded strictly already
	in := &accounts.ProfileInput{}
	str := func(name string) *string {
		v, ok := fields[name]
		delete(fields, name)
		if !ok || string(v) == "null" {
			return nil
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			*errs = append(*errs, strictjson.Error{Loc: []any{"body", "llm", name}, Msg: "Input should be a valid string", Type: "string_type"})
			return nil
		}
		return &s
	}
	in.Model, in.BaseURL, in.APIKey = str("model"), str("base_url"), str("api_key")
	if in.Model != nil && (strings.TrimSpace(*in.Model) == "" || len(*in.Model) > 200) {
		*errs = append(*errs, strictjson.Error{Loc: []any{"body", "llm", "model"}, Msg: "model must be 1 to 200 characters", Type: "value_error"})
	}
	if in.BaseURL != nil && *in.BaseURL == "" {
		in.BaseURL = nil
	}
	if in.BaseURL != nil {
		if u, err := url.Parse(*in.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			*errs = append(*errs, strictjson.Error{Loc: []any{"body", "llm", "base_url"}, Msg: "base_url must be an http(s) URL", Type: "url_parsing"})
		}
	}
	if in.APIKey != nil && len(*in.APIKey) > 4096 {
		*errs = append(*errs, strictjson.Error{Loc: []any{"body", "llm", "api_key"}, Msg: "api_key must be at most 4096 characters", Type: "value_error"})
	}
	if len(fields) > 0 {
		in.Config, _ = json.Marshal(fields)
	}
	return in
}

// activateProfile: POST /api/v1/settings/profiles/{name}/activate.
func (a *API) activateProfile(w http.ResponseWriter, r *http.Request) {
	name, ok := profileName(w, r)
	if !ok {
		return
	}
	p, err := a.accounts.ActivateLLMProfile(r.Context(), userOf(r).ID, name)
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, v1wire.ActivateProfileResponse{Name: name, Message: "Switched to profile '" + name + "'", Model: p.Model})
}

// deleteProfile: DELETE /api/v1/settings/profiles/{name} (idempotent).
func (a *API) deleteProfile(w http.ResponseWriter, r *http.Request) {
	name, ok := profileName(w, r)
	if !ok {
		return
	}
	if err := a.accounts.DeleteLLMProfile(r.Context(), userOf(r).ID, name); err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, v1wire.ProfileMutation{Name: name, Message: "Profile '" + name + "' deleted"})
}

// renameProfile: POST /api/v1/settings/profiles/{name}/rename.
func (a *API) renameProfile(w http.ResponseWriter, r *http.Request) {
	name, ok := profileName(w, r)
	if !ok {
		return
	}
	var req v1wire.RenameProfileRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	if err := a.accounts.RenameLLMProfile(r.Context(), userOf(r).ID, name, req.NewName); err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, v1wire.ProfileMutation{Name: req.NewName, Message: "Profile '" + name + "' renamed to '" + req.NewName + "'"})
}
