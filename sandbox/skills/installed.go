package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/acs-project/acs/sandbox/agentwire"
)

// Installed manages the skills installed into a directory (OpenHands'
// ~/.openhands/skills/installed): each is a copy of a SKILL.md directory
// fetched from a local path or a git repository, named after its SKILL.md
// name, and tracked with where it came from and whether it is enabled in
// .installed.json. It is safe for concurrent use.
type Installed struct {
	dir string
	mu  sync.Mutex
	// FetchTimeout bounds one git fetch (default 2 minutes).
	FetchTimeout time.Duration
}

// NewInstalled manages the installed skills of dir (created on first
// install).
func NewInstalled(dir string) *Installed { return &Installed{dir: dir} }

// record is what .installed.json keeps of a skill: the source in full
// (with credentials, for Refresh) and the requested ref.
type record struct {
	agentwire.InstalledSkill
	FullSource   string  `json:"full_source"`
	RequestedRef *string `json:"requested_ref"`
}

// metaFile is the tracking file inside the installed directory.
const metaFile = ".installed.json"

// Errors of the installed-skill operations.
var (
	// ErrNotInstalled: no skill of that name is installed.
	ErrNotInstalled = errors.New("skill not installed")
	// ErrAlreadyInstalled: Install without force found the skill.
	ErrAlreadyInstalled = errors.New("Skill already installed. Use force=true to overwrite.")
	// ErrFetch: the source could not be fetched (no such path, git failed).
	ErrFetch = errors.New("Failed to fetch skill source. Check that the source is valid.")
	// ErrInvalidSkill: the fetched directory holds no valid SKILL.md, or
	// its name is not a valid skill name.
	ErrInvalidSkill = errors.New("Invalid skill. Ensure the source contains a valid SKILL.md.")
)

// skillNameRE is OpenHands' SKILL_NAME_PATTERN.
var skillNameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ValidName reports whether name is a valid installed-skill name: lower-case
// letters and digits in hyphen-separated groups, 1 to 255 characters.
func ValidName(name string) bool { return len(name) <= 255 && skillNameRE.MatchString(name) }

// RedactSource leaves the user information (credentials) out of a URL
// source; other sources are returned unchanged.
func RedactSource(src string) string {
	u, err := url.Parse(src)
	if err != nil || u.User == nil || u.Host == "" {
		return src
	}
	u.User = nil
	return u.String()
}

func (m *Installed) load() (map[string]record, error) {
	b, err := os.ReadFile(filepath.Join(m.dir, metaFile))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]record{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the installed skills: %w", err)
	}
	recs := map[string]record{}
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, fmt.Errorf("read the installed skills: %s is corrupt: %w", metaFile, err)
	}
	return recs, nil
}

func (m *Installed) save(recs map[string]record) error {
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the installed skills: %w", err)
	}
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
		return fmt.Errorf("create the installed skills directory: %w", err)
	}
	tmp := filepath.Join(m.dir, metaFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write the installed skills: %w", err)
	}
	return os.Rename(tmp, filepath.Join(m.dir, metaFile))
}

// sync drops the records whose directory has gone.
func (m *Installed) sync(recs map[string]record) {
	for name := range recs {
		if findSkillMD(filepath.Join(m.dir, name)) == "" {
			delete(recs, name)
		}
	}
}

