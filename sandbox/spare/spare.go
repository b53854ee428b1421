// Package spare keeps directories made ahead of need and hands them out by
// renaming one into place.
//
// Making a file or directory can cost far more than renaming one: on some
// file systems a new inode takes about a millisecond of kernel time (this
// project's CI machine: mkdir 1.2–1.5 ms on ext4, 10–20 µs on tmpfs; a
// rename 35 µs). A request that needs a fresh directory tree (a
// conversation's directory, an empty repository's work tree) takes a spare
// in one rename, and the pool makes the next one in the background when
// the request is over, at the lowest CPU priority, so that the work is
// done between requests rather than during one.
package spare

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
)

// Pool keeps up to N spare directories in Dir, each made by Make.
// Its methods are safe for concurrent use.
type Pool struct {
	dir  string
	n    int
	make func(dir string) error
	mode fs.FileMode

	mu      sync.Mutex
	ready   []string
	filling bool
	off     bool // closed, or a rename failed for good (another file system)
	wg      sync.WaitGroup
}

// New returns a pool of n spares kept in dir (made if missing; spares
// left there by an earlier process are removed), each an empty directory
// with permissions mode that make then fills (nil: left empty). It starts
// making them in the background (see Fill). A pool that cannot use dir
// hands out nothing (Take reports false).
func New(dir string, n int, mode fs.FileMode, make func(dir string) error) *Pool {
	p := &Pool{dir: dir, n: n, make: make, mode: mode}
	if err := os.RemoveAll(dir); err != nil || os.MkdirAll(dir, 0o700) != nil {
		slog.Warn("spare: the spares directory is unusable; making directories on demand", "dir", dir, "error", err)
		p.off = true
		return p
	}
	p.fillLocked()
	return p
}

// Take renames a spare to dst, which must not exist and whose parent must,
// and reports whether it did. It reports false, leaving dst as it was,
// when no spare is ready, dst exists, or the rename fails (a spare on
// another file system than dst turns the pool off). The pool makes no
// other until Fill: the caller says when, so that the making does not
// contend with the rest of the work the spare was taken for (a file
// system journals new entries together, and a sync commits them all).
func (p *Pool) Take(dst string) bool {
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	p.mu.Lock()
	if p.off || len(p.ready) == 0 {
		p.mu.Unlock()
		return false
	}
	src := p.ready[len(p.ready)-1]
	p.ready = p.ready[:len(p.ready)-1]
	p.mu.Unlock()
	err := os.Rename(src, dst)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if errors.Is(err, syscall.EXDEV) {
			slog.Info("spare: the spares are on another file system than their destination; making directories on demand", "dir", p.dir, "destination", dst)
			p.off = true
		}
		p.ready = append(p.ready, src) // still a good spare
		return false
	}
	return true
}

// Fill starts making spares in the background until there are N, unless
// that is under way.
func (p *Pool) Fill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fillLocked()
}

// Ready reports how many spares are ready to be taken.
func (p *Pool) Ready() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ready)
}

// Close stops making spares and waits for the one being made. The spares
// made stay in Dir (a later New removes them).
func (p *Pool) Close() {
	p.mu.Lock()
	p.off = true
	p.mu.Unlock()
	p.wg.Wait()
}

// fillLocked starts making spares until there are n, unless that is under
// way or the pool is off.
func (p *Pool) fillLocked() {
	if p.filling || p.off || len(p.ready) >= p.n {
		return
	}
	p.filling = true
	p.wg.Add(1)
	go p.fill()
}

// fillTurn is held by the pool that is making spares: the pools of a
// process make theirs one at a time, so that they never take more than
// one CPU (making a file or directory is kernel work, which a lower
// priority does not always interrupt).
var fillTurn sync.Mutex

// fill makes spares until there are n or the pool is off, on a thread of
// its own at the lowest CPU priority (the thread ends with the goroutine).
func (p *Pool) fill() {
	defer p.wg.Done()
	runtime.LockOSThread() // never unlocked: the thread goes with its priority
	lowerPriority()
	fillTurn.Lock()
	defer fillTurn.Unlock()
	for {
		p.mu.Lock()
		if p.off || len(p.ready) >= p.n {
			p.filling = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		dir, err := p.makeOne()
		p.mu.Lock()
		if err != nil {
			slog.Warn("spare: making a spare failed; making directories on demand", "dir", p.dir, "error", err)
			p.off, p.filling = true, false
			p.mu.Unlock()
			return
		}
		p.ready = append(p.ready, dir)
		p.mu.Unlock()
	}
}

// makeOne makes one spare: a new directory in dir, filled by make.
func (p *Pool) makeOne() (string, error) {
	dir, err := os.MkdirTemp(p.dir, "s-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, p.mode); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	if p.make != nil {
		if err := p.make(dir); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	return filepath.Clean(dir), nil
}
