package fstools_test

import (
	"context"
	"slices"
	"testing"

	"github.com/acs-project/acs/events"
)

// TestGrepGitignoreRules checks the .gitignore dialect (ripgrep's) on small
// trees where every file contains "hit".
func TestGrepGitignoreRules(t *testing.T) {
	files := []string{
		"a.txt", "b.log", "#hash", "trail ", "dir/a.txt", "dir/b.log", "dir/sub/a.txt",
		"other/dir/a.txt", "x/y/z/deep.md", "top.md", "name", "dir2/name/f", "name2",
	}
	cases := []struct {
		name, gitignore string
		want            []string
	}{
		{"extension anywhere", "*.log\n", exclude(files, "b.log", "dir/b.log")},
		{"comment and blank lines", "# a comment\n\n", files},
		{"escaped hash", "\\#hash\n", exclude(files, "#hash")},
		{"trailing spaces trimmed", "a.txt   \n", exclude(files, "a.txt", "dir/a.txt", "dir/sub/a.txt", "other/dir/a.txt")},
		{"escaped trailing space", "trail\\ \n", exclude(files, "trail ")},
		{"anchored with leading slash", "/a.txt\n", exclude(files, "a.txt")},
		{"anchored by an inner slash", "dir/a.txt\n", exclude(files, "dir/a.txt")},
		{"directory anywhere", "dir/\n", exclude(files, "dir/a.txt", "dir/b.log", "dir/sub/a.txt", "other/dir/a.txt")},
		{"directory-only does not match files", "name/\n", exclude(files, "dir2/name/f")},
		{"name matches files and directories", "name\n", exclude(files, "name", "dir2/name/f")},
		{"leading doublestar", "**/sub\n", exclude(files, "dir/sub/a.txt")},
		{"middle doublestar", "x/**/deep.md\n", exclude(files, "x/y/z/deep.md")},
		{"trailing doublestar", "dir/**\n", exclude(files, "dir/a.txt", "dir/b.log", "dir/sub/a.txt")},
		{"negation re-includes", "*.txt\n!dir/a.txt\n", exclude(files, "a.txt", "dir/sub/a.txt", "other/dir/a.txt")},
		{"last rule wins", "!a.txt\n*.txt\n", exclude(files, "a.txt", "dir/a.txt", "dir/sub/a.txt", "other/dir/a.txt")},
		{"no re-include inside an excluded directory", "dir/\n!dir/a.txt\n", exclude(files, "dir/a.txt", "dir/b.log", "dir/sub/a.txt", "other/dir/a.txt")},
		{"character class", "[ab].*\n", exclude(files, "a.txt", "b.log", "dir/a.txt", "dir/b.log", "dir/sub/a.txt", "other/dir/a.txt")},
		{"question mark", "name?\n", exclude(files, "name2")},
		{"star does not cross directories", "dir/*.txt\n", exclude(files, "dir/a.txt")},
		{"crlf line endings", "*.log\r\ntop.md\r\n", exclude(files, "b.log", "dir/b.log", "top.md")},
	}
	for name, grep := range grepEngines(t) {
		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				r, root := newRoot(t)
				for _, f := range files {
					write(t, root, f, "hit\n")
				}
				write(t, root, ".gitignore", c.gitignore)
				o, err := grep(context.Background(), r, &events.GrepAction{Pattern: "hit"})
				wantOK(t, o, err)
				if got := rels(t, root, o.Matches); !slices.Equal(got, sorted(c.want...)) {
					t.Errorf("matches = %v\nwant      %v", got, sorted(c.want...))
				}
			})
		}
	}
}

// TestGrepNestedGitignore checks that a deeper .gitignore applies to its
// own subtree, relative to its directory, and takes precedence.
func TestGrepNestedGitignore(t *testing.T) {
	for name, grep := range grepEngines(t) {
		t.Run(name, func(t *testing.T) {
			r, root := newRoot(t)
			tree(t, root, map[string]string{
				".gitignore":       "*.gen\n/rootonly.txt\n",
				"a.gen":            "hit",
				"rootonly.txt":     "hit",
				"pkg/rootonly.txt": "hit",
				"pkg/.gitignore":   "!keep.gen\n/local.txt\n",
				"pkg/keep.gen":     "hit",
				"pkg/b.gen":        "hit",
				"pkg/local.txt":    "hit",
				"pkg/x/local.txt":  "hit",
				"other/local.txt":  "hit",
				"other/keep.gen":   "hit",
			})
			o, err := grep(context.Background(), r, &events.GrepAction{Pattern: "hit"})
			wantOK(t, o, err)
			want := sorted("pkg/rootonly.txt", "pkg/keep.gen", "pkg/x/local.txt", "other/local.txt")
			if got := rels(t, root, o.Matches); !slices.Equal(got, want) {
				t.Errorf("matches = %v\nwant      %v", got, want)
			}
		})
	}
}

func exclude(all []string, drop ...string) []string {
	var out []string
	for _, f := range all {
		if !slices.Contains(drop, f) {
			out = append(out, f)
		}
	}
	return out
}
