package pathguard_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acs-project/acs/internal/pathguard"
)

func TestResolve(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	out := filepath.Join(base, "out")
	for _, d := range []string{filepath.Join(root, "sub"), out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"root/in":       "sub",
		"root/abs-in":   filepath.Join(root, "sub"),
		"root/out":      out,
		"root/rel-out":  "../out",
		"root/dangling": filepath.Join(out, "missing"),
		"root/loop":     "loop",
		"root/chain":    "in",
		"rootlink":      "root",
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(base, l)); err != nil {
			t.Fatal(err)
		}
	}
	roots := []string{root}
	for _, tc := range []struct {
		name  string
		roots []string
		path  string
		want  string
		err   error
	}{
		{name: "root itself", path: root, want: root},
		{name: "existing", path: root + "/sub", want: root + "/sub"},
		{name: "missing tail", path: root + "/sub/a/b.txt", want: root + "/sub/a/b.txt"},
		{name: "relative link", path: root + "/in/x", want: root + "/sub/x"},
		{name: "absolute link", path: root + "/abs-in/x", want: root + "/sub/x"},
		{name: "link chain", path: root + "/chain/x", want: root + "/sub/x"},
		{name: "dot segments", path: root + "/./sub/../sub//x", want: root + "/sub/x"},
		{name: "symlinked root", roots: []string{filepath.Join(base, "rootlink")}, path: root + "/sub", want: root + "/sub"},
		{name: "path through symlinked root", path: filepath.Join(base, "rootlink", "sub"), want: root + "/sub"},
		{name: "relative", path: "root/sub", err: pathguard.ErrNotAbsolute},
		{name: "empty", path: "", err: pathguard.ErrNotAbsolute},
		{name: "traversal", path: root + "/../out", err: pathguard.ErrOutsideRoots},
		{name: "prefix sibling", path: root + "x", err: pathguard.ErrOutsideRoots},
		{name: "link out", path: root + "/out/f", err: pathguard.ErrOutsideRoots},
		{name: "relative link out", path: root + "/rel-out", err: pathguard.ErrOutsideRoots},
		{name: "dangling link out", path: root + "/dangling", err: pathguard.ErrOutsideRoots},
		{name: "no roots", roots: []string{}, path: root, err: pathguard.ErrOutsideRoots},
		{name: "relative root ignored", roots: []string{"root"}, path: root, err: pathguard.ErrOutsideRoots},
		{name: "filesystem root", roots: []string{"/"}, path: out, want: out},
		{name: "loop", path: root + "/loop/x", err: pathguard.ErrInvalidPath},
		{name: "nul", path: root + "/a\x00b", err: pathguard.ErrInvalidPath},
		{name: "too long", path: root + strings.Repeat("/d", 2100), err: pathguard.ErrInvalidPath},
		{name: "name too long", path: root + "/" + strings.Repeat("n", 256), err: pathguard.ErrInvalidPath},
		{name: "longest name", path: root + "/" + strings.Repeat("n", 255), want: root + "/" + strings.Repeat("n", 255)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := roots
			if tc.roots != nil {
				r = tc.roots
			}
			got, err := pathguard.Resolve(r, tc.path)
			switch {
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Errorf("err = %v, want %v", err, tc.err)
				}
			case err != nil:
				t.Errorf("err = %v", err)
			case got != tc.want:
				t.Errorf("Resolve = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestResolveErrorsNameNoPath: Resolve's errors go to remote clients as
// they are, so none names the path or a root.
func TestResolveErrorsNameNoPath(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop", filepath.Join(root, "loop")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{root + "/loop/x", root + "/a\x00b", root + strings.Repeat("/d", 2100),
		root + "/" + strings.Repeat("n", 300), base + "/outside"} {
		_, err := pathguard.Resolve([]string{root}, p)
		if err == nil || strings.Contains(err.Error(), base) {
			t.Errorf("Resolve(%.60q): %v", p, err)
		}
	}
}

func TestRelAndScrub(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	conv := filepath.Join(ws, "conv")
	if err := os.MkdirAll(conv, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ws, filepath.Join(base, "alias")); err != nil {
		t.Fatal(err)
	}
	roots := []string{conv, ws}
	for _, tc := range []struct{ path, want string }{
		{ws, "."},
		{ws + "/a/b.txt", "a/b.txt"},
		{conv + "/x", "conv/x"}, // relative to the outermost root
		{ws + "/a/../c", "c"},
		{base + "/alias/a.txt", "a.txt"}, // through a link to a root
		{base + "/elsewhere/f.txt", "f.txt"},
	} {
		if got := pathguard.Rel(roots, tc.path); got != tc.want {
			t.Errorf("Rel(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}
	msg := "fatal: '" + conv + "/x' in " + ws + ": see " + ws + "x and " + ws
	want := "fatal: 'conv/x' in .: see " + ws + "x and ."
	if got := pathguard.Scrub(roots, msg); got != want {
		t.Errorf("Scrub = %q\nwant    %q", got, want)
	}
}
