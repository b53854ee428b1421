package api

import (
	"fmt"
	"net/http"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/wire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/startflow"
)

// A user's stored secrets reach every conversation they start (a start
// request's own secrets win on a name clash). Values are sealed at rest and
// never returned.

// SecretJSON describes a stored secret (never its value).
type SecretJSON struct {
	Name        string      `json:"name"`
	Description *string     `json:"description" acs:"emitnull"`
	CreatedAt   events.Time `json:"created_at"`
	UpdatedAt   events.Time `json:"updated_at"`
}

func secretJSON(s acs.Secret) SecretJSON {
	out := SecretJSON{Name: s.Name, CreatedAt: events.At(s.CreatedAt), UpdatedAt: events.At(s.UpdatedAt)}
	if s.Description != "" {
		d := s.Description
		out.Description = &d
	}
	return out
}

// CreateSecretRequest is the body of POST /api/v1/secrets.
type CreateSecretRequest struct {
	Name        string  `json:"name" acs:"required"`
	Value       string  `json:"value" acs:"required"`
	Description *string `json:"description" acs:"maxlen=1000"`
}

// ValidateStrict checks the name and the value's size.
func (r *CreateSecretRequest) ValidateStrict() []strictjson.Error {
	var errs []strictjson.Error
	if msg := startflow.SecretNameProblem(r.Name); msg != "" {
		errs = append(errs, strictjson.Error{Loc: []any{"name"}, Msg: msg, Type: "value_error"})
	}
	errs = append(errs, valueProblems(&r.Value)...)
	return errs
}

func valueProblems(v *string) []strictjson.Error {
	switch {
	case v == nil:
		return nil
	case *v == "":
		return []strictjson.Error{{Loc: []any{"value"}, Msg: "String should have at least 1 character", Type: "string_too_short"}}
	case len(*v) > startflow.MaxSecretValueSize:
		return []strictjson.Error{{Loc: []any{"value"}, Msg: fmt.Sprintf("secret values are at most %d bytes", startflow.MaxSecretValueSize), Type: "string_too_long"}}
	}
	return nil
}

// UpdateSecretRequest is the body of PUT /api/v1/secrets/{name}.
type UpdateSecretRequest struct {
	Value       *string `json:"value"`
	Description *string `json:"description" acs:"maxlen=1000"`
}

// ValidateStrict checks the value's size.
func (r *UpdateSecretRequest) ValidateStrict() []strictjson.Error { return valueProblems(r.Value) }

// listSecrets: GET /api/v1/secrets.
func (a *API) listSecrets(w http.ResponseWriter, r *http.Request) {
	list, err := a.accounts.Secrets(r.Context(), userOf(r).ID)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := struct {
		Secrets []SecretJSON `json:"secrets"`
	}{Secrets: []SecretJSON{}}
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
