package agentserver

import (
	"errors"
	"net/http"
	"os"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/internal/pathguard"
	"github.com/acs-project/acs/sandbox/hooks"
	"github.com/acs-project/acs/sandbox/skills"
)

// POST /api/skills and POST /api/hooks: what a project directory (inside
// the workspace or a conversation's working directory) configures.

// projectDir checks a requested project directory against the server's
// roots; on failure it writes the 422 and returns false.
func (s *Server) projectDir(w http.ResponseWriter, p string, loc string) (string, bool) {
	dir, err := pathguard.Resolve(s.roots(), p)
	if err != nil {
		httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"body", loc}, Type: "value_error",
			Msg: "project_dir must be an absolute path inside the workspace: " + err.Error()}})
		return "", false
	}
	return dir, true
}

func (s *Server) listSkills(w http.ResponseWriter, r *http.Request) {
	var req skills.Request
	if !httpjson.DecodeBody(w, r, &req, true) {
		return
	}
	if req.ProjectDir != nil && *req.ProjectDir != "" {
		dir, ok := s.projectDir(w, *req.ProjectDir, "project_dir")
		if !ok {
			return
		}
		req.ProjectDir = &dir
	}
	httpjson.WriteJSON(w, http.StatusOK, skills.Handle(req, s.cfg.SkillDirs))
}

func (s *Server) listHooks(w http.ResponseWriter, r *http.Request) {
	var req hooks.Request
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	dir, ok := s.projectDir(w, req.ProjectDir, "project_dir")
	if !ok {
		return
	}
	cfg, err := hooks.LoadFile(dir)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			httpjson.WriteDetail(w, http.StatusForbidden, err.Error())
			return
		}
		httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"body", "project_dir"}, Msg: err.Error(), Type: "value_error"}})
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, hooks.Response{HookConfig: cfg})
}
