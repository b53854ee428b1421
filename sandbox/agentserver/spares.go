package agentserver

import (
	"os/exec"
	"path/filepath"

	"github.com/acs-project/acs/sandbox/agent"
	"github.com/acs-project/acs/sandbox/gitreview"
	"github.com/acs-project/acs/sandbox/spare"
)

// sparesDir holds the spare directories, in the conversations directory
// (which lists only directories with a meta file as conversations).
const sparesDir = ".spares"

// newSpares starts the pools of spare directories a create renames into
// place instead of making (a new file or directory costs a millisecond of
// kernel time on some file systems): one conversation directory, with the
// files a create makes in it, empty (agent.Prepare), and one
// empty repository's work tree for a new working directory (without git,
// none: Init makes no repository then either). A workspace on another
// file system than the conversations directory turns its pool off at the
// first create.
func (s *Server) newSpares() {
	root := filepath.Join(s.cfg.ConversationsDir, sparesDir)
	s.convDirs = spare.New(filepath.Join(root, "conversations"), 1, 0o700, agent.Prepare)
	if _, err := exec.LookPath("git"); err == nil {
		s.workspaces = spare.New(filepath.Join(root, "workspaces"), 1, 0o755, gitreview.MakeEmptyRepo)
	}
}

// takeWorkspace makes dir, a working directory, an empty repository's work
// tree by renaming a spare into place, and reports whether it did. It does
// not when dir exists, its parent does not, or its parent is (or may be)
// in a repository (gitreview.Init makes none inside one): then the create
// makes dir and gitreview.Init sees to it.
func (s *Server) takeWorkspace(dir string) bool {
	if s.workspaces == nil || !filepath.IsAbs(dir) {
		return false
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if gitreview.InRepo(parent) {
		return false
	}
	return s.workspaces.Take(dir)
}

// fillSpares has the pools make the spares taken (in the background).
func (s *Server) fillSpares() {
	s.convDirs.Fill()
	if s.workspaces != nil {
		s.workspaces.Fill()
	}
}
