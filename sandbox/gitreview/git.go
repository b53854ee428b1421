// Package gitreview reports the git changes and per-file diffs of a
// workspace by running the git binary.
//
// Every git invocation runs with "--no-optional-locks" (so it never writes
// the index or takes locks that could disturb a concurrent agent),
// "-c core.quotepath=off", GIT_TERMINAL_PROMPT=0 (it never waits for
// credentials) and a 30 second timeout on top of the caller's context.
// Repository-selecting variables inherited from the environment (GIT_DIR,
// GIT_WORK_TREE, GIT_INDEX_FILE, ...) are removed so the repository is
// always the one discovered from the given path. Machine-readable output is
// requested with -z, so file names with spaces, newlines or non-ASCII
// characters are reported verbatim.
//
// Git's own safety rules are kept: a repository owned by another user is
// refused by git ("dubious ownership") unless it is listed in
// safe.directory, which Init does for the repositories it creates.
package gitreview

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/procenv"
)

// Change statuses.
const (
	StatusAdded   = "ADDED"
	StatusDeleted = "DELETED"
	StatusUpdated = "UPDATED"
	StatusMoved   = "MOVED"
)

// Limits.
const (
	// Timeout bounds every git invocation.
	Timeout = 30 * time.Second
	// MaxContentBytes caps each side of a FileDiff.
	MaxContentBytes = 5 << 20
	// maxListBytes caps the output of the listing commands.
	maxListBytes = 64 << 20
)

var (
	// ErrRefAndCommit is returned by FileDiff when both ref and commit are
	// given.
	ErrRefAndCommit = errors.New("ref and commit are mutually exclusive")
	// ErrInvalidRef is returned for a ref or commit that git could mistake
	// for an option.
	ErrInvalidRef = errors.New("invalid ref")
	// ErrTooLarge is returned (wrapped) when one side of a diff exceeds
	// MaxContentBytes.
	ErrTooLarge = fmt.Errorf("file larger than %d bytes", MaxContentBytes)
	// ErrIsDirectory is returned by FileDiff for a directory.
	ErrIsDirectory = errors.New("path is a directory")
	// ErrNotRegular is returned by FileDiff for a work-tree file that is
	// neither a regular file nor a symbolic link (a FIFO, a socket, a
	// device).
	ErrNotRegular = errors.New("not a regular file")
	// ErrUnknownRevision is returned (wrapped) for a ref or commit that
	// does not name a tree in the repository.
	ErrUnknownRevision = errors.New("unknown revision")
)

// scrubbedEnv lists variables that would redirect git to another repository
// or index than the one discovered from the working directory.
var scrubbedEnv = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
	"GIT_PREFIX", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_TERMINAL_PROMPT",
	"GIT_OPTIONAL_LOCKS",
}

func gitEnv() []string {
	env := procenv.Environ()
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		scrub := false
		for _, s := range scrubbedEnv {
			if name == s {
				scrub = true
				break
			}
		}
		if !scrub {
			out = append(out, kv)
		}
	}
	return append(out, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_PAGER=cat", "LC_ALL=C")
}

// gitError is a failed git invocation.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		msg = e.err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.args, " "), msg)
}

func (e *gitError) Unwrap() error { return e.err }

// cappedBuffer collects at most limit bytes and fails the write beyond. It
// deliberately has no ReadFrom method, so io.Copy goes through Write.
type cappedBuffer struct {
	buf   bytes.Buffer
	limit int
	over  bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > b.limit {
		b.over = true
		return 0, ErrTooLarge
	}
	return b.buf.Write(p)
}

// headBuffer keeps the first limit bytes written and silently drops the
// rest, so a chatty stderr never fails a successful command.
type headBuffer struct {
	buf   bytes.Buffer
	limit int
}

