package fstools

import (
	"bytes"
	"github.com/acs-project/acs/sandbox/atomicfile"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"
)

const (
	// binarySniffLen is how much of a file read_file and edit inspect for a
	// NUL byte to decide that it is binary.
	binarySniffLen = 8 << 10
	// maxEditSize is the largest file edit rewrites and write_file reports
	// the old content of.
	maxEditSize = 10 << 20
)

// hasNUL reports whether data contains a NUL byte.
func hasNUL(data []byte) bool { return bytes.IndexByte(data, 0) >= 0 }

// looksBinary reports whether the first binarySniffLen bytes of data contain
// a NUL byte.
func looksBinary(data []byte) bool {
	if len(data) > binarySniffLen {
		data = data[:binarySniffLen]
	}
	return hasNUL(data)
}

// readTextFile reads a regular text file of at most maxEditSize bytes. It
// returns a model error for directories, special, binary and too large files.
func readTextFile(t *target) (string, fs.FileInfo, error) {
	fi, err := os.Stat(t.real)
	if err != nil {
		return "", nil, fsError("read", t.path, err)
	}
	if fi.IsDir() {
		return "", nil, modelErrorf("The path %s is a directory, not a file.", t.path)
	}
	if !fi.Mode().IsRegular() {
		return "", nil, modelErrorf("The path %s is not a regular file.", t.path)
	}
	if fi.Size() > maxEditSize {
		return "", nil, modelErrorf("The file %s is too large (%d bytes); the limit is %d bytes.", t.path, fi.Size(), maxEditSize)
	}
	f, err := os.Open(t.real)
	if err != nil {
		return "", nil, fsError("read", t.path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEditSize+1))
	if err != nil {
		return "", nil, fsError("read", t.path, err)
	}
	if len(data) > maxEditSize {
		return "", nil, modelErrorf("The file %s is too large; the limit is %d bytes.", t.path, maxEditSize)
	}
	if looksBinary(data) || !utf8.Valid(data) {
		return "", nil, modelErrorf("The file %s appears to be binary (or is not valid UTF-8 text) and cannot be edited with this tool.", t.path)
	}
	return string(data), fi, nil
}

// writeFileAtomic writes content to the resolved path real through a
// temporary file in the same directory followed by a rename, so readers never
// see a partial file. An existing file keeps its permission bits (and must be
// writable: a read-only file is refused, not replaced); a new file gets mode
// 0644. display names the file in errors.
func writeFileAtomic(real, display, content string) error {
	mode := fs.FileMode(0o644)
	if fi, serr := os.Stat(real); serr == nil {
		if fi.IsDir() {
			return modelErrorf("The path %s is a directory, not a file.", display)
		}
		if !fi.Mode().IsRegular() {
			return modelErrorf("The path %s is not a regular file.", display)
		}
		mode = fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		f, oerr := os.OpenFile(real, os.O_WRONLY, 0)
		if oerr != nil {
			return fsError("write", display, oerr)
		}
		f.Close()
	} else if !os.IsNotExist(serr) {
		return fsError("write", display, serr)
	}
	if err := atomicfile.Write(real, []byte(content), mode); err != nil {
		return fsError("write", display, err)
	}
	return nil
}

// writeBytesAtomic writes data to path (not confined) atomically with mode
// 0600, creating the parent directory.
func writeBytesAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}
