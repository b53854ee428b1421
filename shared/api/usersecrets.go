package api

import (
	"net/http"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/wire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// A user's stored secrets reach every conversation they start (a start
// request's own secrets win on a name clash). Values are sealed at rest and
// never returned.

// SecretJSON describes a stored secret (v1wire's).
type SecretJSON = v1wire.Secret

func secretJSON(s acs.Secret) SecretJSON {
	out := SecretJSON{Name: s.Name, CreatedAt: events.At(s.CreatedAt), UpdatedAt: events.At(s.UpdatedAt)}
	if s.Description != "" {
		d := s.Description
		out.Description = &d
	}
	return out
}

// The secrets bodies (v1wire's).
type (
	CreateSecretRequest = v1wire.CreateSecretRequest
	UpdateSecretRequest = v1wire.UpdateSecretRequest
)

// listSecrets: GET /api/v1/secrets.
func (a *API) listSecrets(w http.ResponseWriter, r *http.Request) {
	list, err := a.accounts.Secrets(r.Context(), userOf(r).ID)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := v1wire.SecretList{Secrets: []SecretJSON{}}
	for _, s := range list {
		out.Secrets = append(out.Secrets, secretJSON(s))
	}
	httpjson.WriteJSON(w, http.StatusOK, out)
}

// createSecret: POST /api/v1/secrets (201; 409 when the name exists).
func (a *API) createSecret(w http.ResponseWriter, r *http.Request) {
	var req CreateSecretRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	s, err := a.accounts.CreateSecret(r.Context(), userOf(r).ID, req.Name, req.Value, req.Description)
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusCreated, secretJSON(s))
}

func (a *API) ownSecret(r *http.Request) (acs.Secret, error) {
	return a.accounts.Secret(r.Context(), userOf(r).ID, r.PathValue("name"))
}

// getSecret: GET /api/v1/secrets/{name} (never the value).
func (a *API) getSecret(w http.ResponseWriter, r *http.Request) {
	s, err := a.ownSecret(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, secretJSON(s))
}

// updateSecret: PUT /api/v1/secrets/{name} (value and/or description).
func (a *API) updateSecret(w http.ResponseWriter, r *http.Request) {
	s, err := a.ownSecret(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var req UpdateSecretRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	if s, err = a.accounts.UpdateSecret(r.Context(), s, req.Value, req.Description); err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, secretJSON(s))
}

// deleteSecret: DELETE /api/v1/secrets/{name}.
func (a *API) deleteSecret(w http.ResponseWriter, r *http.Request) {
	s, err := a.ownSecret(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	if err := a.accounts.DeleteSecret(r.Context(), s); err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, wire.Success{Success: true})
}
