package fstools

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/acs-project/acs/events"
)

// MaxSearchResults is the most paths glob and grep return.
const MaxSearchResults = 100

// Glob finds the files whose path, relative to the search directory, matches
// a.Pattern. The search directory is a.Path (relative to the working
// directory) or the working directory; an absolute pattern searches from its
// longest wildcard-free directory prefix instead, ignoring a.Path.
//
// Pattern syntax: '*' and '?' match within one path component, [...] is a
// character class ([!...] or [^...] negated), {a,b} lists alternatives and a
// '**' component matches any number of directories (including none), so
// "**/*.go" matches Go files at any depth and "*.go" only at the top. A
// trailing "/**" matches every file below.
//
// Guarantees: only files are returned (regular files, or symbolic links to
// regular files inside the root), as absolute paths under the search
// directory, most recently modified first (ties by path), at most
// MaxSearchResults with Truncated set when more matched. Wildcards never
// match names starting with '.', and '**' or a wildcard component never
// enters a hidden directory, a directory excluded by a .gitignore file of
// the searched tree, or a symbolic link to a directory; a component that
// names such an entry literally (".github", "node_modules") does.
func Glob(ctx context.Context, r Root, a *events.GlobAction) (*events.GlobObservation, error) {
	obs := &events.GlobObservation{Pattern: a.Pattern}
	c, err := r.check()
	if err != nil {
		return nil, err
	}
	obs.SearchPath = c.workDir
	files, truncated, total, err := runGlob(ctx, c, a, obs)
	if err != nil {
		if msg, ok := asModelError(err); ok {
			obs.IsError = true
			obs.SetText(msg)
			return obs, nil
		}
		return nil, err
	}
	obs.Files, obs.Truncated = files, truncated
	if len(files) == 0 {
		obs.SetText(fmt.Sprintf("No files found matching pattern %q in %s", a.Pattern, obs.SearchPath))
		return obs, nil
	}
	text := strings.Join(files, "\n")
	if truncated {
		text += fmt.Sprintf("\n\n(Results are truncated: showing the %d most recently modified of %d matching files. Use a more specific pattern or path to see the others.)", len(files), total)
	}
	obs.SetText(text)
	return obs, nil
}

func runGlob(ctx context.Context, c *confined, a *events.GlobAction, obs *events.GlobObservation) ([]string, bool, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, 0, err
	}
	pattern := a.Pattern
	searchArg := ""
	if a.Path != nil {
		searchArg = *a.Path
	}
	if filepath.IsAbs(pattern) {
		searchArg, pattern = splitAbsPattern(pattern)
	}
	if strings.TrimSpace(pattern) == "" {
		return nil, false, 0, modelErrorf("The pattern must not be empty.")
	}
	dir, err := searchDir(c, searchArg)
	if dir != nil {
		obs.SearchPath = dir.path
	}
	if err != nil {
		return nil, false, 0, err
	}
	pats, err := compileGlobPatterns(pattern)
	if err != nil {
		return nil, false, 0, err
	}
	g := &globber{ctx: ctx, c: c, pats: pats, found: map[string]time.Time{}}
	var start []globState
	for i := range pats {
		start = append(start, globState{pat: i})
	}
	if err := g.walk(dir.real, dir.path, start, nil, true); err != nil {
		return nil, false, 0, err
	}
	files, truncated := newestFirst(g.found, MaxSearchResults)
	return files, truncated, len(g.found), nil
}

// searchDir resolves the directory a search starts from (the working
// directory when arg is empty) and checks that it is a directory.
func searchDir(c *confined, arg string) (*target, error) {
	if arg == "" {
		arg = c.workDir
	}
	t, err := c.resolve(arg)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(t.real)
	if err != nil {
		return t, fsError("search", t.path, err)
	}
	if !fi.IsDir() {
		return t, modelErrorf("The search path %s is not a directory.", t.path)
	}
	return t, nil
}

