package fstools_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

func sp(s string) *string { return &s }
func ip(i int) *int       { return &i }

// newRoot makes an empty workspace confined to itself.
func newRoot(t *testing.T) (fstools.Root, string) {
	t.Helper()
	dir := t.TempDir()
	return fstools.Root{Root: dir, WorkDir: dir}, dir
}

// write creates a file (and its parent directories) under dir.
func write(t *testing.T, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tree writes files; a map value is the content.
func tree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		write(t, dir, rel, content)
	}
}

func mkdir(t *testing.T, dir, rel string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// touch sets the modification time of dir/rel to base plus offset seconds.
func touch(t *testing.T, dir, rel string, offset int) {
	t.Helper()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	at := base.Add(time.Duration(offset) * time.Second)
	if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(rel)), at, at); err != nil {
		t.Fatal(err)
	}
}

func readString(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// rels turns absolute paths under dir into sorted '/'-separated relative
// paths.
func rels(t *testing.T, dir string, paths []string) []string {
	t.Helper()
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			t.Fatalf("path %q is not absolute", p)
		}
		r, err := filepath.Rel(dir, p)
		if err != nil || strings.HasPrefix(r, "..") {
			t.Fatalf("path %q is not under %s", p, dir)
		}
		out = append(out, filepath.ToSlash(r))
	}
	slices.Sort(out)
	return out
}

func sorted(s ...string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// obsText is the text of an observation.
func obsText(o events.Observation) string { return o.Common().Text() }

// wantError checks that o is an error observation whose text contains every
// fragment.
func wantError(t *testing.T, o events.Observation, err error, fragments ...string) {
	t.Helper()
	if err != nil {
		t.Fatalf("Go error %v, want an error observation", err)
	}
	if !o.Common().IsError {
		t.Fatalf("IsError = false, want true; text: %s", obsText(o))
	}
	for _, f := range fragments {
		if !strings.Contains(obsText(o), f) {
			t.Errorf("error text %q does not contain %q", obsText(o), f)
		}
	}
}

// wantOK checks that o is a success observation.
func wantOK(t *testing.T, o events.Observation, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("Go error: %v", err)
	}
	if o.Common().IsError {
		t.Fatalf("unexpected error observation: %s", obsText(o))
	}
}
