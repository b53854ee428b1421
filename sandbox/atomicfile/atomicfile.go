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
// unchanged and no temporary file is left behind. Renaming replaces a
// symbolic link at path rather than writing through it.
func Write(path string, data []byte, mode fs.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
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
	return os.Rename(tmp.Name(), path)
}
