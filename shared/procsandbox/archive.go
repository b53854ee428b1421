package procsandbox

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// Archive writes a gzip-compressed tar of the sandbox's workspace to w,
// streaming (nothing is buffered whole). Entry names are relative to the
// workspace ("notes.txt", "src/", "src/main.go"), in lexical walk order.
// Regular files, directories and symbolic links are archived with their
// permission bits and modification times; links are stored as links and
// never followed, and nothing outside the workspace is ever read (the walk
// is confined with os.Root, so a link swapped in by the sandbox cannot lead
// out). Other file types (sockets, pipes, devices) are skipped. Owners are
// not recorded.
//
// It works whether the sandbox is running or paused; a running sandbox may
// change files while they are archived, and a file that shrinks meanwhile
// fails the archive (retry it). Errors wrap acs.ErrNotFound for an unknown
// or deleted sandbox (also one deleted during the walk), ctx's error when ctx
// ends, or the write or read failure. On error w may hold a partial archive.
func (r *Runtime) Archive(ctx context.Context, id string, w io.Writer) error {
	if err := r.checkExists(id); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("procsandbox: archive %s: %w", id, err)
	}
	err := r.archive(ctx, id, w)
	if ctx.Err() == nil {
		// A sandbox deleted mid-walk shows up as files vanishing (which
		// the walk skips): the archive is of no sandbox then.
		if nf := r.checkExists(id); nf != nil {
			return nf
		}
	}
	if err != nil {
		return fmt.Errorf("procsandbox: archive %s: %w", id, err)
	}
	return nil
}

func (r *Runtime) checkExists(id string) error {
	r.mu.Lock()
	st := r.statusLocked(id)
	r.mu.Unlock()
	if st.Status == acs.SandboxMissing {
		return fmt.Errorf("procsandbox: sandbox %s: %w", id, acs.ErrNotFound)
	}
	return nil
}

func (r *Runtime) archive(ctx context.Context, id string, w io.Writer) error {
	root, err := os.OpenRoot(filepath.Join(r.dir(id), "workspace"))
	if err != nil {
		return fmt.Errorf("open workspace: %w", err)
	}
	defer root.Close()
	ew := &errWriter{w: w}
	gz := gzip.NewWriter(ew)
	tw := tar.NewWriter(gz)
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if name != "." && vanished(err) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if name == "." {
			return nil
		}
		if err := addEntry(ctx, tw, root, name, d); err != nil {
			if ew.err != nil {
				return fmt.Errorf("write archive: %w", ew.err)
			}
			if !vanished(err) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	return nil
}

// addEntry writes one workspace entry (name is slash-separated, relative to
// root) to tw.
func addEntry(ctx context.Context, tw *tar.Writer, root *os.Root, name string, d fs.DirEntry) error {
	if d.Type().IsRegular() {
		return addFile(ctx, tw, root, name)
	}
	info, err := root.Lstat(name)
	if err != nil {
		return err
	}
	switch mode := info.Mode(); {
	case mode.IsDir():
		return writeHeader(tw, info, name+"/", "")
	case mode&fs.ModeSymlink != 0:
		target, err := root.Readlink(name)
		if err != nil {
			return err
		}
		return writeHeader(tw, info, name, target)
	case mode.IsRegular():
		return addFile(ctx, tw, root, name)
	default:
		return nil // sockets, pipes, devices
	}
}

// addFile writes a regular file: the header, then as many bytes as the file
// held when opened.
func addFile(ctx context.Context, tw *tar.Writer, root *os.Root, name string) error {
	// O_NONBLOCK: should the file have been replaced by a pipe since its
	// directory was read, opening it must not block.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil // replaced meanwhile by something not archived
	}
	if err := writeHeader(tw, info, name, ""); err != nil {
		return err
	}
	n, err := io.Copy(tw, io.LimitReader(ctxReader{ctx, f}, info.Size()))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if n < info.Size() {
		return fmt.Errorf("%s shrank while being archived", name)
	}
	return nil
}

func writeHeader(tw *tar.Writer, info fs.FileInfo, name, link string) error {
	hdr, err := tar.FileInfoHeader(noNames{info}, link)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	hdr.Name = name
	hdr.Uid, hdr.Gid = 0, 0
	// Whole seconds (tar's own rounding could date a file in the future).
	hdr.ModTime = hdr.ModTime.Truncate(time.Second)
	hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	return nil
}

// noNames spares tar.FileInfoHeader looking up user and group names (owners
// are not recorded).
type noNames struct{ fs.FileInfo }

func (noNames) Uname() (string, error) { return "", nil }
func (noNames) Gname() (string, error) { return "", nil }

// vanished reports whether err means a file disappeared (or a directory on
// its path was replaced) after its directory was read: a running sandbox
// removes files all the time, and the archive skips them.
func vanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// errWriter remembers the first error of w, so that a failure to write the
// archive is never mistaken for a file vanishing.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

// ctxReader stops a copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
