package wsarchive_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/wsarchive"
	"github.com/acs-project/acs/internal/wsarchive/wsarchivetest"
	"github.com/acs-project/acs/sandbox/secrets"
)

type entry struct {
	typ     byte
	mode    int64
	content string
	link    string
}

// readArchive decodes a complete archive and checks what every entry must
// satisfy (wsarchivetest.Read).
func readArchive(t *testing.T, b []byte) (map[string]entry, []string) {
	t.Helper()
	got, order := wsarchivetest.Read(t, b)
	out := make(map[string]entry, len(got))
	for name, e := range got {
		out[name] = entry{e.Typ, e.Mode, e.Content, e.Link}
	}
	return out, order
}

// isCompleteGzip reports whether b is a whole, valid gzip stream.
func isCompleteGzip(b []byte) bool {
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return false
	}
	_, err = io.Copy(io.Discard, gz)
	return err == nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	must(t, os.WriteFile(path, []byte(content), perm))
	must(t, os.Chmod(path, perm)) // regardless of the umask
}

func mkdir(t *testing.T, path string, perm os.FileMode) {
	t.Helper()
	must(t, os.MkdirAll(path, perm))
	must(t, os.Chmod(path, perm))
}

// hookWriter runs hook before its first write, and fails every write with
// err when set.
type hookWriter struct {
	hook func()
	buf  bytes.Buffer
	err  error
}

func (h *hookWriter) Write(p []byte) (int, error) {
	if h.hook != nil {
		h.hook()
		h.hook = nil
	}
	if h.err != nil {
		return 0, h.err
	}
	return h.buf.Write(p)
}

