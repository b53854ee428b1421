// Package wsarchive writes a workspace directory as a gzip-compressed tar.
//
// Both the local sandbox runtime (which reads a sandbox's disk directly) and
// the agent server inside a sandbox (which serves the archive over HTTP) use
// it, so an archive has the same contents and guarantees either way. It
// depends on the standard library only.
package wsarchive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// Options adjust an archive. The zero value archives everything.
type Options struct {
	// Exclude lists entries left out of the archive, with everything under
	// them when they are directories: slash-separated paths relative to
	// the archived directory, as the archive would name them ("state",
	// "a/b/cache"), with no trailing slash. An excluded path that does not
	// exist is ignored. Each must be a valid fs path (fs.ValidPath) other
	// than "."; Write fails otherwise, before writing anything.
	Exclude []string

	// Mask, when set, rewrites the content of every regular file (the agent
	// server hides secret values with it): it returns a writer that passes
	// what is written to it, rewritten, on to w, and writes what it held
	// back when closed (Close must not close w). As the rewritten size is
	// only known at the end and goes in the entry's header, which precedes
	// the content, each file is first rewritten into a buffer: memory up to
	// MaskMemory bytes, beyond that an unlinked temporary file in TempDir
	// (which only ever holds rewritten bytes). A file Mask leaves unchanged
	// is archived byte for byte as without Mask.
	Mask func(w io.Writer) io.WriteCloser
	// MaskName, when set, rewrites entry names and symbolic link targets
	// (the agent server hides secret values with it).
	MaskName func(string) string
	// TempDir holds the temporary files of Mask (default os.TempDir()).
	TempDir string
}

// MaskMemory is how many rewritten bytes of one file Options.Mask buffers in
// memory before it moves to a temporary file.
const MaskMemory = 1 << 20

// Write writes a gzip-compressed tar of everything under dir to w; it is
// Options{}.Write.
func Write(ctx context.Context, dir string, w io.Writer) error {
	return Options{}.Write(ctx, dir, w)
}

