// Package atomicfile writes files so that readers see the old content or the
// new one, never a mix: a synced temporary file in the same directory,
// renamed over the target.
package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes data to path with the given mode. On error the target is
// unchanged and no temporary file is left behind, except when only the final
// directory sync fails: then the new content is in place but may not survive
// a power loss. Renaming replaces a symbolic link at path rather than writing
// through it.
func Write(path string, data []byte, mode fs.FileMode) error {
	if err := WriteNoDirSync(path, data, mode); err != nil {
		return err
	}
	// The rename is only durable once the directory is synced; without this
	// a power loss could bring back the old content (or no file at all).
	// One fsync per write; not testable without a power cut.
	return SyncDir(dirOf(path))
}

func dirOf(path string) string {
	dir, _ := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	return dir
}

// WriteNoDirSync is Write without the final directory sync: readers see
// the old content or the new one, and the new content is synced, but the
// rename is durable only once the caller syncs the directory (SyncDir),
// which lets several writes in one directory share that sync. Errors are
// Write's; the target is unchanged on error.
func WriteNoDirSync(path string, data []byte, mode fs.FileMode) error {
	return write(path, data, mode, true, newTemp(path))
}

// WriteUnsynced is Write without any sync: readers see the old content or
// the new one, but neither the new content nor the rename is durable until
// the caller syncs the file and then its directory. It is for a file the
// caller syncs together with others it writes (one sync of the file
// system's journal for all). Errors are Write's; the target is unchanged
// on error.
func WriteUnsynced(path string, data []byte, mode fs.FileMode) error {
	return write(path, data, mode, false, newTemp(path))
}

// WriteUnsyncedVia is WriteUnsynced through the temporary file tmp, in
// path's directory: an existing one (made ahead of need, since a new file
// costs a millisecond of kernel time on some file systems) is truncated
// and used, else it is made. The caller sees that no one else writes tmp.
// Errors are Write's; the target is unchanged on error, and tmp is gone.
func WriteUnsyncedVia(path, tmp string, data []byte, mode fs.FileMode) error {
	return write(path, data, mode, false, func() (*os.File, error) {
		return os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	})
}

// newTemp makes a new temporary file beside path.
func newTemp(path string) func() (*os.File, error) {
	return func() (*os.File, error) {
		return os.CreateTemp(dirOf(path), "."+filepath.Base(path)+".*.tmp")
	}
}

// write writes data to a temporary file (from open), synced when sync is
// set, and renames it over path.
func write(path string, data []byte, mode fs.FileMode, sync bool, open func() (*os.File, error)) (err error) {
	tmp, err := open()
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if err != nil && !renamed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if sync {
		if err = tmp.Sync(); err != nil {
			return err
		}
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Chmod(tmp.Name(), mode); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	renamed = true
	return nil
}

// SyncDir fsyncs directory dir, making the entries created or renamed in
// it durable. Errors: opening or syncing the directory.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// SyncDirAndParent is SyncDir of dir, then of its parent: for a new
// directory, both the entries created in it and its own entry are then
// durable. Errors: SyncDir's.
func SyncDirAndParent(dir string) error {
	if err := SyncDir(dir); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(filepath.Clean(dir)))
}
