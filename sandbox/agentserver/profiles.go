package agentserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/agent"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/agentwire/llmconfig"
	"github.com/acs-project/acs/sandbox/atomicfile"
	"github.com/acs-project/acs/sandbox/secrets"
)

// LLM profiles: named LLM configurations saved on the agent server
// (GET/POST/DELETE /api/profiles/{name}, .../activate, .../rename), one of
// them active (the server's default LLM: its endpoint lists the models),
// and POST /api/conversations/{id}/switch_profile.
//
// Each profile is <ProfilesDir>/llm/<name>.json, its credentials (api_key
// and the AWS keys) sealed with the server's cipher (OH_SECRET_KEY, else the
// first session key); without a cipher they are kept in memory only and
// lost on restart, as conversation secrets are. The active profile's name
// is <ProfilesDir>/active.json. Every credential is added to the secret
// masker the moment it is known, so no response, event or log line shows
// it (except GET /api/profiles/{name} with X-Expose-Secrets: plaintext).

// maxProfiles bounds how many profiles may be saved (as in OpenHands).
const maxProfiles = 50

var errProfileNotFound = errors.New("profile not found")

type profileStore struct {
	dir    string
	cipher *secrets.Cipher
	masker *secrets.Masker

	mu  sync.Mutex
	mem map[string]llmconfig.Config // credentials by profile, without a cipher
}

// credentials are the pointers to an LLM configuration's secret fields.
func credentials(c *llmconfig.Config) []**string {
	return []**string{&c.APIKey, &c.AWSAccessKeyID, &c.AWSSecretAccessKey, &c.AWSSessionToken}
}

func (p *profileStore) path(name string) string { return filepath.Join(p.dir, "llm", name+".json") }

