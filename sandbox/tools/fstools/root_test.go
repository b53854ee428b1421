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

// call runs one tool on a path argument.
type call func(ctx context.Context, r fstools.Root, p string) (events.Observation, error)

// pathTools calls each tool with p as its path argument.
var pathTools = map[string]call{
	"glob": func(ctx context.Context, r fstools.Root, p string) (events.Observation, error) {
		return wrap(fstools.Glob(ctx, r, &events.GlobAction{Pattern: "*", Path: &p}))
	},
	"grep": func(ctx context.Context, r fstools.Root, p string) (events.Observation, error) {
		return wrap(fstools.Grep(ctx, r, &events.GrepAction{Pattern: "x", Path: &p}))
	},
	"list_directory": func(ctx context.Context, r fstools.Root, p string) (events.Observation, error) {
		return wrap(fstools.ListDirectory(ctx, r, &events.ListDirectoryAction{DirPath: p}))
	},
	"read_file": func(ctx context.Context, r fstools.Root, p string) (events.Observation, error) {
		return wrap(fstools.ReadFile(ctx, r, &events.ReadFileAction{FilePath: p}))
	},
	"write_file": func(ctx context.Context, r fstools.Root, p string) (events.Observation, error) {
		return wrap(fstools.WriteFile(ctx, r, &events.WriteFileAction{FilePath: filepath.Join(p, "new.txt"), Content: "x"}))
	},
	"edit": func(ctx context.Context, r fstools.Root, p string) (events.Observation, error) {
		return wrap(fstools.Edit(ctx, r, &events.EditAction{FilePath: filepath.Join(p, "f.txt"), OldString: "secret", NewString: "y", ExpectedReplacements: 1}))
	},
	"edit_create": func(ctx context.Context, r fstools.Root, p string) (events.Observation, error) {
		return wrap(fstools.Edit(ctx, r, &events.EditAction{FilePath: filepath.Join(p, "created.txt"), NewString: "y", ExpectedReplacements: 1}))
	},
}

// wrap turns a typed result into an interface without a typed nil.
func wrap[O events.Observation](o O, err error) (events.Observation, error) {
	if err != nil {
		return nil, err
	}
	return o, nil
}

func TestPathOutsideRoot(t *testing.T) {
	r, root := newRoot(t)
	outside := t.TempDir()
	write(t, outside, "f.txt", "secret x\n")
	write(t, outside, "d/f.txt", "secret x\n")
	symlink(t, outside, filepath.Join(root, "link"))
	symlink(t, filepath.Join(outside, "f.txt"), filepath.Join(root, "filelink"))
	mkdir(t, root, "sub")

	// The path arguments are directories for glob, grep, list_directory,
	// write_file and edit (which add a file name), files for read_file.
	cases := []struct {
		name     string
		dir      string // for directory tools
		file     string // for read_file
		fragment string
	}{
		{"dotdot", "../" + filepath.Base(outside), "../" + filepath.Base(outside) + "/f.txt", "is outside the workspace"},
		{"dotdot from subdir", "sub/../../" + filepath.Base(outside), "sub/../../" + filepath.Base(outside) + "/f.txt", "is outside the workspace"},
		{"absolute", outside, filepath.Join(outside, "f.txt"), "is outside the workspace"},
		{"symlinked directory", "link", "link/f.txt", "through a symbolic link"},
		{"symlinked subdirectory", filepath.Join(root, "link", "d"), filepath.Join(root, "link", "d", "f.txt"), "through a symbolic link"},
		{"symlinked file", "", "filelink", "through a symbolic link"},
	}
	for _, c := range cases {
		for name, fn := range pathTools {
			arg := c.dir
			if name == "read_file" {
				arg = c.file
			}
			if arg == "" {
				continue
			}
			t.Run(c.name+"/"+name, func(t *testing.T) {
				o, err := fn(context.Background(), r, arg)
				wantError(t, o, err, c.fragment)
			})
		}
	}
	// Nothing was written outside.
	for _, p := range []string{"new.txt", "created.txt", "d/new.txt", "d/created.txt"} {
		if _, err := os.Stat(filepath.Join(outside, p)); err == nil {
			t.Errorf("%s was created outside the root", p)
		}
	}
	if got := readString(t, filepath.Join(outside, "f.txt")); got != "secret x\n" {
		t.Errorf("outside file changed: %q", got)
	}
}