func TestWrite(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "control-plane-secret")
	if err := os.WriteFile(outside, []byte("must not be archived"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		hook  func(t *testing.T, dir string) // runs before the first byte is written
		opts  wsarchive.Options
		want  map[string]entry
	}{{
		name:  "empty directory",
		setup: func(t *testing.T, dir string) {},
		want:  map[string]entry{},
	}, {
		name: "files, directories and links",
		setup: func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, "dir", "sub"), 0o700)
			mkdir(t, filepath.Join(dir, "dir"), 0o700)
			mkdir(t, filepath.Join(dir, "empty"), 0o750)
			mkdir(t, filepath.Join(dir, "bin"), 0o755)
			write(t, filepath.Join(dir, "top.txt"), "top", 0o644)
			write(t, filepath.Join(dir, "bin", "run.sh"), "#!/bin/sh\n", 0o755)
			write(t, filepath.Join(dir, "dir", "sub", "deep.txt"), "deep", 0o600)
			write(t, filepath.Join(dir, "dir", "empty-file"), "", 0o644)
			must(t, os.Symlink("top.txt", filepath.Join(dir, "link-in")))
			must(t, os.Symlink(outside, filepath.Join(dir, "link-out")))
			must(t, os.Symlink(filepath.Dir(outside), filepath.Join(dir, "link-out-dir")))
			must(t, os.Symlink("/", filepath.Join(dir, "link-root")))
			must(t, os.Symlink("missing", filepath.Join(dir, "link-dangling")))
		},
		want: map[string]entry{
			"bin/":             {tar.TypeDir, 0o755, "", ""},
			"bin/run.sh":       {tar.TypeReg, 0o755, "#!/bin/sh\n", ""},
			"dir/":             {tar.TypeDir, 0o700, "", ""},
			"dir/empty-file":   {tar.TypeReg, 0o644, "", ""},
			"dir/sub/":         {tar.TypeDir, 0o700, "", ""},
			"dir/sub/deep.txt": {tar.TypeReg, 0o600, "deep", ""},
			"empty/":           {tar.TypeDir, 0o750, "", ""},
			"link-dangling":    {tar.TypeSymlink, 0o777, "", "missing"},
			"link-in":          {tar.TypeSymlink, 0o777, "", "top.txt"},
			"link-out":         {tar.TypeSymlink, 0o777, "", outside},
			"link-out-dir":     {tar.TypeSymlink, 0o777, "", filepath.Dir(outside)},
			"link-root":        {tar.TypeSymlink, 0o777, "", "/"},
			"top.txt":          {tar.TypeReg, 0o644, "top", ""},
		},
	}, {
		name: "special files are skipped without blocking",
		setup: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "a.txt"), "a", 0o644)
			must(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600))
			// A socket path must be short: listen in dir via a relative name.
			t.Chdir(dir)
			l, err := net.Listen("unix", "sock")
			must(t, err)
			t.Cleanup(func() { l.Close() })
		},
		want: map[string]entry{"a.txt": {tar.TypeReg, 0o644, "a", ""}},
	}, {
		name: "excluded paths",
		setup: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "state", "conversations", "c.json"), "state", 0o600)
			mkdir(t, filepath.Join(dir, "state"), 0o700)
			write(t, filepath.Join(dir, "statefile"), "kept", 0o644) // a prefix is no match
			write(t, filepath.Join(dir, "src", "main.go"), "package main", 0o644)
			write(t, filepath.Join(dir, "src", "cache", "blob"), "cache", 0o644)
			write(t, filepath.Join(dir, "src", "secret.txt"), "secret", 0o644)
			must(t, os.Symlink("src", filepath.Join(dir, "link")))
			mkdir(t, filepath.Join(dir, "src"), 0o755)
			mkdir(t, filepath.Join(dir, "src", "cache"), 0o755)
		},
		opts: wsarchive.Options{Exclude: []string{"state", "src/cache", "src/secret.txt", "link", "not-there", "src/main.go/x"}},
		want: map[string]entry{
			"statefile":   {tar.TypeReg, 0o644, "kept", ""},
			"src/":        {tar.TypeDir, 0o755, "", ""},
			"src/main.go": {tar.TypeReg, 0o644, "package main", ""},
		},
	}, {
		name: "files and directories that vanish are left out",
		setup: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "a.txt"), "a", 0o644)
			write(t, filepath.Join(dir, "b.txt"), "b", 0o644)
			write(t, filepath.Join(dir, "c", "d.txt"), "d", 0o644)
			write(t, filepath.Join(dir, "e.txt"), "e", 0o644)
		},
		hook: func(t *testing.T, dir string) { // a.txt is being archived
			must(t, os.Remove(filepath.Join(dir, "b.txt")))
			must(t, os.RemoveAll(filepath.Join(dir, "c")))
		},
		want: map[string]entry{"a.txt": {tar.TypeReg, 0o644, "a", ""}, "e.txt": {tar.TypeReg, 0o644, "e", ""}},
	}, {
		name: "a file replaced by a pipe is skipped without blocking",
		setup: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "a.txt"), "a", 0o644)
			write(t, filepath.Join(dir, "b.txt"), "b", 0o644)
		},
		hook: func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "b.txt")))
			must(t, syscall.Mkfifo(filepath.Join(dir, "b.txt"), 0o600))
		},
		want: map[string]entry{"a.txt": {tar.TypeReg, 0o644, "a", ""}},
	}, {
		name:  "a file that grows is archived with its size when opened",
		setup: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "log"), "first\n", 0o644) },
		hook: func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, "log"), os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			_, err = f.WriteString("second\n")
			must(t, err)
			must(t, f.Close())
		},
		want: map[string]entry{"log": {tar.TypeReg, 0o644, "first\n", ""}},
	}, {
		name: "a directory swapped for a link out is never followed",
		setup: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "a.txt"), "a", 0o644)
			write(t, filepath.Join(dir, "sub", "x.txt"), "x", 0o644)
			mkdir(t, filepath.Join(dir, "sub"), 0o755)
		},
		hook: func(t *testing.T, dir string) {
			must(t, os.RemoveAll(filepath.Join(dir, "sub")))
			must(t, os.Symlink(filepath.Dir(outside), filepath.Join(dir, "sub")))
		},
		want: nil, // checked below: the archive may fail, but never reads outside
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			w := &hookWriter{}
			if tc.hook != nil {
				w.hook = func() { tc.hook(t, dir) }
			}
			done := make(chan error, 1)
			go func() { done <- tc.opts.Write(context.Background(), dir, w) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("archive hangs")
			}
			if tc.want == nil {
				if bytes.Contains(w.buf.Bytes(), []byte("must not be archived")) {
					t.Fatal("archive read outside the directory")
				}
				if err == nil {
					got, _ := readArchive(t, w.buf.Bytes())
					for name := range got {
						if strings.HasPrefix(name, "sub/") {
							t.Fatalf("archive followed a link out: %v", got)
						}
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, order := readArchive(t, w.buf.Bytes())
			for name, want := range tc.want {
				if g, ok := got[name]; !ok {
					t.Errorf("missing %s", name)
				} else if g != want {
					t.Errorf("%s: got %+v, want %+v", name, g, want)
				}
			}
			for name := range got {
				if _, ok := tc.want[name]; !ok {
					t.Errorf("unexpected entry %s", name)
				}
			}
			// Lexical order: a directory comes before its contents.
			if !slices.IsSorted(order) {
				t.Errorf("entries not in lexical order: %q", order)
			}
		})
	}
}

