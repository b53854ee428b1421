package skills

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Request is the body of the agent server's POST /api/skills. It is meant to
// be decoded with strictjson (unknown keys are rejected; the load_* flags
// default to true).
type Request struct {
	LoadPublic  bool `json:"load_public" acs:"default=true"`
	LoadUser    bool `json:"load_user" acs:"default=true"`
	LoadProject bool `json:"load_project" acs:"default=true"`
	LoadOrg     bool `json:"load_org" acs:"default=true"`
	// MarketplacePath is accepted for compatibility and ignored: public
	// skills come from Dirs.Public.
	MarketplacePath *string `json:"marketplace_path"`
	// RegisteredMarketplaces is accepted for compatibility and ignored.
	RegisteredMarketplaces json.RawMessage `json:"registered_marketplaces" acs:"nullable"`
	// ProjectDir is the workspace directory whose project skills load when
	// LoadProject is set.
	ProjectDir *string `json:"project_dir"`
	// OrgConfigs and OrgConfig are accepted for compatibility; org skills come
	// from Dirs.Org (no repository is cloned).
	OrgConfigs []OrgConfig `json:"org_configs" acs:"nullable"`
	OrgConfig  *OrgConfig  `json:"org_config"`
	// SandboxConfig lists the sandbox's exposed URLs; those named WORKER_*
	// become the always-on "work_hosts" sandbox skill.
	SandboxConfig *SandboxConfig `json:"sandbox_config"`
}

// OrgConfig names an organization skills repository.
type OrgConfig struct {
	Repository string `json:"repository" acs:"nullable"`
	Provider   string `json:"provider" acs:"nullable"`
	OrgRepoURL string `json:"org_repo_url" acs:"nullable"`
	OrgName    string `json:"org_name" acs:"nullable"`
}

// SandboxConfig describes the sandbox.
type SandboxConfig struct {
	ExposedURLs []ExposedURL `json:"exposed_urls"`
}

// ExposedURL is one URL the sandbox exposes.
type ExposedURL struct {
	Name string `json:"name" acs:"required"`
	URL  string `json:"url" acs:"required"`
	Port int    `json:"port" acs:"required"`
}

// Response is the body POST /api/skills returns.
type Response struct {
	// Skills are the merged skills, sorted by name (never nil).
	Skills []Skill `json:"skills"`
	// Sources counts the skills loaded per source before merging; it always
	// has the keys sandbox, public, user, org and project.
	Sources map[string]int `json:"sources"`
	// Errors are the files that could not be loaded (never nil).
	Errors []Problem `json:"errors"`
}

// Dirs says where each source's skills live, as configured by the agent
// server. An empty string means the source has no directory.
type Dirs struct {
	User, Org, Public, Sandbox string
}

// WorkerURLPrefix marks exposed URLs that become the work_hosts skill.
const WorkerURLPrefix = "WORKER_"

// Handle loads the skills a request asks for and merges them:
//
//   - sandbox: Dirs.Sandbox (always, when set) plus a generated repo skill
//     "work_hosts" listing the request's WORKER_* exposed URLs;
//   - public, user, org: Dirs.Public, Dirs.User (with its enabled
//     installed skills, LoadUser), Dirs.Org when the matching
//     load_* flag is set;
//   - project: LoadDir(*ProjectDir, "project") when LoadProject is set and
//     ProjectDir is non-empty; a project directory that does not exist is
//     reported as a problem.
//
// Skills are merged with Merge (project wins over org over user over public
// over sandbox). Problems from every source are returned in that loading
// order. Handle does not touch the network.
func Handle(req Request, dirs Dirs) Response {
	resp := Response{
		Skills:  []Skill{},
		Sources: map[string]int{SourceSandbox: 0, SourcePublic: 0, SourceUser: 0, SourceOrg: 0, SourceProject: 0},
		Errors:  []Problem{},
	}
	var sets [][]Skill
	add := func(source string, sks []Skill, probs []Problem) {
		resp.Sources[source] += len(sks)
		resp.Errors = append(resp.Errors, probs...)
		sets = append(sets, sks)
	}

	if req.SandboxConfig != nil {
		if sk, ok := workHostsSkill(req.SandboxConfig.ExposedURLs); ok {
			add(SourceSandbox, []Skill{sk}, nil)
		}
	}
	if dirs.Sandbox != "" {
		sks, probs := LoadDir(dirs.Sandbox, SourceSandbox)
		add(SourceSandbox, sks, probs)
	}
	if req.LoadPublic && dirs.Public != "" {
		sks, probs := LoadDir(dirs.Public, SourcePublic)
		add(SourcePublic, sks, probs)
	}
	if req.LoadUser && dirs.User != "" {
		sks, probs := LoadUser(dirs.User)
		add(SourceUser, sks, probs)
	}
	if req.LoadOrg && dirs.Org != "" {
		sks, probs := LoadDir(dirs.Org, SourceOrg)
		add(SourceOrg, sks, probs)
	}
	if req.LoadProject && req.ProjectDir != nil && strings.TrimSpace(*req.ProjectDir) != "" {
		dir := *req.ProjectDir
		st, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			resp.Errors = append(resp.Errors, Problem{File: dir, Error: "project directory does not exist"})
		case err != nil:
			resp.Errors = append(resp.Errors, Problem{File: dir, Error: "cannot access project directory: " + errText(err)})
		case !st.IsDir():
			resp.Errors = append(resp.Errors, Problem{File: dir, Error: "project_dir is not a directory"})
		default:
			sks, probs := LoadDir(filepath.Clean(dir), SourceProject)
			add(SourceProject, sks, probs)
		}
	}
	resp.Skills = Merge(sets...)
	return resp
}

// workHostsSkill builds the sandbox skill telling the agent which hosts serve
// its web applications.
func workHostsSkill(urls []ExposedURL) (Skill, bool) {
	var lines []string
	for _, u := range urls {
		if strings.HasPrefix(u.Name, WorkerURLPrefix) {
			lines = append(lines, "* "+u.URL+" (port "+strconv.Itoa(u.Port)+")")
		}
	}
	if len(lines) == 0 {
		return Skill{}, false
	}
	return Skill{
		Name:     "work_hosts",
		Type:     TypeRepo,
		Content:  "The user has access to the following hosts for accessing a web application, each of which has a corresponding port:\n" + strings.Join(lines, "\n"),
		Triggers: []string{},
		Source:   SourceSandbox,
	}, true
}