// splitAbsPattern splits an absolute pattern into its longest wildcard-free
// directory prefix and the rest.
func splitAbsPattern(p string) (dir, rest string) {
	comps := strings.Split(strings.TrimPrefix(filepath.ToSlash(p), "/"), "/")
	i := 0
	for i < len(comps)-1 && !hasWildcard(comps[i]) && !strings.ContainsAny(comps[i], "{}") {
		i++
	}
	dir = "/" + strings.Join(comps[:i], "/")
	return unescapeGlob(dir), strings.Join(comps[i:], "/")
}

// newestFirst sorts paths by modification time, newest first (ties by
// path), and keeps at most limit of them.
func newestFirst(found map[string]time.Time, limit int) ([]string, bool) {
	out := make([]string, 0, len(found))
	for p := range found {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		ti, tj := found[out[i]], found[out[j]]
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return out[i] < out[j]
	})
	if len(out) > limit {
		return out[:limit], true
	}
	return out, false
}

// globSegment is one component of a glob pattern.
type globSegment struct {
	doublestar bool
	literal    string         // the name, when the component has no wildcard
	re         *regexp.Regexp // when it has
	dot        bool           // starts with '.': may match hidden names
}

func (s *globSegment) matches(name string) bool {
	if s.re == nil {
		return name == s.literal
	}
	if isHidden(name) && !s.dot {
		return false
	}
	return s.re.MatchString(name)
}

// compileGlobPatterns expands the braces of p and splits each alternative
// into components.
func compileGlobPatterns(p string) ([][]globSegment, error) {
	p = filepath.ToSlash(p)
	alts, err := expandBraces(p)
	if err != nil {
		return nil, modelErrorf("Invalid glob pattern: %v.", err)
	}
	var out [][]globSegment
	for _, alt := range alts {
		var segs []globSegment
		for _, comp := range strings.Split(alt, "/") {
			switch {
			case comp == "" || comp == ".":
				continue
			case comp == "..":
				return nil, modelErrorf("Invalid glob pattern %q: '..' is not allowed in a pattern; set the path parameter to search another directory.", p)
			case comp == "**":
				if len(segs) == 0 || !segs[len(segs)-1].doublestar {
					segs = append(segs, globSegment{doublestar: true})
				}
				continue
			}
			seg := globSegment{dot: strings.HasPrefix(comp, ".")}
			if hasWildcard(comp) {
				src, err := globToRegexp(comp, false)
				if err != nil {
					return nil, modelErrorf("Invalid glob pattern: %v.", err)
				}
				if seg.re, err = regexp.Compile("^(?:" + src + ")$"); err != nil {
					return nil, modelErrorf("Invalid glob pattern %q: %v.", p, err)
				}
			} else {
				seg.literal = unescapeGlob(comp)
			}
			segs = append(segs, seg)
		}
		if len(segs) == 0 {
			return nil, modelErrorf("Invalid glob pattern %q: it names no file.", p)
		}
		if segs[len(segs)-1].doublestar {
			// "dir/**" matches every file below dir.
			segs = append(segs, globSegment{re: regexp.MustCompile(`^.*$`)})
		}
		out = append(out, segs)
	}
	return out, nil
}

type globState struct{ pat, seg int }

type globber struct {
	ctx   context.Context
	c     *confined
	pats  [][]globSegment
	found map[string]time.Time // display path -> modification time
}

// closure adds, for every state at a '**' component, the state after it
// (the '**' matching no directory).
func (g *globber) closure(states []globState) []globState {
	seen := map[globState]bool{}
	var out []globState
	var add func(s globState)
	add = func(s globState) {
		if seen[s] {
			return
		}
		seen[s] = true
		out = append(out, s)
		if g.pats[s.pat][s.seg].doublestar {
			add(globState{s.pat, s.seg + 1})
		}
	}
	for _, s := range states {
		add(s)
	}
	return out
}

// globEntry is a directory entry seen by the glob walk.
type globEntry struct {
	name string
	typ  fs.FileMode
}

