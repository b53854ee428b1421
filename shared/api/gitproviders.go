package api

import (
	"net/http"

	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/v1wire"
)

// setGitProviders: POST /api/v1/secrets/git-providers. The tokens are
// sealed and never returned; they clone selected_repository (as the
// conversation's <PROVIDER>_TOKEN secret) and list repositories.
func (a *API) setGitProviders(w http.ResponseWriter, r *http.Request) {
	var req v1wire.ProviderTokensRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	in := map[string]accounts.ProviderTokenUpdate{}
	for p, t := range req.ProviderTokens {
		in[p] = accounts.ProviderTokenUpdate{Token: t.Token, Host: t.Host}
	}
	if _, err := a.accounts.SetProviderTokens(r.Context(), userOf(r).ID, in); err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, v1wire.Message{Message: "Git providers stored"})
}

// unsetGitProviders: DELETE /api/v1/secrets/git-providers/tokens.
func (a *API) unsetGitProviders(w http.ResponseWriter, r *http.Request) {
	if _, err := a.accounts.SetProviderTokens(r.Context(), userOf(r).ID, nil); err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, v1wire.Message{Message: "Unset Git provider tokens"})
}
