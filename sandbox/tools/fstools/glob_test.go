package fstools_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

func globFixture(t *testing.T) (fstools.Root, string) {
	t.Helper()
	r, root := newRoot(t)
	tree(t, root, map[string]string{
		"a.go":                      "package a\n",
		"b.txt":                     "b\n",
		".env":                      "SECRET=1\n",
		"src/main.go":               "package main\n",
		"src/nain.go":               "package main\n",
		"src/xain.go":               "package main\n",
		"src/test_x.py":             "",
		"src/.secret.go":            "package src\n",
		"src/util/helper.go":        "package util\n",
		"src/util/test_helper.py":   "",
		"src/util/deep/d.go":        "package deep\n",
		".hidden/h.go":              "package hidden\n",
		".gitignore":                "node_modules/\nbuild\n*.log\n",
		"node_modules/pkg/index.js": "",
		"build/out.go":              "package build\n",
		"debug.log":                 "",
		"docs/readme.md":            "",
		"odd name[1].txt":           "",
		"sym/real.go":               "package sym\n",
	})
	symlink(t, filepath.Join(root, "sym", "real.go"), filepath.Join(root, "sym", "link.go"))
	symlink(t, filepath.Join(root, "src"), filepath.Join(root, "srclink"))
	outside := t.TempDir()
	write(t, outside, "out.go", "package out\n")
	symlink(t, filepath.Join(outside, "out.go"), filepath.Join(root, "sym", "outside.go"))
	return r, root
}

func TestGlobPatterns(t *testing.T) {
	r, root := globFixture(t)
	cases := []struct {
		name, pattern, path string
		want                []string
	}{
		{"top level only", "*.go", "", sorted("a.go")},
		{"doublestar", "**/*.go", "", sorted("a.go", "src/main.go", "src/nain.go", "src/xain.go", "src/util/helper.go", "src/util/deep/d.go", "sym/real.go", "sym/link.go")},
		{"doublestar in the middle", "src/**/test_*.py", "", sorted("src/test_x.py", "src/util/test_helper.py")},
		{"trailing doublestar", "src/util/**", "", sorted("src/util/helper.go", "src/util/test_helper.py", "src/util/deep/d.go")},
		{"question mark", "src/?ain.go", "", sorted("src/main.go", "src/nain.go", "src/xain.go")},
		{"class", "src/[mn]ain.go", "", sorted("src/main.go", "src/nain.go")},
		{"negated class", "src/[!x]ain.go", "", sorted("src/main.go", "src/nain.go")},
		{"caret class", "src/[^mn]ain.go", "", sorted("src/xain.go")},
		{"braces", "**/*.{py,md}", "", sorted("src/test_x.py", "src/util/test_helper.py", "docs/readme.md")},
		{"braces across components", "{docs,src/util}/*", "", sorted("docs/readme.md", "src/util/helper.go", "src/util/test_helper.py")},
		{"escaped metacharacters", `odd name\[1\].txt`, "", sorted("odd name[1].txt")},
		{"literal file", "src/main.go", "", sorted("src/main.go")},
		{"leading dot slash", "./src/main.go", "", sorted("src/main.go")},
		{"hidden file named", ".env", "", sorted(".env")},
		{"hidden file by dot pattern", "**/.*.go", "", sorted("src/.secret.go")},
		{"hidden directory named", ".hidden/*.go", "", sorted(".hidden/h.go")},
		{"ignored directory named", "node_modules/**/*.js", "", sorted("node_modules/pkg/index.js")},
		{"ignored directory not entered by doublestar", "**/*.js", "", sorted()},
		{"ignored directory not entered by wildcard", "*/out.go", "", sorted()},
		{"ignored file still matched", "*.log", "", sorted("debug.log")},
		{"symlinked directory named", "srclink/main.go", "", sorted("srclink/main.go")},
		{"directories are not files", "src/util", "", sorted()},
		{"relative path", "*.go", "src", sorted("src/main.go", "src/nain.go", "src/xain.go")},
		{"absolute path", "**/*.go", filepath.Join(root, "src", "util"), sorted("src/util/helper.go", "src/util/deep/d.go")},
		{"absolute pattern", filepath.Join(root, "src", "util", "*.go"), "", sorted("src/util/helper.go")},
		{"absolute pattern with doublestar", filepath.Join(root, "src") + "/**/d.go", "", sorted("src/util/deep/d.go")},
		{"repeated doublestar", "**/**/deep/**/*.go", "", sorted("src/util/deep/d.go")},
		{"no match", "*.rs", "", sorted()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &events.GlobAction{Pattern: c.pattern}
			if c.path != "" {
				a.Path = sp(c.path)
			}
			o, err := fstools.Glob(context.Background(), r, a)
			wantOK(t, o, err)
			if got := rels(t, root, o.Files); !slices.Equal(got, c.want) {
				t.Errorf("files = %v, want %v", got, c.want)
			}
			if o.Pattern != c.pattern || !filepath.IsAbs(o.SearchPath) {
				t.Errorf("pattern %q search path %q", o.Pattern, o.SearchPath)
			}
			if o.Truncated {
				t.Error("truncated")
			}
			if len(c.want) == 0 {
				want := fmt.Sprintf("No files found matching pattern %q in %s", c.pattern, o.SearchPath)
				if obsText(o) != want {
					t.Errorf("text = %q, want %q", obsText(o), want)
				}
			} else if obsText(o) != strings.Join(o.Files, "\n") {
				t.Errorf("text = %q, want the paths one per line", obsText(o))
			}
		})
	}
}