func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// git runs git in dir and returns its standard output, at most limit bytes.
func git(ctx context.Context, dir string, limit int, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	full := append([]string{"--no-optional-locks", "-c", "core.quotepath=off", "-c", "color.ui=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	cmd.Stdin = nil
	cmd.WaitDelay = 2 * time.Second
	stdout := &cappedBuffer{limit: limit}
	stderr := &headBuffer{limit: 64 << 10}
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	err := cmd.Run()
	if stdout.over {
		return nil, fmt.Errorf("git %s: output %w", subcommand(args), ErrTooLarge)
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = fmt.Errorf("%w: %w", ctxErr, err)
		}
		return nil, &gitError{args: args, stderr: stderr.buf.String(), err: err}
	}
	return stdout.buf.Bytes(), nil
}

// subcommand returns the first argument that is not an option.
func subcommand(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// isNotRepo reports whether err is git's "not a git repository" failure.
func isNotRepo(err error) bool {
	var ge *gitError
	return errors.As(err, &ge) && strings.Contains(strings.ToLower(ge.stderr), "not a git repository")
}

// existingDir returns path when it is an existing directory, otherwise its
// nearest existing ancestor directory.
func existingDir(path string) (string, error) {
	d := filepath.Clean(path)
	for {
		fi, err := os.Stat(d)
		if err == nil {
			if fi.IsDir() {
				return d, nil
			}
		} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, errNotDir) {
			return "", err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no existing directory above %s", path)
		}
		d = parent
	}
}

// repo describes the work tree containing a directory.
type repo struct {
	top    string // absolute work-tree root as reported by git
	prefix string // slash-separated path of the directory below top, "" or ending in "/"
}

// findRepo locates the work tree containing dir. ok is false (with a nil
// error) when dir is not inside a work tree.
func findRepo(ctx context.Context, dir string) (r repo, ok bool, err error) {
	out, err := git(ctx, dir, 1<<16, "rev-parse", "--is-inside-work-tree")
	if err != nil {
		if isNotRepo(err) {
			return repo{}, false, nil
		}
		return repo{}, false, err
	}
	if strings.TrimSpace(string(out)) != "true" {
		return repo{}, false, nil // inside a .git directory or a bare repository
	}
	out, err = git(ctx, dir, 1<<16, "rev-parse", "--show-toplevel", "--show-prefix")
	if err != nil {
		return repo{}, false, err
	}
	lines := strings.SplitN(strings.TrimSuffix(string(out), "\n"), "\n", 2)
	r.top = filepath.FromSlash(lines[0])
	if len(lines) > 1 {
		r.prefix = lines[1]
	}
	return r, true, nil
}

// hasHead reports whether HEAD names a commit.
func (r repo) hasHead(ctx context.Context) bool {
	_, err := git(ctx, r.top, 1<<16, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	return err == nil
}

// emptyTree returns the id of the empty tree in the repository's hash
// algorithm. Git knows that object without it being stored.
func (r repo) emptyTree(ctx context.Context) (string, error) {
	out, err := git(ctx, r.top, 1<<16, "hash-object", "-t", "tree", "--stdin")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

func checkRef(ref string) error {
	if strings.HasPrefix(ref, "-") || strings.ContainsAny(ref, "\x00\n") {
		return fmt.Errorf("%w: %q", ErrInvalidRef, ref)
	}
	return nil
}

// Init makes dir a git repository unless it already is inside a work tree.
//
// For a new repository it writes what "git init" writes (without the
// sample hooks), with HEAD on the "main" branch, and, when dir is owned by
// another user than this process's, adds dir to the global safe.directory
// list (once), so that later git commands work on it. It creates dir when
// missing. Inside an existing work tree it changes nothing. It is
// idempotent, and a new workspace costs it no git process: git is asked
// only when dir or an ancestor could be part of a repository.
//
// Init is best effort: the returned error (wrapping exec.ErrNotFound when
// git is needed and not installed) is meant to be logged, not to fail the
// caller.
func Init(ctx context.Context, dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("gitreview: init: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gitreview: init %s: %w", dir, err)
	}
	// Git matches safe.directory against the real path of the work tree.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	if mayBeInRepo(dir) {
		out, err := git(ctx, dir, 1<<16, "rev-parse", "--is-inside-work-tree")
		switch {
		case err == nil && strings.TrimSpace(string(out)) == "true":
			return nil
		case err == nil:
			return fmt.Errorf("gitreview: init %s: inside a git directory", dir)
		case !isNotRepo(err):
			return fmt.Errorf("gitreview: init %s: %w", dir, err)
		}
	}
	// Without git there is no repository to make (nor to use).
	if _, err := exec.LookPath("git"); err != nil {
		return fmt.Errorf("gitreview: init %s: %w", dir, err)
	}
	if err := writeGitDir(dir); err != nil {
		return fmt.Errorf("gitreview: init %s: %w", dir, err)
	}
	if ownedByOther(dir) {
		if err := addSafeDirectory(ctx, dir); err != nil {
			return fmt.Errorf("gitreview: init %s: %w", dir, err)
		}
	}
	return nil
}

// gitDirDirs and gitDirFiles are an empty repository's .git: what git
// needs to see a repository (HEAD, objects and refs). Everything else git
// init writes is optional and left out: the subdirectories of refs and
// objects, made by git when it first writes there; the config, whose
// settings for a work tree's repository are git's defaults (format 0,
// not bare, file modes, reflogs); description, info/exclude and sample
// hooks. Each file or directory made costs a file system call on every
// conversation's start, a millisecond of kernel time on some file systems.
var (
	gitDirDirs  = []string{"objects", "refs"}
	gitDirFiles = []struct{ name, content string }{
		{"HEAD", "ref: refs/heads/main\n"},
	}
)

// MakeEmptyRepo makes dir, an existing empty directory, the work tree of
// an empty repository, as Init does where there is none: for a directory
// made ahead of need (see sandbox/spare), which Init then need not see.
func MakeEmptyRepo(dir string) error {
	if err := writeGitDir(dir); err != nil {
		return fmt.Errorf("gitreview: make a repository in %s: %w", dir, err)
	}
	return nil
}

// InRepo reports whether git could see dir, an existing directory, as
// inside a repository (Init makes none there). It may report true for a
// directory git would not see as in one; false is certain.
func InRepo(dir string) bool {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return mayBeInRepo(dir)
}

// writeGitDir creates dir/.git for an empty repository: built aside and
// renamed into place, so that no one sees a partial one. A .git that
// appeared meanwhile is kept.
func writeGitDir(dir string) error {
	tmp, err := os.MkdirTemp(dir, ".git-init-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, d := range gitDirDirs {
		if err := os.Mkdir(filepath.Join(tmp, d), 0o755); err != nil {
			return err
		}
	}
	for _, f := range gitDirFiles {
		if err := os.WriteFile(filepath.Join(tmp, f.name), []byte(f.content), 0o644); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, ".git")); err != nil {
		if _, serr := os.Lstat(filepath.Join(dir, ".git")); serr == nil {
			return nil // made by another Init
		}
		return err
	}
	return nil
}