// List returns the installed skills, sorted by name. Skills whose
// directory was removed by hand are forgotten.
func (m *Installed) List() ([]agentwire.InstalledSkill, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	recs, err := m.load()
	if err != nil {
		return nil, err
	}
	n := len(recs)
	m.sync(recs)
	if len(recs) != n {
		if err := m.save(recs); err != nil {
			return nil, err
		}
	}
	out := make([]agentwire.InstalledSkill, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.InstalledSkill)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Get returns one installed skill, or ErrNotInstalled.
func (m *Installed) Get(name string) (agentwire.InstalledSkill, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	recs, err := m.load()
	if err != nil {
		return agentwire.InstalledSkill{}, err
	}
	m.sync(recs)
	r, ok := recs[name]
	if !ok {
		return agentwire.InstalledSkill{}, ErrNotInstalled
	}
	return r.InstalledSkill, nil
}

// SetEnabled enables or disables an installed skill (ErrNotInstalled).
func (m *Installed) SetEnabled(name string, enabled bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	recs, err := m.load()
	if err != nil {
		return err
	}
	m.sync(recs)
	r, ok := recs[name]
	if !ok {
		return ErrNotInstalled
	}
	r.Enabled = enabled
	recs[name] = r
	return m.save(recs)
}

// Uninstall removes an installed skill and its files (ErrNotInstalled).
func (m *Installed) Uninstall(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	recs, err := m.load()
	if err != nil {
		return err
	}
	if _, ok := recs[name]; !ok {
		return ErrNotInstalled
	}
	if err := os.RemoveAll(filepath.Join(m.dir, name)); err != nil {
		return fmt.Errorf("remove skill %s: %w", name, err)
	}
	delete(recs, name)
	return m.save(recs)
}

// Install fetches a skill and installs it under its SKILL.md name. source
// is an absolute local path (or file:// URL) of a directory, a git URL
// (https://, ssh://, git@host:path, file:// of a repository) or GitHub
// shorthand github:owner/repo; ref is a branch or tag to check out;
// repoPath the skill's directory inside the repository. Errors: ErrFetch,
// ErrInvalidSkill (also for a skill directory holding a special file),
// ErrAlreadyInstalled (a skill of that name is installed
// and force is false; with force it is replaced, keeping its enabled
// state), or an I/O error.
func (m *Installed) Install(ctx context.Context, source string, ref, repoPath *string, force bool) (agentwire.InstalledSkill, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.installLocked(ctx, source, ref, repoPath, force, "")
}

// Refresh fetches an installed skill again from its source (and ref) and
// replaces it, keeping its enabled state. Errors: ErrNotInstalled, those
// of Install, and ErrInvalidSkill when the source now holds a skill of
// another name.
func (m *Installed) Refresh(ctx context.Context, name string) (agentwire.InstalledSkill, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	recs, err := m.load()
	if err != nil {
		return agentwire.InstalledSkill{}, err
	}
	m.sync(recs)
	r, ok := recs[name]
	if !ok {
		return agentwire.InstalledSkill{}, ErrNotInstalled
	}
	return m.installLocked(ctx, r.FullSource, r.RequestedRef, r.RepoPath, true, name)
}

func (m *Installed) installLocked(ctx context.Context, source string, ref, repoPath *string, force bool, mustName string) (agentwire.InstalledSkill, error) {
	tmp, err := os.MkdirTemp("", "acs-skill-fetch-")
	if err != nil {
		return agentwire.InstalledSkill{}, fmt.Errorf("fetch a skill: %w", err)
	}
	defer os.RemoveAll(tmp)
	fetched, resolved, err := m.fetch(ctx, source, ref, repoPath, tmp)
	if err != nil {
		return agentwire.InstalledSkill{}, err
	}
	md := findSkillMD(fetched)
	if md == "" {
		return agentwire.InstalledSkill{}, ErrInvalidSkill
	}
	sk, err := loadSkillFile(md, true)
	if err != nil || !ValidName(sk.Name) || (mustName != "" && sk.Name != mustName) {
		return agentwire.InstalledSkill{}, ErrInvalidSkill
	}
	recs, err := m.load()
	if err != nil {
		return agentwire.InstalledSkill{}, err
	}
	m.sync(recs)
	dest := filepath.Join(m.dir, sk.Name)
	old, exists := recs[sk.Name]
	if _, err := os.Stat(dest); err == nil {
		exists = true
	}
	if exists && !force {
		return agentwire.InstalledSkill{}, ErrAlreadyInstalled
	}
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
		return agentwire.InstalledSkill{}, fmt.Errorf("create the installed skills directory: %w", err)
	}
	staged, err := os.MkdirTemp(m.dir, ".staging-")
	if err != nil {
		return agentwire.InstalledSkill{}, fmt.Errorf("install skill %s: %w", sk.Name, err)
	}
	defer os.RemoveAll(staged)
	if err := os.CopyFS(staged, os.DirFS(fetched)); err != nil {
		if errors.Is(err, fs.ErrInvalid) {
			// A special file (a FIFO, a device): not a skill to install.
			return agentwire.InstalledSkill{}, ErrInvalidSkill
		}
		return agentwire.InstalledSkill{}, fmt.Errorf("install skill %s: copy: %w", sk.Name, err)
	}
	os.RemoveAll(filepath.Join(staged, ".git"))
	if err := os.RemoveAll(dest); err != nil {
		return agentwire.InstalledSkill{}, fmt.Errorf("install skill %s: remove the old copy: %w", sk.Name, err)
	}
	if err := os.Rename(staged, dest); err != nil {
		return agentwire.InstalledSkill{}, fmt.Errorf("install skill %s: %w", sk.Name, err)
	}
	enabled := true
	if old.Name != "" {
		enabled = old.Enabled
	}
	r := record{InstalledSkill: agentwire.InstalledSkill{Name: sk.Name, Description: sk.Description, Enabled: enabled,
		Source: RedactSource(source), ResolvedRef: resolved, RepoPath: repoPath,
		InstalledAt: time.Now().UTC().Format(time.RFC3339Nano), InstallPath: dest},
		FullSource: source, RequestedRef: ref}
	recs[sk.Name] = r
	if err := m.save(recs); err != nil {
		return agentwire.InstalledSkill{}, err
	}
	return r.InstalledSkill, nil
}

