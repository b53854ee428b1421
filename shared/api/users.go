package api

import (
	"net/http"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/v1wire"
)

// Users and API keys. Keys are stored only as SHA-256 hashes; a key's value
// is shown once, when it is made. A revoked key stops working at once.

// KeyPrefixLen is how much of a key is kept to recognise it.
const KeyPrefixLen = accounts.KeyPrefixLen

// AdminID is the id of the installation's admin user.
const AdminID = accounts.AdminID

func newKeyJSON(k accounts.NewKey) v1wire.NewKey {
	return v1wire.NewKey{ID: k.ID, Name: k.Name, Key: k.Key, CreatedAt: events.At(k.CreatedAt)}
}

// createUser: POST /api/v1/users {"name"} (admins only) makes a user and
// returns its first key once.
func (a *API) createUser(w http.ResponseWriter, r *http.Request) {
	if err := accounts.CanCreateUsers(userOf(r)); err != nil {
		writeErr(w, err)
		return
	}
	var req v1wire.NameRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	u, key, err := a.accounts.CreateUser(r.Context(), userOf(r), req.Name)
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusCreated, v1wire.NewUser{User: v1wire.User{ID: u.ID, Name: u.Name, Admin: u.Admin, CreatedAt: events.At(u.CreatedAt)}, Key: newKeyJSON(key)})
}

// getMe: GET /api/v1/users/me.
func (a *API) getMe(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	httpjson.WriteJSON(w, http.StatusOK, v1wire.User{ID: u.ID, Name: u.Name, Admin: u.Admin, CreatedAt: events.At(u.CreatedAt)})
}

// createKey: POST /api/v1/keys {"name"} returns {"id","name","key"} (the key
// shown once).
func (a *API) createKey(w http.ResponseWriter, r *http.Request) {
	var req v1wire.NameRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	key, err := a.accounts.CreateKey(r.Context(), userOf(r).ID, req.Name)
	if err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusCreated, newKeyJSON(key))
}

// listKeys: GET /api/v1/keys — the caller's keys, without values.
func (a *API) listKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := a.accounts.Keys(r.Context(), userOf(r).ID)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([]v1wire.Key, 0, len(keys))
	for _, k := range keys {
		out = append(out, v1wire.Key{ID: k.ID, Name: k.Name, Prefix: k.Prefix, CreatedAt: events.At(k.CreatedAt)})
	}
	httpjson.WriteJSON(w, http.StatusOK, out)
}

// deleteKey: DELETE /api/v1/keys/{key_id} revokes one of the caller's keys
// at once.
func (a *API) deleteKey(w http.ResponseWriter, r *http.Request) {
	if err := a.accounts.DeleteKey(r.Context(), userOf(r).ID, r.PathValue("key_id")); err != nil {
		writeErr(w, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, agentwire.Success{Success: true})
}
