package fstools_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

func TestWriteFile(t *testing.T) {
	r, root := newRoot(t)
	write(t, root, "exists.txt", "old\n")
	if err := os.Chmod(filepath.Join(root, "exists.txt"), 0o640); err != nil {
		t.Fatal(err)
	}
	write(t, root, "script.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(root, "script.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, root, "target.txt", "target\n")
	symlink(t, filepath.Join(root, "target.txt"), filepath.Join(root, "alias.txt"))
	write(t, root, "bin.dat", "a\x00b")

	cases := []struct {
		name, file, content string
		isNew               bool
		old                 *string
		mode                os.FileMode
		real                string // file actually written (default: file)
	}{
		{"new file", "new.txt", "hello\n", true, nil, 0o644, ""},
		{"new file in new directories", "a/b/c/new.txt", "deep", true, nil, 0o644, ""},
		{"overwrite keeps the mode", "exists.txt", "new\n", false, sp("old\n"), 0o640, ""},
		{"overwrite keeps the executable bit", "script.sh", "#!/bin/sh\necho hi\n", false, sp("#!/bin/sh\n"), 0o755, ""},
		{"through a symlink writes the target", "alias.txt", "via link\n", false, sp("target\n"), 0o644, "target.txt"},
		{"binary old content is not reported", "bin.dat", "text now", false, nil, 0o644, ""},
		{"empty content", "empty.txt", "", true, nil, 0o644, ""},
		{"absolute path", filepath.Join(root, "abs.txt"), "abs", true, nil, 0o644, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := fstools.WriteFile(context.Background(), r, &events.WriteFileAction{FilePath: c.file, Content: c.content})
			wantOK(t, o, err)
			p := c.file
			if !filepath.IsAbs(p) {
				p = filepath.Join(root, p)
			}
			if o.FilePath == nil || *o.FilePath != p {
				t.Errorf("file path %v, want %s", o.FilePath, p)
			}
			if o.IsNewFile != c.isNew {
				t.Errorf("IsNewFile = %v", o.IsNewFile)
			}
			if (o.OldContent == nil) != (c.old == nil) || o.OldContent != nil && *o.OldContent != *c.old {
				t.Errorf("OldContent = %v, want %v", o.OldContent, c.old)
			}
			if o.NewContent == nil || *o.NewContent != c.content {
				t.Errorf("NewContent = %v", o.NewContent)
			}
			real := p
			if c.real != "" {
				real = filepath.Join(root, c.real)
				if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Errorf("the symlink was replaced")
				}
			}
			if got := readString(t, real); got != c.content {
				t.Errorf("file content %q", got)
			}
			fi, err := os.Stat(real)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != c.mode {
				t.Errorf("mode %v, want %v", fi.Mode().Perm(), c.mode)
			}
			how := "created a new file"
			if !c.isNew {
				how = "overwrote the existing file"
			}
			if !strings.Contains(obsText(o), how) || !strings.HasPrefix(obsText(o), "Wrote ") {
				t.Errorf("text = %q", obsText(o))
			}
		})
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("leftover %s", e.Name())
		}
	}
}

func TestWriteFileErrors(t *testing.T) {
	r, root := newRoot(t)
	mkdir(t, root, "dir")
	write(t, root, "file", "x")
	cases := []struct {
		name, file, frag string
	}{
		{"directory", "dir", "is a directory"},
		{"parent is a file", "file/child.txt", "is a file, not a directory"},
		{"empty path", "", "required"},
		{"outside", "../escape.txt", "outside the workspace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := fstools.WriteFile(context.Background(), r, &events.WriteFileAction{FilePath: c.file, Content: "y"})
			wantError(t, o, err, c.frag)
		})
	}
	if os.Geteuid() != 0 {
		write(t, root, "ro.txt", "ro")
		if err := os.Chmod(filepath.Join(root, "ro.txt"), 0o444); err != nil {
			t.Fatal(err)
		}
		o, err := fstools.WriteFile(context.Background(), r, &events.WriteFileAction{FilePath: "ro.txt", Content: "y"})
		wantError(t, o, err, "Permission denied")
		if got := readString(t, filepath.Join(root, "ro.txt")); got != "ro" {
			t.Errorf("read-only file replaced: %q", got)
		}
	}
}