func TestGlobSearchPath(t *testing.T) {
	r, root := globFixture(t)
	o, err := fstools.Glob(context.Background(), r, &events.GlobAction{Pattern: "*"})
	wantOK(t, o, err)
	if o.SearchPath != root {
		t.Errorf("default search path = %s, want the working directory %s", o.SearchPath, root)
	}
	o, err = fstools.Glob(context.Background(), r, &events.GlobAction{Pattern: "*", Path: sp("src/util")})
	wantOK(t, o, err)
	if o.SearchPath != filepath.Join(root, "src", "util") {
		t.Errorf("search path = %s", o.SearchPath)
	}
}

func TestGlobNewestFirst(t *testing.T) {
	r, root := newRoot(t)
	names := []string{"old.go", "sub/newest.go", "mid.go", "sub/deeper/new.go"}
	for i, n := range names {
		write(t, root, n, "")
		touch(t, root, n, []int{10, 40, 20, 30}[i])
	}
	write(t, root, "tie_b.go", "")
	write(t, root, "tie_a.go", "")
	touch(t, root, "tie_b.go", 5)
	touch(t, root, "tie_a.go", 5)
	o, err := fstools.Glob(context.Background(), r, &events.GlobAction{Pattern: "**/*.go"})
	wantOK(t, o, err)
	want := []string{"sub/newest.go", "sub/deeper/new.go", "mid.go", "old.go", "tie_a.go", "tie_b.go"}
	var got []string
	for _, f := range o.Files {
		rel, _ := filepath.Rel(root, f)
		got = append(got, filepath.ToSlash(rel))
	}
	if !slices.Equal(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
}

func TestGlobCap(t *testing.T) {
	r, root := newRoot(t)
	for i := range 150 {
		n := fmt.Sprintf("d%d/f%03d.txt", i%7, i)
		write(t, root, n, "")
		touch(t, root, n, i)
	}
	o, err := fstools.Glob(context.Background(), r, &events.GlobAction{Pattern: "**/*.txt"})
	wantOK(t, o, err)
	if len(o.Files) != fstools.MaxSearchResults || !o.Truncated {
		t.Fatalf("got %d files, truncated %v; want %d, true", len(o.Files), o.Truncated, fstools.MaxSearchResults)
	}
	// The newest 100 are f149 down to f050.
	if !strings.HasSuffix(o.Files[0], "f149.txt") || !strings.HasSuffix(o.Files[99], "f050.txt") {
		t.Errorf("first %s last %s", o.Files[0], o.Files[99])
	}
	if !strings.Contains(obsText(o), "100 most recently modified of 150") {
		t.Errorf("no truncation note in %q", obsText(o)[len(obsText(o))-200:])
	}

	// Exactly 100 is not truncated.
	r2, root2 := newRoot(t)
	for i := range 100 {
		write(t, root2, fmt.Sprintf("f%03d.txt", i), "")
	}
	o, err = fstools.Glob(context.Background(), r2, &events.GlobAction{Pattern: "*.txt"})
	wantOK(t, o, err)
	if len(o.Files) != 100 || o.Truncated {
		t.Errorf("100 files: got %d, truncated %v", len(o.Files), o.Truncated)
	}
}

func TestGlobErrors(t *testing.T) {
	r, root := globFixture(t)
	cases := []struct {
		name, pattern, path string
		fragments           []string
	}{
		{"missing path", "*", "nope", []string{"does not exist"}},
		{"path is a file", "*", "a.go", []string{"is not a directory"}},
		{"path outside", "*", "..", []string{"outside the workspace"}},
		{"dotdot in pattern", "../*", "", []string{"'..' is not allowed"}},
		{"unclosed brace", "*.{go,py", "", []string{"unclosed"}},
		{"empty pattern", "", "", []string{"must not be empty"}},
		{"absolute pattern outside", "/etc/*.conf", "", []string{"outside the workspace"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &events.GlobAction{Pattern: c.pattern}
			if c.path != "" {
				a.Path = sp(c.path)
			}
			o, err := fstools.Glob(context.Background(), r, a)
			wantError(t, o, err, c.fragments...)
			if o.SearchPath == "" || o.Pattern != c.pattern {
				t.Errorf("search path %q pattern %q", o.SearchPath, o.Pattern)
			}
		})
	}
	_ = root
}
