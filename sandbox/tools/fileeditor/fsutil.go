package fileeditor

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"unicode/utf8"
)

// binaryCheckLen is how much of a file is inspected to decide whether it is
// binary.
const binaryCheckLen = 8 << 10

// writeFileAtomic writes content to target through a temporary file in the
// same directory followed by a rename, so readers never see a partial file.
// When preserve is true the target must already exist and be writable, and its
// permission bits are carried over; otherwise the new file gets mode.
func writeFileAtomic(target, content string, mode fs.FileMode, preserve bool) (err error) {
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
	dir, base := filepath.Split(target)
	tmp, err := os.CreateTemp(dir, "."+base+".fileeditor-*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.WriteString(content); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Chmod(tmp.Name(), mode); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), target)
}

// resolvePath resolves the symlinks of the longest existing prefix of the
// absolute, clean path p and appends the components that do not exist yet.
func resolvePath(p string) (string, error) {
	cur := p
	var rest []string
	for {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			for i := len(rest) - 1; i >= 0; i-- {
				r = filepath.Join(r, rest[i])
			}
			return r, nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", err
		}
		rest = append(rest, filepath.Base(cur))
		cur = parent
	}
}

// within reports whether the resolved path p is root or below it.
func within(root, p string) bool {
	if root == string(filepath.Separator) {
		return true
	}
	return p == root || len(p) > len(root) && p[:len(root)] == root && p[len(root)] == filepath.Separator
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
