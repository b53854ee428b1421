// Package pathguard confines client-supplied file-system paths to a set of
// workspace roots.
//
// Resolve is the single check used by the workspace file and git HTTP
// handlers, and Real and Within are what the agent's file tools confine
// their paths with. It guarantees that the returned path, as the operating system
// would interpret it at the time of the call, lies inside one of the roots:
//
//   - the input must be absolute (ErrNotAbsolute otherwise);
//   - it is cleaned first, so ".." segments are collapsed lexically and a
//     path such as /ws/../etc/passwd is judged as /etc/passwd;
//   - every existing component is then resolved with Lstat/Readlink, dangling
//     symbolic links included, so a link that points out of the roots is
//     caught even when its target does not exist yet;
//   - the roots are resolved the same way, and the result must equal a root
//     or lie below it (ErrOutsideRoots otherwise).
//
// The check is a point-in-time check: a concurrent process that can create
// symbolic links inside a root can still race it. It is meant to stop a
// remote client from naming files outside the workspace, not to confine
// local processes.
package pathguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

var (
	// ErrNotAbsolute is returned for a relative (or empty) path.
	ErrNotAbsolute = errors.New("Path must be absolute")
	// ErrOutsideRoots is returned for a path that does not resolve to a
	// location inside one of the roots, including when there are no roots.
	ErrOutsideRoots = errors.New("Path is outside the workspace")
)

// maxLinks bounds the number of symbolic links followed while resolving one
// path (the Linux limit is 40).
const maxLinks = 40

// Resolve checks p against roots and returns p cleaned and with every
// symbolic link of its existing part resolved. Errors are ErrNotAbsolute,
// ErrOutsideRoots, or a wrapped file-system error (for example a symbolic
// link loop or a path containing a NUL byte) that callers should report as
// a bad request.
func Resolve(roots []string, p string) (string, error) {
	if p == "" || !filepath.IsAbs(p) {
		return "", ErrNotAbsolute
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("invalid path: contains a NUL byte")
	}
	resolved, err := resolve(filepath.Clean(p))
	if err != nil {
		return "", err
	}
	for _, root := range roots {
		if root == "" || !filepath.IsAbs(root) {
			continue
		}
		rr, err := resolve(filepath.Clean(root))
		if err != nil {
			continue
		}
		if Within(rr, resolved) {
			return resolved, nil
		}
	}
	return "", ErrOutsideRoots
}

// Real returns the absolute path p cleaned and with every symbolic link of
// its existing part resolved (dangling links included); the part that does
// not exist is appended as is. It does not check any root.
func Real(p string) (string, error) {
	if p == "" || !filepath.IsAbs(p) {
		return "", ErrNotAbsolute
	}
	return resolve(filepath.Clean(p))
}

// Within reports whether the clean absolute path p equals root or lies below
// it. It is purely lexical.
func Within(root, p string) bool {
	if p == root {
		return true
	}
	if !strings.HasSuffix(root, string(filepath.Separator)) {
		root += string(filepath.Separator)
	}
	return strings.HasPrefix(p, root)
}

// resolve follows symbolic links component by component, like the kernel
// does, and appends the non-existing remainder unchanged. p must be clean
// and absolute.
func resolve(p string) (string, error) {
	vol := filepath.VolumeName(p)
	pending := split(p[len(vol):])
	cur := vol + string(filepath.Separator)
	links := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing below a missing component exists either; the kernel
			// would fail on any ".." here, so lexical joining is faithful
			// for every operation that can succeed.
			return filepath.Join(append([]string{next}, pending...)...), nil
		}
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", next, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			if !fi.IsDir() && len(pending) > 0 {
				// "file/x": nothing can exist below a non-directory.
				return filepath.Join(append([]string{cur}, pending...)...), nil
			}
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("resolve %s: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", next, err)
		}
		if filepath.IsAbs(target) {
			v := filepath.VolumeName(target)
			cur = v + string(filepath.Separator)
			target = target[len(v):]
		}
		pending = append(split(target), pending...)
	}
	return cur, nil
}

func split(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == filepath.Separator || r == '/' })
}