func TestEdit(t *testing.T) {
	type want struct {
		content      string
		isNew        bool
		replacements int
		old          *string
		frag         string
	}
	cases := []struct {
		name    string
		initial *string // nil: the file does not exist
		action  events.EditAction
		want    want
	}{
		{"replace one", sp("a\nfoo\nb\n"), events.EditAction{OldString: "foo", NewString: "bar", ExpectedReplacements: 1},
			want{"a\nbar\nb\n", false, 1, sp("a\nfoo\nb\n"), "replaced 1 occurrence"}},
		{"replace several", sp("x x x"), events.EditAction{OldString: "x", NewString: "yy", ExpectedReplacements: 3},
			want{"yy yy yy", false, 3, sp("x x x"), "replaced 3 occurrence"}},
		{"non-overlapping count", sp("aaaa"), events.EditAction{OldString: "aa", NewString: "b", ExpectedReplacements: 2},
			want{"bb", false, 2, sp("aaaa"), ""}},
		{"zero expected means one", sp("one two"), events.EditAction{OldString: "two", NewString: "2"},
			want{"one 2", false, 1, sp("one two"), ""}},
		{"delete", sp("keep drop keep"), events.EditAction{OldString: " drop", NewString: "", ExpectedReplacements: 1},
			want{"keep keep", false, 1, sp("keep drop keep"), ""}},
		{"multi-line with snippet", sp("l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n"), events.EditAction{OldString: "l5\nl6", NewString: "L5\nL6", ExpectedReplacements: 1},
			want{"l1\nl2\nl3\nl4\nL5\nL6\nl7\nl8\nl9\nl10\n", false, 1, nil, "     5\tL5\n     6\tL6\n     7\tl7"}},
		{"create", nil, events.EditAction{OldString: "", NewString: "new\nfile\n", ExpectedReplacements: 1},
			want{"new\nfile\n", true, 1, nil, "Created"}},
		{"fill an empty file", sp(""), events.EditAction{OldString: "", NewString: "filled", ExpectedReplacements: 1},
			want{"filled", false, 1, sp(""), "Created"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, root := newRoot(t)
			p := filepath.Join(root, "sub", "f.txt")
			if c.initial != nil {
				write(t, root, "sub/f.txt", *c.initial)
			}
			a := c.action
			a.FilePath = "sub/f.txt"
			o, err := fstools.Edit(context.Background(), r, &a)
			wantOK(t, o, err)
			if got := readString(t, p); got != c.want.content {
				t.Errorf("content = %q, want %q", got, c.want.content)
			}
			if o.FilePath == nil || *o.FilePath != p || o.IsNewFile != c.want.isNew || o.ReplacementsMade != c.want.replacements {
				t.Errorf("path %v new %v replacements %d", o.FilePath, o.IsNewFile, o.ReplacementsMade)
			}
			if o.NewContent == nil || *o.NewContent != c.want.content {
				t.Errorf("NewContent = %v", o.NewContent)
			}
			if c.want.old != nil && (o.OldContent == nil || *o.OldContent != *c.want.old) {
				t.Errorf("OldContent = %v, want %q", o.OldContent, *c.want.old)
			}
			if c.want.isNew && o.OldContent != nil {
				t.Errorf("OldContent = %q for a new file", *o.OldContent)
			}
			if !strings.Contains(obsText(o), c.want.frag) {
				t.Errorf("text %q does not contain %q", obsText(o), c.want.frag)
			}
		})
	}
}

func TestEditKeepsMode(t *testing.T) {
	r, root := newRoot(t)
	p := write(t, root, "run.sh", "echo old\n")
	if err := os.Chmod(p, 0o750); err != nil {
		t.Fatal(err)
	}
	o, err := fstools.Edit(context.Background(), r, &events.EditAction{FilePath: "run.sh", OldString: "old", NewString: "new", ExpectedReplacements: 1})
	wantOK(t, o, err)
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o750 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
}

func TestEditErrors(t *testing.T) {
	cases := []struct {
		name    string
		initial *string
		action  events.EditAction
		frags   []string
	}{
		{"not found", sp("abc"), events.EditAction{OldString: "xyz", NewString: "q", ExpectedReplacements: 1}, []string{"0 occurrences", "read_file"}},
		{"more than expected", sp("x x"), events.EditAction{OldString: "x", NewString: "y", ExpectedReplacements: 1}, []string{"expected 1 occurrence(s)", "found 2", "expected_replacements to 2"}},
		{"fewer than expected", sp("x x"), events.EditAction{OldString: "x", NewString: "y", ExpectedReplacements: 3}, []string{"expected 3", "found 2"}},
		{"identical", sp("x"), events.EditAction{OldString: "x", NewString: "x", ExpectedReplacements: 1}, []string{"identical"}},
		{"create over a non-empty file", sp("content"), events.EditAction{OldString: "", NewString: "new", ExpectedReplacements: 1}, []string{"already exists and is not empty"}},
		{"missing file", nil, events.EditAction{OldString: "a", NewString: "b", ExpectedReplacements: 1}, []string{"does not exist", "empty old_string"}},
		{"binary file", sp("a\x00b"), events.EditAction{OldString: "a", NewString: "b", ExpectedReplacements: 1}, []string{"binary"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, root := newRoot(t)
			p := filepath.Join(root, "f.txt")
			if c.initial != nil {
				write(t, root, "f.txt", *c.initial)
			}
			a := c.action
			a.FilePath = "f.txt"
			o, err := fstools.Edit(context.Background(), r, &a)
			wantError(t, o, err, c.frags...)
			if c.initial != nil {
				if got := readString(t, p); got != *c.initial {
					t.Errorf("file changed to %q", got)
				}
			} else if _, err := os.Stat(p); err == nil {
				t.Error("file created")
			}
		})
	}
	r, root := newRoot(t)
	mkdir(t, root, "dir")
	o, err := fstools.Edit(context.Background(), r, &events.EditAction{FilePath: "dir", OldString: "a", NewString: "b", ExpectedReplacements: 1})
	wantError(t, o, err, "is a directory")
	o, err = fstools.Edit(context.Background(), r, &events.EditAction{FilePath: "", OldString: "a", NewString: "b", ExpectedReplacements: 1})
	wantError(t, o, err, "required")
}
