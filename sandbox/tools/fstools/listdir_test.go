package fstools_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

func listFixture(t *testing.T) (fstools.Root, string) {
	t.Helper()
	r, root := newRoot(t)
	tree(t, root, map[string]string{
		"b.txt":             "12345",
		"a.txt":             "1",
		"zdir/inner.txt":    "xy",
		"zdir/sub/deep.txt": "deep",
		"zdir/sub/more/x":   "",
		"adir/f.go":         "package f\n",
		".hidden/secret":    "",
		".dotfile":          "",
		"zdir/.dot":         "",
	})
	mkdir(t, root, "empty")
	symlink(t, filepath.Join(root, "zdir"), filepath.Join(root, "link"))
	return r, root
}

// listing returns each entry as "rel" or "rel/" for directories.
func listing(root string, o *events.ListDirectoryObservation) []string {
	var out []string
	for _, e := range o.Entries {
		rel, _ := filepath.Rel(root, e.Path)
		rel = filepath.ToSlash(rel)
		if e.IsDirectory {
			rel += "/"
		}
		out = append(out, rel)
	}
	return out
}

func TestListDirectory(t *testing.T) {
	r, root := listFixture(t)
	cases := []struct {
		name      string
		dir       string
		recursive bool
		want      []string
	}{
		{"default is the working directory", "", false, []string{"adir/", "empty/", "link/", "zdir/", "a.txt", "b.txt"}},
		{"dot", ".", false, []string{"adir/", "empty/", "link/", "zdir/", "a.txt", "b.txt"}},
		{"recursive goes two levels deep", ".", true, []string{
			"adir/", "adir/f.go", "empty/", "link/", "zdir/", "zdir/sub/", "zdir/inner.txt", "a.txt", "b.txt"}},
		{"subdirectory", "zdir", false, []string{"zdir/sub/", "zdir/inner.txt"}},
		{"subdirectory recursive", "zdir", true, []string{"zdir/sub/", "zdir/sub/more/", "zdir/sub/deep.txt", "zdir/inner.txt"}},
		{"absolute", filepath.Join(root, "zdir", "sub"), false, []string{"zdir/sub/more/", "zdir/sub/deep.txt"}},
		{"empty directory", "empty", true, nil},
		{"hidden directory named explicitly", ".hidden", false, []string{".hidden/secret"}},
		{"through a symlink inside the root", "link", false, []string{"link/sub/", "link/inner.txt"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := fstools.ListDirectory(context.Background(), r, &events.ListDirectoryAction{DirPath: c.dir, Recursive: c.recursive})
			wantOK(t, o, err)
			if got := listing(root, o); !slices.Equal(got, c.want) {
				t.Errorf("entries = %v, want %v", got, c.want)
			}
			if o.TotalCount != len(c.want) || o.IsTruncated {
				t.Errorf("total %d truncated %v", o.TotalCount, o.IsTruncated)
			}
			if o.DirPath == nil || !filepath.IsAbs(*o.DirPath) {
				t.Errorf("dir path %v", o.DirPath)
			}
			if len(c.want) == 0 && !strings.Contains(obsText(o), "is empty") {
				t.Errorf("text = %q", obsText(o))
			}
		})
	}
}

func TestListDirectoryEntries(t *testing.T) {
	r, root := listFixture(t)
	touch(t, root, "b.txt", 100)
	o, err := fstools.ListDirectory(context.Background(), r, &events.ListDirectoryAction{DirPath: "."})
	wantOK(t, o, err)
	byName := map[string]events.FileEntry{}
	for _, e := range o.Entries {
		byName[e.Name] = e
	}
	b := byName["b.txt"]
	want := time.Date(2024, 1, 1, 0, 1, 40, 0, time.UTC)
	if b.Path != filepath.Join(root, "b.txt") || b.Size != 5 || b.IsDirectory || !b.ModifiedTime.Equal(want) {
		t.Errorf("b.txt entry = %+v", b)
	}
	if d := byName["zdir"]; !d.IsDirectory || d.Size != 0 || d.Path != filepath.Join(root, "zdir") {
		t.Errorf("zdir entry = %+v", d)
	}
	if l := byName["link"]; !l.IsDirectory {
		t.Errorf("a symlink to a directory inside the root is listed as a directory: %+v", l)
	}
	text := obsText(o)
	for _, frag := range []string{"Contents of " + root, "zdir/\n", "b.txt (5 bytes)", "a.txt (1 bytes)"} {
		if !strings.Contains(text, frag) {
			t.Errorf("text %q does not contain %q", text, frag)
		}
	}
	if strings.Contains(text, ".hidden") || strings.Contains(text, ".dotfile") {
		t.Errorf("hidden entries listed: %q", text)
	}

	// Recursive text shows nested paths.
	o, err = fstools.ListDirectory(context.Background(), r, &events.ListDirectoryAction{DirPath: ".", Recursive: true})
	wantOK(t, o, err)
	if !strings.Contains(obsText(o), "zdir/inner.txt (2 bytes)") {
		t.Errorf("recursive text = %q", obsText(o))
	}
	// Symlinked directories are not descended into.
	for _, e := range o.Entries {
		if strings.HasPrefix(e.Path, filepath.Join(root, "link")+"/") {
			t.Errorf("descended into a symlink: %s", e.Path)
		}
	}
}

func TestListDirectoryCap(t *testing.T) {
	r, root := newRoot(t)
	for i := range 1100 {
		write(t, root, fmt.Sprintf("f%04d", i), "")
	}
	o, err := fstools.ListDirectory(context.Background(), r, &events.ListDirectoryAction{DirPath: "."})
	wantOK(t, o, err)
	if len(o.Entries) != fstools.MaxListEntries || o.TotalCount != 1100 || !o.IsTruncated {
		t.Fatalf("entries %d total %d truncated %v", len(o.Entries), o.TotalCount, o.IsTruncated)
	}
	if o.Entries[999].Name != "f0999" {
		t.Errorf("last entry %s", o.Entries[999].Name)
	}
	if !strings.Contains(obsText(o), "showing 1000 of 1100 entries") {
		t.Error("no truncation note")
	}
}

func TestListDirectoryErrors(t *testing.T) {
	r, _ := listFixture(t)
	cases := []struct {
		name, dir, fragment string
	}{
		{"missing", "nope", "does not exist"},
		{"a file", "a.txt", "is not a directory"},
		{"outside", "..", "outside the workspace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := fstools.ListDirectory(context.Background(), r, &events.ListDirectoryAction{DirPath: c.dir})
			wantError(t, o, err, c.fragment)
		})
	}
}
