package api

import (
	"net/http"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// webClientUpdatedAt is when the web client configuration's messages last
// changed (the frontend shows error_message again only after it moves).
var webClientUpdatedAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// WebClientConfig is what the OpenHands web frontend reads first on every
// page. Nothing in it is secret. providers_configured lists the git
// providers the caller has a token for when the request authenticates, and
// is empty otherwise; auth_url is ACS's sign-in page.
func WebClientConfig(providers []string) v1wire.WebClientConfig {
	login := "/login"
	if providers == nil {
		providers = []string{}
	}
	return v1wire.WebClientConfig{AppMode: "oss", FeatureFlags: v1wire.FeatureFlags{HideUsersPage: true, HideBillingPage: true},
		ProvidersConfigured: providers, AuthURL: &login, FaultyModels: []string{}, UpdatedAt: events.At(webClientUpdatedAt)}
}

// getWebClientConfig: GET /api/v1/web-client/config (no authentication
// required).
func (a *API) getWebClientConfig(w http.ResponseWriter, r *http.Request) {
	var providers []string
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
		}
	}
	httpjson.WriteJSON(w, http.StatusOK, WebClientConfig(providers))
}
