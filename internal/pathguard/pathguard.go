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
//     or lie below it (ErrOutsideRoots otherwise);
//   - a path no file can have (a NUL byte, over PathMax bytes, a component
//     over NameMax bytes, symbolic links that loop) is ErrInvalidPath.
//
// No error returned by Resolve names the path or a root: callers put the
// message in answers to remote clients as is. Rel and Scrub render paths
// relative to the roots for those answers.
//
// Check, the part of the rules that needs no file system, is also what the
// control plane refuses a path with before it asks an agent server (so both
// halves refuse the same paths alike): that is why the package is neutral,
// under internal/, rather than in sandbox/.
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
	"sort"
	"strings"
	"syscall"
)

var (
	// ErrNotAbsolute is returned for a relative (or empty) path.
	ErrNotAbsolute = errors.New("Path must be absolute")
	// ErrOutsideRoots is returned for a path that does not resolve to a
	// location inside one of the roots, including when there are no roots.
	ErrOutsideRoots = errors.New("Path is outside the workspace")
	// ErrInvalidPath is returned, wrapped with the reason ("Invalid path:
	// contains a NUL byte"), for a path no file can have.
	ErrInvalidPath = errors.New("Invalid path")
)

// Limits of a path, as Linux has them (PATH_MAX, NAME_MAX).
const (
	// PathMax is the longest accepted path, in bytes.
	PathMax = 4096
	// NameMax is the longest accepted path component, in bytes.
	NameMax = 255
)

// invalidError is an ErrInvalidPath with its reason.
type invalidError struct{ reason string }

func (e *invalidError) Error() string        { return ErrInvalidPath.Error() + ": " + e.reason }
func (e *invalidError) Is(target error) bool { return target == ErrInvalidPath }

// Check reports whether p could name a file: it returns an ErrInvalidPath
// when p holds a NUL byte, is longer than PathMax bytes or has a component
// longer than NameMax bytes, and nil otherwise. It does not look at the
// file system.
func Check(p string) error {
	if strings.IndexByte(p, 0) >= 0 {
		return &invalidError{"contains a NUL byte"}
	}
	if len(p) > PathMax {
		return &invalidError{fmt.Sprintf("longer than %d bytes", PathMax)}
	}
	for _, c := range split(p) {
		if len(c) > NameMax {
			return &invalidError{fmt.Sprintf("a name is longer than %d bytes", NameMax)}
		}
	}
	return nil
}

// maxLinks bounds the number of symbolic links followed while resolving one
// path (the Linux limit is 40).
const maxLinks = 40

// Resolve checks p against roots and returns p cleaned and with every
// symbolic link of its existing part resolved. Errors are ErrNotAbsolute,
// ErrInvalidPath (see Check; also a symbolic-link loop), ErrOutsideRoots,
// or another file-system failure (a component that cannot be read), whose
// message names neither p nor a root.
func Resolve(roots []string, p string) (string, error) {
	if p == "" || !filepath.IsAbs(p) {
		return "", ErrNotAbsolute
	}
	if err := Check(p); err != nil {
		return "", err
	}
	resolved, err := resolve(filepath.Clean(p))
	if err != nil {
		return "", pathless(err)
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

// pathless restates a resolve failure without the path it names.
func pathless(err error) error {
	switch {
	case errors.Is(err, errTooManyLinks) || errors.Is(err, syscall.ELOOP):
		return &invalidError{"too many levels of symbolic links"}
	case errors.Is(err, syscall.ENAMETOOLONG):
		return &invalidError{"file name too long"}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("Cannot resolve the path: %w", pe.Err)
	}
	return errors.New("Cannot resolve the path")
}

// errTooManyLinks is a path whose resolution follows over maxLinks links.
var errTooManyLinks = errors.New("too many levels of symbolic links")

// Rel renders p (absolute, cleaned or not) for messages to remote clients:
// relative to the outermost root that contains it, "." for a root itself.
// A path under no root lexically is compared with the resolved roots after
// resolving it; a path under no root at all is rendered as its base name.
// The result never holds a root.
func Rel(roots []string, p string) string {
	p = filepath.Clean(p)
	if r, ok := relTo(cleanRoots(roots), p); ok {
		return r
	}
	if real, err := Real(p); err == nil {
		var resolved []string
		for _, root := range cleanRoots(roots) {
			if rr, err := resolve(root); err == nil {
				resolved = append(resolved, rr)
			}
		}
		if r, ok := relTo(resolved, real); ok {
			return r
		}
	}
	return filepath.Base(p)
}

// Scrub replaces every root (and its resolved form) named in msg with the
// path relative to it, so that a message from a tool such as git can be
// shown to a remote client: "/ws/a/b" becomes "a/b", "/ws" alone ".".
func Scrub(roots []string, msg string) string {
	var all []string
	for _, root := range cleanRoots(roots) {
		all = append(all, root)
		if rr, err := resolve(root); err == nil && rr != root {
			all = append(all, rr)
		}
	}
	// Outermost first: an inner root is then rendered relative to it.
	sort.Slice(all, func(i, j int) bool { return len(all[i]) < len(all[j]) })
	for _, root := range all {
		if root == string(filepath.Separator) {
			continue
		}
		msg = strings.ReplaceAll(msg, root+string(filepath.Separator), "")
		msg = replaceWhole(msg, root, ".")
	}
	return msg
}

// replaceWhole replaces old in s with new where it is not followed by a
// character that could continue a file name.
func replaceWhole(s, old, new string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(old)
		b.WriteString(s[:i])
		if end < len(s) && nameChar(s[end]) {
			b.WriteString(old)
		} else {
			b.WriteString(new)
		}
		s = s[end:]
	}
}

func nameChar(c byte) bool {
	return c == '.' || c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// cleanRoots returns the usable roots (absolute ones), cleaned, outermost
// first.
func cleanRoots(roots []string) []string {
	var out []string
	for _, r := range roots {
		if r != "" && filepath.IsAbs(r) {
			out = append(out, filepath.Clean(r))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) < len(out[j]) })
	return out
}

// relTo renders p relative to the first of roots that contains it.
func relTo(roots []string, p string) (string, bool) {
	for _, root := range roots {
		if Within(root, p) {
			r, err := filepath.Rel(root, p)
			if err != nil {
				continue
			}
			return filepath.ToSlash(r), true
		}
	}
	return "", false
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
			return "", fmt.Errorf("resolve %s: %w", p, errTooManyLinks)
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
