package agentwire

// The bodies of the agent server's installed-skills API
// (/api/skills/install, /api/skills/installed/...).

// InstallSkillRequest is the body of POST /api/skills/install: Source is an
// absolute path in the sandbox, a git URL or github:owner/repo[/path]; Ref a
// branch or tag; RepoPath the skill's directory in the repository; Force
// replaces an installed skill of the same name.
type InstallSkillRequest struct {
	Source   string  `json:"source" acs:"required"`
	Ref      *string `json:"ref,omitempty"`
	RepoPath *string `json:"repo_path,omitempty"`
	Force    bool    `json:"force"`
}

// InstalledSkill describes an installed skill (OpenHands'
// InstalledSkillResponse). Source is as given to the install, without the
// credentials of a URL.
type InstalledSkill struct {
	Name        string  `json:"name"`
	Version     string  `json:"version"`
	Description string  `json:"description"`
	Enabled     bool    `json:"enabled"`
	Source      string  `json:"source"`
	ResolvedRef *string `json:"resolved_ref" acs:"emitnull"`
	RepoPath    *string `json:"repo_path" acs:"emitnull"`
	InstalledAt string  `json:"installed_at"`
	InstallPath string  `json:"install_path"`
}
