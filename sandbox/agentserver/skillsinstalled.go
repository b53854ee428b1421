package agentserver

import (
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/skills"
)

// setSkillEnabledRequest is the body of PATCH /api/skills/installed/{name}.
type setSkillEnabledRequest struct {
	Enabled bool `json:"enabled" acs:"required"`
}

// installedSkillsDir is where installed skills live: <user skills
// dir>/installed (OpenHands' ~/.openhands/skills/installed), else next to
// the conversations directory.
func installedSkillsDir(cfg Config) string {
	if cfg.SkillDirs.User != "" {
		return filepath.Join(cfg.SkillDirs.User, "installed")
	}
	return filepath.Join(filepath.Dir(cfg.ConversationsDir), "skills", "installed")
}

// installedSkillRoutes mounts OpenHands' installed-skills routes:
//
//	POST   /api/skills/install                  {source, ref?, repo_path?, force?} -> InstalledSkill
//	GET    /api/skills/installed                -> {"skills": [InstalledSkill]}
//	GET    /api/skills/installed/{name}         -> InstalledSkill
//	PATCH  /api/skills/installed/{name}         {enabled} -> {name, enabled}
//	DELETE /api/skills/installed/{name}         -> {message}
//	POST   /api/skills/installed/{name}/refresh -> {message, skill}
//
// A name that is not a skill name is 422 at path.skill_name; a skill that
// is not installed 404 "Skill '<name>' is not installed"; a source that
// cannot be fetched 400, one without a valid SKILL.md 422 (a string
// detail, as OpenHands), an installed name without force 409.
func (s *Server) installedSkillRoutes(api func(string, http.HandlerFunc)) {
	api("POST /api/skills/install", s.installSkill)
	api("GET /api/skills/installed", s.listInstalledSkills)
	api("GET /api/skills/installed/{name}", s.withSkillName(s.getInstalledSkill))
	api("PATCH /api/skills/installed/{name}", s.withSkillName(s.setSkillEnabled))
	api("DELETE /api/skills/installed/{name}", s.withSkillName(s.uninstallSkill))
	api("POST /api/skills/installed/{name}/refresh", s.withSkillName(s.refreshSkill))
}

func (s *Server) withSkillName(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if !skills.ValidName(name) {
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"path", "skill_name"},
				Msg: "String should match pattern '^[a-z0-9]+(-[a-z0-9]+)*$'", Type: "string_pattern_mismatch"}})
			return
		}
		h(w, r, name)
	}
}

// writeSkillError answers an installed-skills error.
func writeSkillError(w http.ResponseWriter, name string, err error) {
	switch {
	case errors.Is(err, skills.ErrNotInstalled):
		httpjson.WriteDetail(w, http.StatusNotFound, "Skill '"+name+"' is not installed")
	case errors.Is(err, skills.ErrAlreadyInstalled):
		httpjson.WriteDetail(w, http.StatusConflict, err.Error())
	case errors.Is(err, skills.ErrFetch):
		httpjson.WriteDetail(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, skills.ErrInvalidSkill):
		httpjson.WriteDetail(w, http.StatusUnprocessableEntity, err.Error())
	default:
		slog.Error("installed skills", "skill", name, "error", err)
		httpjson.WriteDetail(w, http.StatusInternalServerError, "Could not manage the installed skills")
	}
}

func (s *Server) installSkill(w http.ResponseWriter, r *http.Request) {
	var req agentwire.InstallSkillRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	if req.Source == "" {
		httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"body", "source"},
			Msg: "String should have at least 1 character", Type: "string_too_short"}})
		return
	}
	info, err := s.installed.Install(r.Context(), req.Source, req.Ref, req.RepoPath, req.Force)
	if err != nil {
		writeSkillError(w, "", err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, info)
}

func (s *Server) listInstalledSkills(w http.ResponseWriter, _ *http.Request) {
	list, err := s.installed.List()
	if err != nil {
		writeSkillError(w, "", err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, InstalledSkillList{Skills: list})
}

func (s *Server) getInstalledSkill(w http.ResponseWriter, _ *http.Request, name string) {
	info, err := s.installed.Get(name)
	if err != nil {
		writeSkillError(w, name, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, info)
}

func (s *Server) setSkillEnabled(w http.ResponseWriter, r *http.Request, name string) {
	var req setSkillEnabledRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	if err := s.installed.SetEnabled(name, req.Enabled); err != nil {
		writeSkillError(w, name, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, SkillEnabled{Name: name, Enabled: req.Enabled})
}

func (s *Server) uninstallSkill(w http.ResponseWriter, _ *http.Request, name string) {
	if err := s.installed.Uninstall(name); err != nil {
		writeSkillError(w, name, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, SkillMessage{Message: "Skill '" + name + "' uninstalled"})
}

func (s *Server) refreshSkill(w http.ResponseWriter, r *http.Request, name string) {
	info, err := s.installed.Refresh(r.Context(), name)
	if err != nil {
		writeSkillError(w, name, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, SkillRefreshed{Message: "Skill '" + name + "' updated", Skill: info})
}