// names lists the saved profiles, sorted.
func (p *profileStore) names() []string {
	entries, err := os.ReadDir(filepath.Join(p.dir, "llm"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && !e.IsDir() && agentwire.ValidProfileName(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// load returns a profile with its credentials opened. It returns
// errProfileNotFound for an unknown one.
func (p *profileStore) load(name string) (llmconfig.Config, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loadLocked(name)
}

func (p *profileStore) loadLocked(name string) (llmconfig.Config, error) {
	var c llmconfig.Config
	if !agentwire.ValidProfileName(name) {
		return c, errProfileNotFound
	}
	b, err := os.ReadFile(p.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return c, errProfileNotFound
	}
	if err != nil {
		return c, fmt.Errorf("read profile %s: %w", name, err)
	}
	if err := strictjson.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("read profile %s: %w", name, err)
	}
	if p.cipher == nil {
		mem := p.mem[name]
		for i, f := range credentials(&c) {
			*f = *credentials(&mem)[i]
		}
		return c, nil
	}
	for _, f := range credentials(&c) {
		if *f == nil {
			continue
		}
		v, err := p.cipher.Open(**f)
		if err != nil {
			return c, fmt.Errorf("open profile %s's credentials: %w", name, err)
		}
		p.masker.Add(v)
		*f = &v
	}
	return c, nil
}

// save stores a profile (replacing one of the same name). It returns an
// error wrapping errTooManyProfiles when it would be one too many.
func (p *profileStore) save(name string, c llmconfig.Config) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := os.Stat(p.path(name)); errors.Is(err, fs.ErrNotExist) && len(p.names()) >= maxProfiles {
		return errTooManyProfiles
	}
	for _, f := range credentials(&c) {
		if *f != nil {
			p.masker.Add(**f)
		}
	}
	return p.writeLocked(name, c)
}

var errTooManyProfiles = fmt.Errorf("Profile limit reached (%d). Delete a profile before saving a new one.", maxProfiles)

func (p *profileStore) writeLocked(name string, c llmconfig.Config) error {
	stored := c
	if p.cipher == nil {
		if p.mem == nil {
			p.mem = map[string]llmconfig.Config{}
		}
		var mem llmconfig.Config
		for i, f := range credentials(&stored) {
			*credentials(&mem)[i], *f = *f, nil
		}
		p.mem[name] = mem
	} else {
		for _, f := range credentials(&stored) {
			if *f != nil {
				v := p.cipher.Seal(**f)
				*f = &v
			}
		}
	}
	b, err := strictjson.Marshal(stored)
	if err != nil {
		return fmt.Errorf("encode profile %s: %w", name, err)
	}
	if err := os.MkdirAll(filepath.Join(p.dir, "llm"), 0o700); err != nil {
		return fmt.Errorf("save profile %s: %w", name, err)
	}
	if err := atomicfile.Write(p.path(name), b, 0o600); err != nil {
		return fmt.Errorf("save profile %s: %w", name, err)
	}
	return nil
}

// remove deletes a profile (no error when there is none) and clears the
// active profile when it was this one.
func (p *profileStore) remove(name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := os.Remove(p.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete profile %s: %w", name, err)
	}
	delete(p.mem, name)
	if p.activeLocked() == name {
		return p.setActiveLocked("")
	}
	return nil
}

// rename moves a profile; the active profile follows. It returns
// errProfileNotFound or errProfileExists.
func (p *profileStore) rename(from, to string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, err := p.loadLocked(from)
	if err != nil {
		return err
	}
	if from == to {
		return nil
	}
	if _, err := os.Stat(p.path(to)); err == nil {
		return errProfileExists
	}
	if err := p.writeLocked(to, c); err != nil {
		return err
	}
	if err := os.Remove(p.path(from)); err != nil {
		return fmt.Errorf("rename profile %s: %w", from, err)
	}
	delete(p.mem, from)
	if p.activeLocked() == from {
		return p.setActiveLocked(to)
	}
	return nil
}

var errProfileExists = errors.New("profile exists")

type activeFile struct {
	ActiveProfile *string `json:"active_profile"`
}

// active returns the active profile's name ("" for none).
func (p *profileStore) active() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.activeLocked()
}

func (p *profileStore) activeLocked() string {
	b, err := os.ReadFile(filepath.Join(p.dir, "active.json"))
	if err != nil {
		return ""
	}
	var a activeFile
	if json.Unmarshal(b, &a) != nil || a.ActiveProfile == nil {
		return ""
	}
	return *a.ActiveProfile
}

// activate makes a saved profile the active one (errProfileNotFound
// otherwise).
func (p *profileStore) activate(name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.loadLocked(name); err != nil {
		return err
	}
	return p.setActiveLocked(name)
}

func (p *profileStore) setActiveLocked(name string) error {
	a := activeFile{}
	if name != "" {
		a.ActiveProfile = &name
	}
	b, _ := json.Marshal(a)
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("save the active profile: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(p.dir, "active.json"), b, 0o600); err != nil {
		return fmt.Errorf("save the active profile: %w", err)
	}
	return nil
}

// activeLLM returns the active profile's configuration, if any.
func (p *profileStore) activeLLM() (llmconfig.Config, bool) {
	name := p.active()
	if name == "" {
		return llmconfig.Config{}, false
	}
	c, err := p.load(name)
	if err != nil {
		return c, false
	}
	return c, true
}

// models lists the saved profiles' models.
func (p *profileStore) models() []string {
	var out []string
	for _, n := range p.names() {
		if c, err := p.load(n); err == nil && c.Model != "" {
			out = append(out, c.Model)
		}
	}
	return out
}

func (s *Server) profileRoutes(api func(string, http.HandlerFunc)) {
	api("GET /api/profiles", s.listProfiles)
	api("GET /api/profiles/{name}", s.getProfile)
	api("POST /api/profiles/{name}", s.saveProfile)
	api("DELETE /api/profiles/{name}", s.deleteProfile)
	api("POST /api/profiles/{name}/activate", s.activateProfile)
	api("POST /api/profiles/{name}/rename", s.renameProfile)
	api("POST /api/conversations/{id}/switch_profile", s.withConversation(s.switchProfile))
	api("POST /api/conversations/{id}/switch_llm", s.withConversation(s.switchLLM))
	api("POST /api/conversations/{id}/switch_acp_model", s.withConversation(s.switchACPModel))
}

// profileName returns the {name} path value, or answers 422.
func profileName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("name")
	if !agentwire.ValidProfileName(name) {
		httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"path", "name"}, Msg: agentwire.ProfileNameMsg, Type: "string_pattern_mismatch"}})
		return "", false
	}
	return name, true
}