// Write via the package function is Options{}.Write.
func TestWriteDefault(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "conversations", "c.json"), "{}", 0o600)
	var buf bytes.Buffer
	must(t, wsarchive.Write(context.Background(), dir, &buf))
	got, _ := readArchive(t, buf.Bytes())
	if got["conversations/c.json"].content != "{}" || len(got) != 2 {
		t.Fatalf("got %v", got)
	}
}

// TestWriteMasked archives with a secret masker: files holding the value
// (small ones buffered in memory, a large one through a temporary file) are
// archived masked with a size to match, names and link targets too, and
// every other file byte for byte.
func TestWriteMasked(t *testing.T) {
	const secret = "SECRET-VALUE-42"
	dir := t.TempDir()
	write(t, filepath.Join(dir, "leak.txt"), "before "+secret+" after\n", 0o640)
	plain := make([]byte, 100<<10)
	rand.Read(plain)
	plain = bytes.ReplaceAll(plain, []byte("S"), []byte("s")) // cannot hold the secret
	must(t, os.WriteFile(filepath.Join(dir, "plain.bin"), plain, 0o600))
	// Larger than what is buffered in memory, with the value across the
	// point where the buffer moves to a file, and at the very end.
	big := strings.Repeat("x", wsarchive.MaskMemory-5) + secret + strings.Repeat("y\n", 1<<18) + secret
	write(t, filepath.Join(dir, "big.txt"), big, 0o600)
	mkdir(t, filepath.Join(dir, "dir-"+secret), 0o755)
	write(t, filepath.Join(dir, "dir-"+secret, "x"), "x", 0o600)
	must(t, os.Symlink("target-"+secret, filepath.Join(dir, "link")))

	tmp := t.TempDir()
	masker := secrets.NewMasker(secret)
	opts := wsarchive.Options{TempDir: tmp, MaskName: masker.Mask,
		Mask: func(w io.Writer) io.WriteCloser { return masker.Writer(w) }}
	var buf bytes.Buffer
	must(t, opts.Write(context.Background(), dir, &buf))
	got, _ := readArchive(t, buf.Bytes())

	h := secrets.Hidden
	if e := got["leak.txt"]; e.content != "before "+h+" after\n" || e.mode != 0o640 {
		t.Errorf("leak.txt: %q (mode %o)", e.content, e.mode)
	}
	if got["plain.bin"].content != string(plain) {
		t.Error("plain.bin is not archived byte for byte")
	}
	if want := strings.ReplaceAll(big, secret, h); got["big.txt"].content != want {
		t.Errorf("big.txt: %d bytes, want %d with the value masked", len(got["big.txt"].content), len(want))
	}
	if got["dir-"+h+"/x"].content != "x" || got["link"].link != "target-"+h {
		t.Errorf("names and link targets are not masked: %v", slices.Sorted(maps.Keys(got)))
	}
	for name, e := range got {
		if strings.Contains(name+e.content+e.link, secret) {
			t.Errorf("entry %s holds the secret", name)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}

	// Without Mask the same tree is archived as is.
	buf.Reset()
	must(t, wsarchive.Write(context.Background(), dir, &buf))
	raw, _ := readArchive(t, buf.Bytes())
	if raw["leak.txt"].content != "before "+secret+" after\n" || raw["big.txt"].content != big {
		t.Error("without Mask the content must be archived unchanged")
	}
}

func fill(t *testing.T, dir string, files, size int) {
	t.Helper()
	for i := range files {
		b := make([]byte, size)
		rand.Read(b) // incompressible: gzip writes as it goes
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.bin", i)), b, 0o600))
	}
}

func TestWriteErrors(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	diskFull := errors.New("disk full")
	type errCase struct {
		name string
		// setup fills dir and returns the context, the directory to
		// archive and the writer.
		setup func(t *testing.T, dir string) (context.Context, string, *hookWriter)
		opts  wsarchive.Options
		want  func(err error) bool
		// nothingWritten: the error comes before the first byte.
		nothingWritten bool
	}
	cases := []errCase{{
		name: "missing directory",
		setup: func(t *testing.T, dir string) (context.Context, string, *hookWriter) {
			return context.Background(), filepath.Join(dir, "missing"), &hookWriter{}
		},
		want:           func(err error) bool { return errors.Is(err, fs.ErrNotExist) },
		nothingWritten: true,
	}, {
		name: "not a directory",
		setup: func(t *testing.T, dir string) (context.Context, string, *hookWriter) {
			write(t, filepath.Join(dir, "file"), "x", 0o644)
			return context.Background(), filepath.Join(dir, "file"), &hookWriter{}
		},
		want:           func(err error) bool { return err != nil },
		nothingWritten: true,
	}, {
		name: "context already canceled",
		setup: func(t *testing.T, dir string) (context.Context, string, *hookWriter) {
			write(t, filepath.Join(dir, "file"), "x", 0o644)
			return canceled, dir, &hookWriter{}
		},
		want:           func(err error) bool { return errors.Is(err, context.Canceled) },
		nothingWritten: true,
	}, {
		name: "context canceled midway",
		setup: func(t *testing.T, dir string) (context.Context, string, *hookWriter) {
			fill(t, dir, 16, 256<<10)
			ctx, cancel := context.WithCancel(context.Background())
			return ctx, dir, &hookWriter{hook: cancel}
		},
		want: func(err error) bool { return errors.Is(err, context.Canceled) },
	}, {
		name: "write error",
		setup: func(t *testing.T, dir string) (context.Context, string, *hookWriter) {
			fill(t, dir, 4, 256<<10)
			return context.Background(), dir, &hookWriter{err: diskFull}
		},
		want: func(err error) bool { return errors.Is(err, diskFull) },
	}, {
		// Even a write error that looks like a vanished file is reported.
		name: "write error like a vanished file",
		setup: func(t *testing.T, dir string) (context.Context, string, *hookWriter) {
			fill(t, dir, 4, 256<<10)
			return context.Background(), dir, &hookWriter{err: os.ErrNotExist}
		},
		want: func(err error) bool { return errors.Is(err, os.ErrNotExist) },
	}, {
		name: "a file that shrinks",
		setup: func(t *testing.T, dir string) (context.Context, string, *hookWriter) {
			fill(t, dir, 1, 256<<10)
			return context.Background(), dir, &hookWriter{hook: func() {
				must(t, os.Truncate(filepath.Join(dir, "f000.bin"), 1000))
			}}
		},
		want: func(err error) bool { return err != nil && strings.Contains(err.Error(), "shrank") },
	}}
	for _, exclude := range []string{"", ".", "..", "../x", "/abs", "a/", "a/../b", "./a", "a//b"} {
		cases = append(cases, errCase{
			name: fmt.Sprintf("invalid exclude %q", exclude),
			setup: func(t *testing.T, dir string) (context.Context, string, *hookWriter) {
				write(t, filepath.Join(dir, "file"), "x", 0o644)
				return context.Background(), dir, &hookWriter{}
			},
			opts:           wsarchive.Options{Exclude: []string{"ok", exclude}},
			want:           func(err error) bool { return err != nil && strings.Contains(err.Error(), "exclude") },
			nothingWritten: true,
		})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, dir, w := tc.setup(t, t.TempDir())
			err := tc.opts.Write(ctx, dir, w)
			if !tc.want(err) {
				t.Fatalf("got error %v", err)
			}
			if tc.nothingWritten && w.buf.Len() != 0 {
				t.Fatalf("wrote %d bytes before failing", w.buf.Len())
			}
			if w.buf.Len() >= 16*256<<10 {
				t.Fatalf("archive went on after the error (%d bytes)", w.buf.Len())
			}
			if isCompleteGzip(w.buf.Bytes()) {
				t.Fatal("a failed archive is a complete gzip stream")
			}
		})
	}
}