func TestRelativeAndAbsolutePaths(t *testing.T) {
	_, root := newRoot(t)
	write(t, root, "sub/a.txt", "in sub\n")
	write(t, root, "a.txt", "at root\n")
	r := fstools.Root{Root: root, WorkDir: filepath.Join(root, "sub")}
	ctx := context.Background()
	cases := []struct {
		name, path, want, wantPath string
	}{
		{"relative to the working directory", "a.txt", "in sub\n", filepath.Join(root, "sub", "a.txt")},
		{"dot relative", "./a.txt", "in sub\n", filepath.Join(root, "sub", "a.txt")},
		{"parent inside the root", "../a.txt", "at root\n", filepath.Join(root, "a.txt")},
		{"absolute", filepath.Join(root, "a.txt"), "at root\n", filepath.Join(root, "a.txt")},
		{"unclean absolute", root + "/sub/../sub//a.txt", "in sub\n", filepath.Join(root, "sub", "a.txt")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := fstools.ReadFile(ctx, r, &events.ReadFileAction{FilePath: c.path})
			wantOK(t, o, err)
			if o.FileContent != c.want || o.FilePath != c.wantPath {
				t.Errorf("got %q from %s, want %q from %s", o.FileContent, o.FilePath, c.want, c.wantPath)
			}
		})
	}

	// A relative WorkDir is relative to Root; an empty one is Root.
	o, err := fstools.ReadFile(ctx, fstools.Root{Root: root, WorkDir: "sub"}, &events.ReadFileAction{FilePath: "a.txt"})
	wantOK(t, o, err)
	if o.FileContent != "in sub\n" {
		t.Errorf("relative WorkDir: got %q", o.FileContent)
	}
	o, err = fstools.ReadFile(ctx, fstools.Root{Root: root}, &events.ReadFileAction{FilePath: "a.txt"})
	wantOK(t, o, err)
	if o.FileContent != "at root\n" {
		t.Errorf("empty WorkDir: got %q", o.FileContent)
	}
}

func TestSymlinkInsideRootAllowed(t *testing.T) {
	r, root := newRoot(t)
	write(t, root, "real/f.txt", "hello\n")
	symlink(t, filepath.Join(root, "real"), filepath.Join(root, "alias"))
	o, err := fstools.ReadFile(context.Background(), r, &events.ReadFileAction{FilePath: "alias/f.txt"})
	wantOK(t, o, err)
	if o.FileContent != "hello\n" || o.FilePath != filepath.Join(root, "alias", "f.txt") {
		t.Errorf("got %q at %s", o.FileContent, o.FilePath)
	}
}

func TestRootThroughSymlink(t *testing.T) {
	// The root itself may be reached through a symbolic link.
	base := t.TempDir()
	real := mkdir(t, base, "real")
	write(t, real, "f.txt", "x\n")
	link := filepath.Join(base, "ws")
	symlink(t, real, link)
	r := fstools.Root{Root: link, WorkDir: link}
	o, err := fstools.ReadFile(context.Background(), r, &events.ReadFileAction{FilePath: "f.txt"})
	wantOK(t, o, err)
	if o.FilePath != filepath.Join(link, "f.txt") {
		t.Errorf("FilePath = %s, want it under the root as given", o.FilePath)
	}
	g, err := fstools.Glob(context.Background(), r, &events.GlobAction{Pattern: "*.txt"})
	wantOK(t, g, err)
	if len(g.Files) != 1 || g.Files[0] != filepath.Join(link, "f.txt") {
		t.Errorf("glob through a symlinked root: %v", g.Files)
	}
}

func TestInvalidRootIsGoError(t *testing.T) {
	ctx := context.Background()
	for _, r := range []fstools.Root{{Root: "relative"}, {Root: filepath.Join(t.TempDir(), "missing")}} {
		if o, err := fstools.ReadFile(ctx, r, &events.ReadFileAction{FilePath: "x"}); err == nil {
			t.Errorf("root %q: got observation %v, want a Go error", r.Root, o)
		} else if o != nil {
			t.Errorf("root %q: observation should be nil with an error", r.Root)
		}
	}
}

func TestCancelledContext(t *testing.T) {
	r, root := newRoot(t)
	write(t, root, "f.txt", "x\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, fn := range pathTools {
		if strings.HasPrefix(name, "edit") || name == "write_file" || name == "read_file" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			if _, err := fn(ctx, r, "."); err == nil {
				t.Fatal("no error with a cancelled context")
			}
		})
	}
	if _, err := fstools.ReadFile(ctx, r, &events.ReadFileAction{FilePath: "f.txt"}); err == nil {
		t.Error("read_file: no error with a cancelled context")
	}
	if _, err := fstools.WriteFile(ctx, r, &events.WriteFileAction{FilePath: "g.txt", Content: "y"}); err == nil {
		t.Error("write_file: no error with a cancelled context")
	}
	if _, err := os.Stat(filepath.Join(root, "g.txt")); err == nil {
		t.Error("write_file wrote despite the cancelled context")
	}
	tt, err := fstools.NewTaskTracker(filepath.Join(t.TempDir(), "tasks.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tt.Execute(ctx, &events.TaskTrackerAction{Command: "view"}); err == nil {
		t.Error("task_tracker: no error with a cancelled context")
	}
}