// ownedByOther reports whether dir's owner is not this process's
// effective user: the case git refuses without safe.directory.
func ownedByOther(dir string) bool {
	fi, err := os.Stat(dir)
	if err != nil {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) != os.Geteuid()
}

// mayBeInRepo reports whether git could see dir (a real path) as inside
// a repository: dir or one of its ancestors has a .git entry or looks like
// a git directory (HEAD and objects). When it reports false, dir is in no
// repository. (The variables that name a repository are scrubbed from
// git's environment, see gitEnv; the others only narrow the search.)
func mayBeInRepo(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); !errors.Is(err, fs.ErrNotExist) {
			return true
		}
		_, herr := os.Lstat(filepath.Join(d, "HEAD"))
		_, oerr := os.Lstat(filepath.Join(d, "objects"))
		if herr == nil && oerr == nil {
			return true
		}
		if filepath.Dir(d) == d {
			return false
		}
	}
}

func addSafeDirectory(ctx context.Context, dir string) error {
	// "git config --get-all" exits 1 when the key is unset.
	out, err := git(ctx, dir, 1<<20, "config", "--global", "-z", "--get-all", "safe.directory")
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		return err
	}
	for _, v := range strings.Split(string(out), "\x00") {
		if v == "*" || v == filepath.ToSlash(dir) {
			return nil
		}
	}
	_, err = git(ctx, dir, 1<<16, "config", "--global", "--add", "safe.directory", filepath.ToSlash(dir))
	return err
}