// profileError answers a profile store error.
func profileError(w http.ResponseWriter, name string, err error) {
	switch {
	case errors.Is(err, errProfileNotFound):
		httpjson.WriteDetail(w, http.StatusNotFound, fmt.Sprintf("Profile '%s' not found", name))
	case errors.Is(err, errTooManyProfiles):
		httpjson.WriteDetail(w, http.StatusConflict, err.Error())
	default:
		slog.Error("agent server: profile store", "profile", name, "error", err)
		httpjson.WriteDetail(w, http.StatusInternalServerError, "Could not access the profile store")
	}
}

func (s *Server) listProfiles(w http.ResponseWriter, _ *http.Request) {
	out := agentwire.ProfileList{Profiles: []agentwire.ProfileInfo{}}
	for _, n := range s.profiles.names() {
		c, err := s.profiles.load(n)
		if err != nil {
			slog.Warn("agent server: unreadable profile left out of the list", "profile", n, "error", err)
			continue
		}
		info := agentwire.ProfileInfo{Name: n, BaseURL: c.BaseURL, APIKeySet: c.APIKey != nil && strings.TrimSpace(*c.APIKey) != ""}
		if c.Model != "" {
			m := c.Model
			info.Model = &m
		}
		out.Profiles = append(out.Profiles, info)
	}
	if a := s.profiles.active(); a != "" {
		out.ActiveProfile = &a
	}
	httpjson.WriteJSON(w, http.StatusOK, out)
}

// getProfile answers a profile's configuration. Its credentials are null
// unless X-Expose-Secrets asks for them: "encrypted" (or "true") gives them
// sealed with the server's cipher (503 without one; POST accepts them back),
// "plaintext" in clear. Any other value is a 400.
func (s *Server) getProfile(w http.ResponseWriter, r *http.Request) {
	name, ok := profileName(w, r)
	if !ok {
		return
	}
	mode := strings.ToLower(strings.TrimSpace(r.Header.Get("X-Expose-Secrets")))
	switch mode {
	case "", "plaintext", "encrypted":
	case "true":
		mode = "encrypted"
	default:
		httpjson.WriteDetail(w, http.StatusBadRequest, "Invalid X-Expose-Secrets header value: valid values are 'encrypted' and 'plaintext'.")
		return
	}
	c, err := s.profiles.load(name)
	if err != nil {
		profileError(w, name, err)
		return
	}
	keySet := c.APIKey != nil && strings.TrimSpace(*c.APIKey) != ""
	switch mode {
	case "":
		for _, f := range credentials(&c) {
			*f = nil
		}
	case "encrypted":
		if s.cipher == nil {
			httpjson.WriteDetail(w, http.StatusServiceUnavailable, "Encryption not available: OH_SECRET_KEY is not configured. Cannot return encrypted secrets.")
			return
		}
		for _, f := range credentials(&c) {
			if *f != nil {
				v := s.cipher.Seal(**f)
				*f = &v
			}
		}
	}
	cfg, err := strictjson.Marshal(c)
	if err != nil {
		profileError(w, name, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, agentwire.ProfileDetail{Name: name, Config: cfg, APIKeySet: keySet})
}

// openSealed replaces credentials sealed by this server (as GET with
// X-Expose-Secrets: encrypted gives them) by their values; a sealed value
// that does not open is a 422.
func (s *Server) openSealed(w http.ResponseWriter, c *llmconfig.Config, loc ...any) bool {
	for i, f := range credentials(c) {
		if *f == nil || !secrets.IsSealed(**f) {
			continue
		}
		var v string
		err := errors.New("no OH_SECRET_KEY to open it with")
		if s.cipher != nil {
			v, err = s.cipher.Open(**f)
		}
		if err != nil {
			field := []string{"api_key", "aws_access_key_id", "aws_secret_access_key", "aws_session_token"}[i]
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: append(slices.Clone(loc), field), Msg: "Sealed value does not open: " + err.Error(), Type: "value_error"}})
			return false
		}
		*f = &v
	}
	return true
}