// Write writes a gzip-compressed tar of everything under dir (except the
// excluded paths) to w, streaming: nothing is buffered whole (except one
// file at a time with Options.Mask).
//
// Entry names are relative to dir ("notes.txt", "src/", "src/main.go"), in
// lexical walk order, so a directory comes before its contents; there is no
// entry for dir itself. Regular files, directories and symbolic links are
// archived with their permission bits and modification times (whole
// seconds); links are stored as links and never followed, and nothing
// outside dir is ever read: the walk is confined with os.Root, so a link
// swapped in meanwhile cannot lead out. Other file types (sockets, pipes,
// devices) are skipped, and opening a file never blocks (a file replaced by
// a pipe meanwhile is skipped too). Owners are not recorded (uid and gid 0,
// no user or group names).
//
// dir may change while it is archived: files and directories that vanish
// after their directory was read are left out, but a regular file that
// shrinks while it is copied fails the archive (retry it); a file that grows
// is archived with the size it had when opened.
//
// Write writes nothing when ctx has already ended, Options are invalid or
// dir cannot be opened; the error then wraps ctx's error, describes the
// invalid option, or wraps the open failure (fs.ErrNotExist for a missing
// dir, for instance). Later errors wrap ctx's error when ctx ends (the walk
// and the copy of each file stop promptly), the write failure of w (reported
// as such even when it looks like a vanished file), or the read failure of
// an entry (including a file that shrank). On error w may hold a partial
// archive, which is never a complete gzip stream.
func (o Options) Write(ctx context.Context, dir string, w io.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	exclude := make(map[string]bool, len(o.Exclude))
	for _, p := range o.Exclude {
		if !fs.ValidPath(p) || p == "." {
			return fmt.Errorf("invalid exclude path %q: want a slash-separated path inside the directory", p)
		}
		exclude[p] = true
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("open workspace: %w", err)
	}
	defer root.Close()
	ew := &errWriter{w: w}
	gz := gzip.NewWriter(ew)
	tw := tar.NewWriter(gz)
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if exclude[name] {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
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
		if err := o.addEntry(ctx, tw, root, name, d); err != nil {
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

// addEntry writes one entry (name is slash-separated, relative to root) to
// tw.
func (o Options) addEntry(ctx context.Context, tw *tar.Writer, root *os.Root, name string, d fs.DirEntry) error {
	if d.Type().IsRegular() {
		return o.addFile(ctx, tw, root, name)
	}
	info, err := root.Lstat(name)
	if err != nil {
		return err
	}
	switch mode := info.Mode(); {
	case mode.IsDir():
		return o.writeHeader(tw, info, name+"/", "")
	case mode&fs.ModeSymlink != 0:
		target, err := root.Readlink(name)
		if err != nil {
			return err
		}
		return o.writeHeader(tw, info, name, target)
	case mode.IsRegular():
		return o.addFile(ctx, tw, root, name)
	default:
		return nil // sockets, pipes, devices
	}
}

// addFile writes a regular file: the header, then as many bytes as the file
// held when opened.
func (o Options) addFile(ctx context.Context, tw *tar.Writer, root *os.Root, name string) error {
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
	if o.Mask != nil {
		return o.addMaskedFile(ctx, tw, f, info, name)
	}
	if err := o.writeHeader(tw, info, name, ""); err != nil {
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

// addMaskedFile writes a regular file rewritten by o.Mask: the rewritten
// content is buffered first, for its size.
func (o Options) addMaskedFile(ctx context.Context, tw *tar.Writer, f *os.File, info fs.FileInfo, name string) error {
	buf := &spillBuffer{dir: o.TempDir}
	defer buf.close()
	mw := o.Mask(buf)
	n, err := io.Copy(mw, io.LimitReader(ctxReader{ctx, f}, info.Size()))
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if n < info.Size() {
		return fmt.Errorf("%s shrank while being archived", name)
	}
	if err := o.writeHeader(tw, sized{info, buf.n}, name, ""); err != nil {
		return err
	}
	if err := buf.copyTo(ctx, tw); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// sized is a FileInfo with another size.
type sized struct {
	fs.FileInfo
	size int64
}

func (s sized) Size() int64 { return s.size }

// spillBuffer holds up to MaskMemory bytes in memory, then moves to an
// unlinked temporary file in dir.
type spillBuffer struct {
	dir  string
	mem  bytes.Buffer
	file *os.File
	n    int64
}

func (b *spillBuffer) Write(p []byte) (int, error) {
	if b.file == nil && b.mem.Len()+len(p) > MaskMemory {
		f, err := os.CreateTemp(b.dir, ".wsarchive-*")
		if err != nil {
			return 0, fmt.Errorf("buffer a masked file: %w", err)
		}
		// Unlinked at once: nothing is left behind, whatever happens.
		_ = os.Remove(f.Name())
		b.file = f
		if _, err := f.Write(b.mem.Bytes()); err != nil {
			return 0, fmt.Errorf("buffer a masked file: %w", err)
		}
		b.mem = bytes.Buffer{}
	}
	if b.file == nil {
		n, _ := b.mem.Write(p)
		b.n += int64(n)
		return n, nil
	}
	n, err := b.file.Write(p)
	b.n += int64(n)
	if err != nil {
		err = fmt.Errorf("buffer a masked file: %w", err)
	}
	return n, err
}

// copyTo writes the buffered bytes to w.
func (b *spillBuffer) copyTo(ctx context.Context, w io.Writer) error {
	if b.file == nil {
		_, err := w.Write(b.mem.Bytes())
		return err
	}
	if _, err := b.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	n, err := io.Copy(w, ctxReader{ctx, b.file})
	if err == nil && n != b.n {
		err = fmt.Errorf("buffered %d bytes, read back %d", b.n, n)
	}
	return err
}

func (b *spillBuffer) close() {
	if b.file != nil {
		b.file.Close()
	}
}

func (o Options) writeHeader(tw *tar.Writer, info fs.FileInfo, name, link string) error {
	if o.MaskName != nil {
		name, link = o.MaskName(name), o.MaskName(link)
	}
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
// its path was replaced) after its directory was read: a live workspace
// loses files all the time, and the archive skips them.
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