func (g *globber) walk(dirReal, dirDisplay string, states []globState, ign *ignoreStack, isRoot bool) error {
	if err := g.ctx.Err(); err != nil {
		return err
	}
	states = g.closure(states)
	ign = ign.push(dirReal)
	entries, err := g.entries(dirReal, states)
	if err != nil {
		if isRoot {
			return fsError("read directory", dirDisplay, err)
		}
		return nil // unreadable subdirectories are skipped
	}
	for _, e := range entries {
		childReal := filepath.Join(dirReal, e.name)
		childDisplay := filepath.Join(dirDisplay, e.name)
		isDir := e.typ.IsDir()
		isLink := e.typ&fs.ModeSymlink != 0
		ignoredDir := false
		if isDir {
			ignoredDir = ign.match(childReal, true) == matchIgnore
		}
		var next []globState
		fileMatch := false
		for _, s := range states {
			seg := &g.pats[s.pat][s.seg]
			last := s.seg == len(g.pats[s.pat])-1
			if seg.doublestar {
				if isDir && !isHidden(e.name) && !ignoredDir {
					next = append(next, s)
				}
				continue
			}
			if !seg.matches(e.name) {
				continue
			}
			if last {
				fileMatch = true
				continue
			}
			switch {
			case seg.re == nil && (isDir || isLink):
				// A literal component enters what it names.
				next = append(next, globState{s.pat, s.seg + 1})
			case isDir && !ignoredDir:
				next = append(next, globState{s.pat, s.seg + 1})
			}
		}
		if fileMatch {
			g.addFile(childReal, childDisplay, e.typ)
		}
		if len(next) == 0 {
			continue
		}
		if isLink {
			real, err := filepath.EvalSymlinks(childReal)
			if err != nil || !g.c.inside(real) {
				continue
			}
			if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
				continue
			}
			childReal = real
		} else if !isDir {
			continue
		}
		if err := g.walk(childReal, childDisplay, next, ign, false); err != nil {
			return err
		}
	}
	return nil
}

// entries lists the directory, or only the names the states spell out when
// every state is at a literal component (no directory read needed).
func (g *globber) entries(dirReal string, states []globState) ([]globEntry, error) {
	if names, ok := g.literalNames(states); ok {
		var out []globEntry
		for _, n := range names {
			if fi, err := os.Lstat(filepath.Join(dirReal, n)); err == nil {
				out = append(out, globEntry{name: n, typ: fi.Mode().Type()})
			}
		}
		return out, nil
	}
	des, err := os.ReadDir(dirReal)
	if err != nil {
		return nil, err
	}
	out := make([]globEntry, 0, len(des))
	for _, de := range des {
		out = append(out, globEntry{name: de.Name(), typ: de.Type()})
	}
	return out, nil
}

// literalNames returns the distinct names of the states' components when all
// of them are literal.
func (g *globber) literalNames(states []globState) ([]string, bool) {
	var names []string
	seen := map[string]bool{}
	for _, s := range states {
		seg := &g.pats[s.pat][s.seg]
		if seg.doublestar || seg.re != nil {
			return nil, false
		}
		if !seen[seg.literal] {
			seen[seg.literal] = true
			names = append(names, seg.literal)
		}
	}
	return names, true
}

// addFile records a matching regular file, or a symbolic link to a regular
// file inside the root.
func (g *globber) addFile(real, display string, typ fs.FileMode) {
	if _, dup := g.found[display]; dup {
		return
	}
	switch {
	case typ.IsRegular():
		if fi, err := os.Lstat(real); err == nil {
			g.found[display] = fi.ModTime()
		}
	case typ&fs.ModeSymlink != 0:
		target, err := filepath.EvalSymlinks(real)
		if err != nil || !g.c.inside(target) {
			return
		}
		if fi, err := os.Stat(target); err == nil && fi.Mode().IsRegular() {
			g.found[display] = fi.ModTime()
		}
	}
}
