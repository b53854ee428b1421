package fstools

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/acs-project/acs/internal/pathguard"
)

// maxIgnoreFileSize bounds how much of a .gitignore file is read.
const maxIgnoreFileSize = 1 << 20

// ignoreStack is the chain of .gitignore files that apply to a directory,
// innermost first. Only .gitignore files inside the searched tree are used
// (not those of parent directories, the global excludes file or
// .git/info/exclude), whether or not the tree is a git repository.
type ignoreStack struct {
	parent *ignoreStack
	dir    string // real path of the directory holding the .gitignore
	rules  ignoreRules
}

// push loads dir's .gitignore, if any, on top of s. dir is a real path.
func (s *ignoreStack) push(dir string) *ignoreStack {
	f, err := os.Open(filepath.Join(dir, ".gitignore"))
	if err != nil {
		return s
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return s
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreFileSize))
	if err != nil {
		return s
	}
	rules := parseIgnoreFile(string(data))
	if len(rules) == 0 {
		return s
	}
	return &ignoreStack{parent: s, dir: dir, rules: rules}
}

// match decides for the entry at the real path p: the innermost .gitignore
// with a matching rule wins.
func (s *ignoreStack) match(p string, isDir bool) ignoreMatch {
	for cur := s; cur != nil; cur = cur.parent {
		rel, ok := relSlash(cur.dir, p)
		if !ok {
			continue
		}
		if m := cur.rules.match(rel, isDir); m != matchNone {
			return m
		}
	}
	return matchNone
}

// relSlash returns p relative to dir with '/' separators, if p is below dir.
func relSlash(dir, p string) (string, bool) {
	if !pathguard.Within(dir, p) || p == dir {
		return "", false
	}
	rel := p[len(dir):]
	rel = strings.TrimPrefix(rel, string(filepath.Separator))
	return filepath.ToSlash(rel), true
}

// override is ripgrep's --glob filter rooted at the search directory: a
// plain glob whitelists the files it matches (every other file is excluded),
// a glob starting with '!' excludes what it matches. An override verdict
// takes precedence over .gitignore rules and hidden-file skipping.
type override struct {
	root       string // real path of the search root
	rules      ignoreRules
	whitelists int
}

// newOverride compiles glob; an empty glob means no filter (nil).
func newOverride(root, glob string) (*override, error) {
	if glob == "" {
		return nil, nil
	}
	r, ok, err := parseIgnoreLine(glob)
	if err != nil {
		return nil, err
	}
	o := &override{root: root}
	if !ok {
		return o, nil
	}
	// Overrides invert the gitignore sense: "glob" includes, "!glob" excludes.
	r.negate = !r.negate
	if r.negate {
		o.whitelists++
	}
	o.rules = ignoreRules{r}
	return o, nil
}

// match returns the override's verdict on the real path p.
func (o *override) match(p string, isDir bool) ignoreMatch {
	if o == nil {
		return matchNone
	}
	rel, ok := relSlash(o.root, p)
	if !ok {
		return matchNone
	}
	m := o.rules.match(rel, isDir)
	if m == matchNone && o.whitelists > 0 && !isDir {
		return matchIgnore
	}
	return m
}