// Changes lists the changes of the work tree containing path (a directory,
// a file, or a not yet existing path, whose nearest existing ancestor is
// used) against ref, default HEAD; in a repository without commits the
// default base is the empty tree.
//
// The list holds tracked changes from "git diff -M <base>" (modifications
// as UPDATED, deletions as DELETED, additions and copies as ADDED, renames
// as MOVED with the new path) plus every untracked file not excluded by
// .gitignore, .git/info/exclude or core.excludesFile as ADDED. Renames are
// detected the way git detects them, that is for paths known to the index:
// a "git mv" shows as MOVED, a plain file-system rename of a tracked file as
// DELETED plus ADDED. A symbolic link is a file to git, so an untracked link
// to a directory is one ADDED entry. Paths are relative to the repository root, whatever
// directory path names, and the list is sorted by path.
//
// A path outside any work tree yields an empty list and no error. An
// unknown ref is ErrUnknownRevision (wrapped); any other git failure (git
// missing, dubious ownership, timeout) is returned as an error.
func Changes(ctx context.Context, path, ref string) ([]agentwire.GitChange, error) {
	if err := checkRef(ref); err != nil {
		return nil, err
	}
	dir, err := existingDir(path)
	if err != nil {
		return nil, fmt.Errorf("gitreview: changes: %w", err)
	}
	r, ok, err := findRepo(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("gitreview: changes: %w", err)
	}
	if !ok {
		return []agentwire.GitChange{}, nil
	}
	base := ref
	if base == "" {
		base = "HEAD"
		if !r.hasHead(ctx) {
			if base, err = r.emptyTree(ctx); err != nil {
				return nil, fmt.Errorf("gitreview: changes: %w", err)
			}
		}
	} else if err := r.checkRevision(ctx, base); err != nil {
		return nil, fmt.Errorf("gitreview: changes: %w", err)
	}
	tracked, err := git(ctx, r.top, maxListBytes, "diff", "--name-status", "-z", "-M",
		"--no-color", "--no-ext-diff", "--no-textconv", "--no-relative", base, "--")
	if err != nil {
		return nil, fmt.Errorf("gitreview: changes: %w", err)
	}
	untracked, err := git(ctx, r.top, maxListBytes, "ls-files", "-z", "--others", "--exclude-standard", "--full-name")
	if err != nil {
		return nil, fmt.Errorf("gitreview: changes: %w", err)
	}
	byPath := map[string]string{}
	if err := parseNameStatus(tracked, byPath); err != nil {
		return nil, fmt.Errorf("gitreview: changes: %w", err)
	}
	for _, p := range strings.Split(string(untracked), "\x00") {
		if p == "" || strings.HasSuffix(p, "/") { // "dir/" is a nested repository
			continue
		}
		if byPath[p] == StatusDeleted {
			// Removed from the index but still on disk ("git rm --cached").
			byPath[p] = StatusUpdated
			continue
		}
		if _, seen := byPath[p]; !seen {
			byPath[p] = StatusAdded
		}
	}
	out := make([]agentwire.GitChange, 0, len(byPath))
	for p, s := range byPath {
		out = append(out, agentwire.GitChange{Status: s, Path: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// parseNameStatus parses "git diff --name-status -z" output.
func parseNameStatus(b []byte, into map[string]string) error {
	fields := strings.Split(string(b), "\x00")
	for i := 0; i < len(fields); {
		st := fields[i]
		i++
		if st == "" {
			continue
		}
		switch st[0] {
		case 'R', 'C':
			if i+1 >= len(fields) {
				return fmt.Errorf("truncated git diff output")
			}
			to := fields[i+1] // fields[i] is the source path
			i += 2
			if st[0] == 'R' {
				into[to] = StatusMoved
			} else {
				into[to] = StatusAdded
			}
		default:
			if i >= len(fields) {
				return fmt.Errorf("truncated git diff output")
			}
			p := fields[i]
			i++
			switch st[0] {
			case 'A':
				into[p] = StatusAdded
			case 'D':
				into[p] = StatusDeleted
			default: // M, T (type change), U (unmerged), X
				into[p] = StatusUpdated
			}
		}
	}
	return nil
}

// FileDiff returns the content of the file at path (absolute) in the base
// revision and in the work tree.
//
// The base is commit when given, else ref, else HEAD; with the HEAD default
// in a repository without commits the base is the empty tree. Original is
// nil when the file does not exist in the base (or is not a regular blob
// there, such as a submodule); Modified is nil when the file does not exist
// in the work tree. A tracked symbolic link is reported as its target text
// on both sides, as git stores it. Content is returned as is (binary files
// included) and each side is capped at MaxContentBytes (ErrTooLarge beyond).
//
// Errors: ErrRefAndCommit when both ref and commit are set, ErrInvalidRef,
// ErrIsDirectory, ErrNotRegular, ErrTooLarge, ErrUnknownRevision, or any
// other git failure. A path outside any work tree yields a Diff with both
// sides nil and no error. The work-tree file is never opened unless it is
// a regular file, and then without blocking, so a FIFO cannot hold the
// call.
func FileDiff(ctx context.Context, path, ref, commit string) (agentwire.GitDiff, error) {
	if ref != "" && commit != "" {
		return agentwire.GitDiff{}, ErrRefAndCommit
	}
	base := commit
	if base == "" {
		base = ref
	}
	if err := checkRef(base); err != nil {
		return agentwire.GitDiff{}, err
	}
	if !filepath.IsAbs(path) {
		return agentwire.GitDiff{}, fmt.Errorf("gitreview: diff: path %q is not absolute", path)
	}
	path = filepath.Clean(path)
	modified, err := readWorkTree(path)
	if err != nil {
		return agentwire.GitDiff{}, fmt.Errorf("gitreview: diff: %w", err)
	}
	dir, err := existingDir(filepath.Dir(path))
	if err != nil {
		return agentwire.GitDiff{}, fmt.Errorf("gitreview: diff: %w", err)
	}
	r, ok, err := findRepo(ctx, dir)
	if err != nil {
		return agentwire.GitDiff{}, fmt.Errorf("gitreview: diff: %w", err)
	}
	if !ok {
		return agentwire.GitDiff{}, nil
	}
	below, err := filepath.Rel(dir, path)
	if err != nil {
		return agentwire.GitDiff{}, fmt.Errorf("gitreview: diff: %w", err)
	}
	rel := r.prefix + filepath.ToSlash(below)
	if base == "" {
		if !r.hasHead(ctx) {
			return agentwire.GitDiff{Modified: modified}, nil
		}
		base = "HEAD"
	}
	original, err := r.readBlob(ctx, base, rel)
	if err != nil {
		return agentwire.GitDiff{}, fmt.Errorf("gitreview: diff: %w", err)
	}
	return agentwire.GitDiff{Modified: modified, Original: original}, nil
}

// checkRevision returns ErrUnknownRevision (wrapped) unless base names a
// tree.
func (r repo) checkRevision(ctx context.Context, base string) error {
	if _, err := git(ctx, r.top, 1<<16, "rev-parse", "--verify", "--quiet", base+"^{tree}"); err != nil {
		return fmt.Errorf("%w %q", ErrUnknownRevision, base)
	}
	return nil
}

// readBlob returns the content of rel in revision base, or nil when absent.
func (r repo) readBlob(ctx context.Context, base, rel string) (*string, error) {
	if err := r.checkRevision(ctx, base); err != nil {
		return nil, err
	}
	out, err := git(ctx, r.top, 1<<16, "--literal-pathspecs", "ls-tree", "-z", "--full-tree", base, "--", rel)
	if err != nil {
		return nil, err
	}
	// "<mode> SP <type> SP <object> TAB <file>" NUL
	for _, entry := range strings.Split(string(out), "\x00") {
		meta, name, ok := strings.Cut(entry, "\t")
		if !ok || name != rel {
			continue
		}
		f := strings.Fields(meta)
		if len(f) != 3 || f[1] != "blob" {
			return nil, nil
		}
		content, err := git(ctx, r.top, MaxContentBytes, "cat-file", "blob", f[2])
		if err != nil {
			return nil, err
		}
		s := string(content)
		return &s, nil
	}
	return nil, nil
}

// readWorkTree returns the work-tree content of path, nil when it does not
// exist. A symbolic link yields its target, like git records it. Errors
// (ErrIsDirectory, ErrNotRegular, ErrTooLarge, or a file-system failure)
// do not name the path.
func readWorkTree(path string) (*string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir) {
		return nil, nil
	}
	if err != nil {
		return nil, pathless(err)
	}
	switch {
	case fi.IsDir():
		return nil, ErrIsDirectory
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return nil, pathless(err)
		}
		return &target, nil
	case !fi.Mode().IsRegular():
		return nil, ErrNotRegular
	case fi.Size() > MaxContentBytes:
		return nil, ErrTooLarge
	}
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, pathless(err)
	}
	defer f.Close()
	// The file may have been replaced after Lstat: judge the open one.
	if ofi, err := f.Stat(); err != nil {
		return nil, pathless(err)
	} else if !ofi.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxContentBytes+1))
	if err != nil {
		return nil, pathless(err)
	}
	if len(b) > MaxContentBytes {
		return nil, ErrTooLarge
	}
	s := string(b)
	return &s, nil
}

// pathless drops the path from a file-system error.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}