// fetch puts the source's skill directory under tmp (or names the local
// directory) and returns it, with the git commit it came from.
func (m *Installed) fetch(ctx context.Context, source string, ref, repoPath *string, tmp string) (string, *string, error) {
	sub := ""
	if repoPath != nil {
		sub = filepath.Clean("/" + *repoPath)[1:]
	}
	local := ""
	switch {
	case strings.HasPrefix(source, "/"):
		local = source
	case strings.HasPrefix(source, "file://"):
		if u, err := url.Parse(source); err == nil && !isGitRepo(u.Path) {
			local = u.Path
		}
	}
	if local != "" {
		dir := filepath.Join(filepath.Clean(local), sub)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return "", nil, ErrFetch
		}
		return dir, nil, nil
	}
	gitURL := source
	if rest, ok := strings.CutPrefix(source, "github:"); ok {
		parts := strings.SplitN(rest, "/", 3)
		if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
			return "", nil, ErrFetch
		}
		gitURL = "https://github.com/" + parts[0] + "/" + parts[1] + ".git"
		if len(parts) == 3 && sub == "" {
			sub = filepath.Clean("/" + parts[2])[1:]
		}
	}
	if !strings.Contains(gitURL, "://") && !strings.HasPrefix(gitURL, "git@") {
		return "", nil, ErrFetch
	}
	timeout := m.FetchTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := []string{"clone", "--quiet", "--depth", "1"}
	if ref != nil && *ref != "" {
		args = append(args, "--branch", *ref)
	}
	repo := filepath.Join(tmp, "repo")
	args = append(args, "--", gitURL, repo)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_SSH_COMMAND=ssh -o BatchMode=yes")
	if err := cmd.Run(); err != nil {
		return "", nil, ErrFetch
	}
	var resolved *string
	if out, err := exec.CommandContext(ctx, "git", "-C", repo, "rev-parse", "HEAD").Output(); err == nil {
		s := strings.TrimSpace(string(out))
		resolved = &s
	}
	dir := filepath.Join(repo, sub)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", nil, ErrFetch
	}
	return dir, resolved, nil
}

func isGitRepo(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ".git"))
	if err == nil {
		return true
	}
	_, err = os.Stat(filepath.Join(dir, "HEAD"))
	return err == nil
}

// LoadUser loads the user skills of dir (LoadDir with SourceUser) and then,
// as OpenHands does, the enabled skills installed in dir/installed, which
// yield to a user skill of the same name. Installed skills that fail to
// load are reported as problems.
func LoadUser(dir string) ([]Skill, []Problem) {
	sks, probs := LoadDir(dir, SourceUser)
	m := NewInstalled(filepath.Join(dir, "installed"))
	recs, err := m.load()
	if err != nil {
		return sks, append(probs, Problem{File: filepath.Join(m.dir, metaFile), Error: err.Error()})
	}
	seen := map[string]bool{}
	for _, sk := range sks {
		seen[sk.Name] = true
	}
	names := make([]string, 0, len(recs))
	for n := range recs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !recs[n].Enabled || seen[n] {
			continue
		}
		md := findSkillMD(filepath.Join(m.dir, n))
		if md == "" {
			continue
		}
		sk, err := loadSkillFile(md, true)
		if err != nil {
			probs = append(probs, Problem{File: md, Error: err.Error()})
			continue
		}
		sk.Source = SourceUser
		seen[n] = true
		sks = append(sks, sk)
	}
	return sks, probs
}