func (s *Server) saveProfile(w http.ResponseWriter, r *http.Request) {
	name, ok := profileName(w, r)
	if !ok {
		return
	}
	var req agentwire.SaveProfileRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	if !s.openSealed(w, &req.LLM, "body", "llm") {
		return
	}
	if req.IncludeSecrets != nil && !*req.IncludeSecrets {
		for _, f := range credentials(&req.LLM) {
			*f = nil
		}
	}
	if err := s.profiles.save(name, req.LLM); err != nil {
		profileError(w, name, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusCreated, agentwire.ProfileMutation{Name: name, Message: fmt.Sprintf("Profile '%s' saved", name)})
}

func (s *Server) deleteProfile(w http.ResponseWriter, r *http.Request) {
	name, ok := profileName(w, r)
	if !ok {
		return
	}
	if err := s.profiles.remove(name); err != nil {
		profileError(w, name, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, agentwire.ProfileMutation{Name: name, Message: fmt.Sprintf("Profile '%s' deleted", name)})
}

func (s *Server) activateProfile(w http.ResponseWriter, r *http.Request) {
	name, ok := profileName(w, r)
	if !ok {
		return
	}
	if err := s.profiles.activate(name); err != nil {
		profileError(w, name, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, agentwire.ActivateProfileResponse{Name: name,
		Message: fmt.Sprintf("Profile '%s' activated and applied to current settings", name), LLMApplied: true})
}

func (s *Server) renameProfile(w http.ResponseWriter, r *http.Request) {
	name, ok := profileName(w, r)
	if !ok {
		return
	}
	var req agentwire.RenameProfileRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	err := s.profiles.rename(name, req.NewName)
	switch {
	case errors.Is(err, errProfileExists):
		httpjson.WriteDetail(w, http.StatusConflict, fmt.Sprintf("Profile '%s' already exists", req.NewName))
		return
	case err != nil:
		profileError(w, name, err)
		return
	}
	msg := fmt.Sprintf("Profile '%s' renamed to '%s'", name, req.NewName)
	if name == req.NewName {
		msg = fmt.Sprintf("Profile '%s' unchanged (same name)", name)
	}
	httpjson.WriteJSON(w, http.StatusOK, agentwire.ProfileMutation{Name: req.NewName, Message: msg})
}

// switchProfile makes the conversation's next LLM calls use a saved
// profile; the agent's usage_id is kept, so its metrics go on accumulating
// under the same key.
func (s *Server) switchProfile(w http.ResponseWriter, r *http.Request, c *agent.Conversation) {
	var req agentwire.SwitchProfileRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	cfg, err := s.profiles.load(req.ProfileName)
	if err != nil {
		profileError(w, req.ProfileName, err)
		return
	}
	if a := c.Request().Agent; a != nil {
		cfg.UsageID = a.LLM.UsageID
	}
	if err := c.SwitchLLM(r.Context(), cfg); err != nil {
		conversationError(w, err)
		return
	}
	ok(w)
}

// switchLLM makes the conversation's next LLM calls use the given LLM
// configuration (credentials sealed by this server are opened first). The
// caller owns usage_id: metrics are kept by it.
func (s *Server) switchLLM(w http.ResponseWriter, r *http.Request, c *agent.Conversation) {
	var req agentwire.SwitchLLMRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	if !s.openSealed(w, &req.LLM, "body", "llm") {
		return
	}
	if err := c.SwitchLLM(r.Context(), req.LLM); err != nil {
		conversationError(w, err)
		return
	}
	ok(w)
}

// switchACPModel switches the model of an ACP conversation. ACS runs no
// ACP agents, so every conversation answers 400.
func (s *Server) switchACPModel(w http.ResponseWriter, r *http.Request, c *agent.Conversation) {
	var req agentwire.SwitchACPModelRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	httpjson.WriteDetail(w, http.StatusBadRequest, "switch_acp_model is only supported for ACP conversations; this conversation's agent is not an ACP agent (use switch_llm)")
}

// exposesProfileSecrets reports a request for a profile's credentials in
// clear (the one response the secret masker does not filter).
func exposesProfileSecrets(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/profiles/") &&
		strings.ToLower(strings.TrimSpace(r.Header.Get("X-Expose-Secrets"))) == "plaintext"
}
