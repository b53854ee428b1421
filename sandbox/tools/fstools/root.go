// Package fstools implements the file tools of the agent (glob, grep,
// list_directory, read_file, write_file, edit) and the task tracker as plain
// functions over a confined directory tree.
//
// Every function follows one rule: a problem the model can act on (a bad or
// missing path, a path outside the root, no match, a binary file, an invalid
// pattern...) is reported as an observation with IsError set and a text that
// says what went wrong; a Go error is returned only for infrastructure
// failures (cancelled context, I/O or disk failures), in which case the
// observation is nil.
//
// The functions do not depend on the tools registry; sandbox/tools adapts them.
package fstools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/acs-project/acs/internal/pathguard"
)

// Root confines paths. Relative paths resolve against WorkDir (Root when
// empty; a relative WorkDir is itself relative to Root). Every path is
// cleaned, the symbolic links of its existing components are resolved, and
// the result must be Root or below it (Root's own symlinks resolved too);
// otherwise the tool reports an error the model can act on. Root must be an
// absolute path to an existing directory.
//
// The check is made before the operation: it is not hardened against a
// concurrent process that swaps a directory for a symbolic link between the
// check and the use.
type Root struct {
	Root    string
	WorkDir string
}

// target is a path resolved against a Root.
type target struct {
	path string // cleaned absolute path as the model sees it
	real string // path with the symlinks of its existing components resolved
}

// confined is a Root checked and resolved once per call.
type confined struct {
	root     string // cleaned Root
	rootReal string // Root with symlinks resolved
	workDir  string // cleaned absolute WorkDir
}

// check validates the root. An invalid root is a configuration (Go) error.
func (r Root) check() (*confined, error) {
	if r.Root == "" || !filepath.IsAbs(r.Root) {
		return nil, fmt.Errorf("fstools: root %q must be an absolute path", r.Root)
	}
	root := filepath.Clean(r.Root)
	rootReal, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("fstools: root: %w", err)
	}
	fi, err := os.Stat(rootReal)
	if err != nil {
		return nil, fmt.Errorf("fstools: root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("fstools: root %s is not a directory", root)
	}
	wd := r.WorkDir
	switch {
	case wd == "":
		wd = root
	case !filepath.IsAbs(wd):
		wd = filepath.Join(root, wd)
	default:
		wd = filepath.Clean(wd)
	}
	return &confined{root: root, rootReal: rootReal, workDir: wd}, nil
}

// resolve confines p (relative to the working directory when not absolute).
// It returns a *modelError when p escapes the root.
func (c *confined) resolve(p string) (*target, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return nil, modelErrorf("The path %q contains a NUL byte.", p)
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(c.workDir, abs)
	}
	abs = filepath.Clean(abs)
	real, err := pathguard.Real(abs)
	if err != nil {
		return nil, fsError("resolve", abs, err)
	}
	if !pathguard.Within(c.rootReal, real) {
		if pathguard.Within(c.root, abs) || pathguard.Within(c.rootReal, abs) {
			return nil, modelErrorf("The path %s points outside the workspace %s through a symbolic link. Only paths inside %s can be used.", abs, c.root, c.root)
		}
		return nil, modelErrorf("The path %s is outside the workspace %s. Only paths inside %s can be used.", abs, c.root, c.root)
	}
	return &target{path: abs, real: real}, nil
}

// inside reports whether the real (resolved) path is inside the root.
func (c *confined) inside(real string) bool { return pathguard.Within(c.rootReal, real) }

// modelError is a failure the model can act on; it becomes an observation
// with IsError.
type modelError struct{ msg string }

func (e *modelError) Error() string { return e.msg }

func modelErrorf(format string, args ...any) error {
	return &modelError{msg: fmt.Sprintf(format, args...)}
}

// asModelError reports whether err is a failure for the model, and its text.
func asModelError(err error) (string, bool) {
	var me *modelError
	if errors.As(err, &me) {
		return me.msg, true
	}
	return "", false
}

// fsError classifies a file system error: errors caused by the path or its
// permissions become model errors (with display, never the resolved path);
// anything else (I/O failure, disk full...) stays an infrastructure error.
func fsError(op, display string, err error) error {
	if _, ok := asModelError(err); ok {
		return err
	}
	errno := unwrapErrno(err)
	switch {
	case errno == syscall.ENOTDIR:
		return modelErrorf("The path %s cannot be used: one of its parent components is a file, not a directory.", display)
	case errors.Is(err, fs.ErrNotExist):
		return modelErrorf("The path %s does not exist.", display)
	case errors.Is(err, fs.ErrPermission):
		return modelErrorf("Permission denied: cannot %s %s.", op, display)
	}
	switch errno {
	case syscall.EISDIR:
		return modelErrorf("The path %s is a directory.", display)
	case syscall.EEXIST, syscall.ENAMETOOLONG, syscall.ELOOP, syscall.EROFS, syscall.ETXTBSY,
		syscall.EINVAL, syscall.EBUSY, syscall.EFBIG, syscall.ENXIO:
		return modelErrorf("Cannot %s %s: %v.", op, display, errno)
	}
	return fmt.Errorf("%s %s: %w", op, display, err)
}

func unwrapErrno(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return 0
}

// isHidden reports whether a file name is hidden (starts with a dot).
func isHidden(name string) bool { return strings.HasPrefix(name, ".") }
