package api

import (
	"net/http"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/llmhealth"
	"github.com/acs-project/acs/shared/v1wire"
)

// webClientUpdatedAt is when the web client configuration's messages last
// changed (the frontend shows error_message again only after it moves).
var webClientUpdatedAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// WebClientConfig is what the OpenHands web frontend reads first on every
// page. Nothing in it is secret. providers_configured lists the git
// providers the caller has a token for when the request authenticates, and
// is empty otherwise; auth_url is ACS's sign-in page; llm is the
// installation's LLM health, and when it is unusable error_message says so
// (the frontend's banner) unless ownLLM (the caller saved an LLM key or
// base URL of their own, which agents use instead).
func WebClientConfig(providers []string, health llmhealth.Health, ownLLM bool) v1wire.WebClientConfig {
	login := "/login"
	if providers == nil {
		providers = []string{}
	}
	out := v1wire.WebClientConfig{AppMode: "oss", FeatureFlags: v1wire.FeatureFlags{HideUsersPage: true, HideBillingPage: true},
		ProvidersConfigured: providers, AuthURL: &login, FaultyModels: []string{}, UpdatedAt: events.At(webClientUpdatedAt),
		LLM: v1wire.LLMHealth{Status: health.Status, Detail: health.Detail}}
	if out.LLM.Status == "" {
		out.LLM.Status, out.LLM.Detail = llmhealth.StatusUnknown, "not checked"
	}
	if !health.CheckedAt.IsZero() {
		at := events.At(health.CheckedAt)
		out.LLM.CheckedAt = &at
		// The frontend shows a message again only once updated_at moves.
		out.UpdatedAt = at
	}
	if health.Status == llmhealth.StatusUnusable && !ownLLM {
		msg := "Agents cannot run: no usable LLM (" + health.Detail + ") Set LLM_MODEL, LLM_BASE_URL and LLM_API_KEY, or save an LLM key in your settings."
		out.ErrorMessage = &msg
	}
	return out
}

// getWebClientConfig: GET /api/v1/web-client/config (no authentication
// required).
func (a *API) getWebClientConfig(w http.ResponseWriter, r *http.Request) {
	var providers []string
	ownLLM := false
	u, ok := acs.UserFrom(r.Context())
	// An open route: behind API Gateway no authorizer runs for it, so it
	// resolves the caller's key or session itself (in every deployment).
	_, cookieErr := r.Cookie(SessionCookie)
	if !ok && (r.Header.Get("Authorization") != "" || cookieErr == nil) {
		if au, _, err := a.authenticateUser(r); err == nil {
			u, ok = au, true
		}
	}
	if ok {
		if st, _, err := a.accounts.Settings(r.Context(), u.ID); err == nil {
			for _, t := range st.ProviderTokens {
				providers = append(providers, t.Provider)
			}
			ownLLM = st.LLMAPIKeySealed != "" || (st.LLMBaseURL != nil && *st.LLMBaseURL != "")
		}
	}
	var health llmhealth.Health
	if a.d.LLMHealth != nil {
		health = a.d.LLMHealth()
	}
	httpjson.WriteJSON(w, http.StatusOK, WebClientConfig(providers, health, ownLLM))
}
