package fileeditor

import (
	"github.com/acs-project/acs/sandbox/atomicfile"
	"io/fs"
	"os"
	"unicode/utf8"
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
