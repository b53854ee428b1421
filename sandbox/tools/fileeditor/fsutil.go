package fileeditor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"unicode/utf8"

	"github.com/acs-project/acs/sandbox/atomicfile"
)

// binaryCheckLen is how much of a file is inspected to decide whether it is
// binary.
const binaryCheckLen = 8 << 10

// writeFileAtomic writes content to target through a temporary file in the
// same directory followed by a rename, so readers never see a partial file.
// When preserve is true the target must already exist and be writable, and its
// permission bits are carried over; otherwise the new file gets mode.
func writeFileAtomic(target, content string, mode fs.FileMode, preserve bool) error {
	if preserve {
		fi, err := os.Stat(target)
		if err != nil {
			return err
		}
		mode = fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		// Respect a read-only file: the rename below would otherwise replace it
		// regardless of its own permissions.
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		f.Close()
	}
	return atomicfile.Write(target, []byte(content), mode)
}

// looksBinary reports whether the first binaryCheckLen bytes of data contain a
// NUL byte or are not valid UTF-8. A multi-byte character cut by the end of
// the inspected window is not held against the file.
func looksBinary(data []byte) bool {
	head := data
	truncated := false
	if len(head) > binaryCheckLen {
		head = head[:binaryCheckLen]
		truncated = true
	}
	for _, b := range head {
		if b == 0 {
			return true
		}
	}
	if utf8.Valid(head) {
		return false
	}
	if !truncated {
		return true
	}
	// Drop an incomplete trailing character (at most utf8.UTFMax-1 bytes).
	for i := 1; i < utf8.UTFMax && i <= len(head); i++ {
		if utf8.RuneStart(head[len(head)-i]) {
			if !utf8.FullRune(head[len(head)-i:]) {
				return !utf8.Valid(head[:len(head)-i])
			}
			break
		}
	}
	return true
}

// existingDir returns the deepest of dir and its ancestors that exists.
// Errors: that one is not a directory, or a failed lookup.
func existingDir(dir string) (string, error) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		switch {
		case err == nil && !fi.IsDir():
			return "", fmt.Errorf("%s is not a directory", d)
		case err == nil:
			return d, nil
		case !errors.Is(err, fs.ErrNotExist) || filepath.Dir(d) == d:
			return "", err
		}
	}
}

// writableDir reports (nil) whether this process may make entries in the
// directory dir, without making one. Errors: access(2)'s, e.g. EACCES or
// EROFS.
func writableDir(dir string) error {
	if err := syscall.Access(dir, 0x2|0x1); err != nil { // W_OK|X_OK
		return &fs.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}
