package fstools

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/acs-project/acs/events"
)

const (
	// MaxListEntries is the most entries list_directory returns.
	MaxListEntries = 1000
	// RecursiveListDepth is how many levels a recursive listing covers.
	RecursiveListDepth = 2
)

// ListDirectory lists the directory a.DirPath (relative to the working
// directory; "" or "." is the working directory itself).
//
// Guarantees: hidden entries (name starting with '.') are skipped and never
// descended into. Entries are in tree order: at each level directories come
// first, then files, each group sorted by name, and a recursive listing
// (a.Recursive: two levels deep) puts a directory's children right after it.
// Symbolic links are listed with the type, size and time of their target
// when it is inside the root (otherwise of the link itself) and are never
// descended into. Each entry's Path is absolute (under the listed
// directory's path as given) and Size is 0 for directories. At most
// MaxListEntries entries are returned; TotalCount counts all the entries
// found and IsTruncated says whether some were left out.
func ListDirectory(ctx context.Context, r Root, a *events.ListDirectoryAction) (*events.ListDirectoryObservation, error) {
	obs := &events.ListDirectoryObservation{}
	c, err := r.check()
	if err != nil {
		return nil, err
	}
	if err := listDirectory(ctx, c, a, obs); err != nil {
		if msg, ok := asModelError(err); ok {
			obs.IsError = true
			obs.SetText(msg)
			return obs, nil
		}
		return nil, err
	}
	return obs, nil
}

// listed is an entry with its path relative to the listed directory.
type listed struct {
	events.FileEntry
	rel  string // '/'-separated path relative to the listed directory
	link bool   // a symbolic link (never descended into)
}

func listDirectory(ctx context.Context, c *confined, a *events.ListDirectoryAction, obs *events.ListDirectoryObservation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	arg := a.DirPath
	if arg == "" {
		arg = "."
	}
	t, err := c.resolve(arg)
	if err != nil {
		return err
	}
	obs.DirPath = &t.path
	fi, err := os.Stat(t.real)
	if err != nil {
		return fsError("list", t.path, err)
	}
	if !fi.IsDir() {
		return modelErrorf("The path %s is not a directory. Use read_file to read a file.", t.path)
	}
	depth := 1
	if a.Recursive {
		depth = RecursiveListDepth
	}
	var entries []listed
	total := 0
	var walk func(real, display, rel string, level int) error
	walk = func(real, display, rel string, level int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		des, err := os.ReadDir(real)
		if err != nil {
			if level == 1 {
				return fsError("list", display, err)
			}
			return nil // an unreadable subdirectory is listed without children
		}
		var dirs, files []listed
		for _, de := range des {
			if isHidden(de.Name()) {
				continue
			}
			e, ok := c.entry(real, display, rel, de)
			if !ok {
				continue
			}
			if e.IsDirectory {
				dirs = append(dirs, e)
			} else {
				files = append(files, e)
			}
		}
		byName := func(s []listed) {
			sort.Slice(s, func(i, j int) bool { return s[i].Name < s[j].Name })
		}
		byName(dirs)
		byName(files)
		for _, d := range dirs {
			total++
			if len(entries) < MaxListEntries {
				entries = append(entries, d)
			}
			if level < depth && !d.link {
				if err := walk(filepath.Join(real, d.Name), d.Path, d.rel, level+1); err != nil {
					return err
				}
			}
		}
		for _, f := range files {
			total++
			if len(entries) < MaxListEntries {
				entries = append(entries, f)
			}
		}
		return nil
	}
	if err := walk(t.real, t.path, "", 1); err != nil {
		return err
	}
	obs.TotalCount = total
	obs.IsTruncated = total > len(entries)
	obs.Entries = make([]events.FileEntry, len(entries))
	for i, e := range entries {
		obs.Entries[i] = e.FileEntry
	}
	obs.SetText(listingText(t.path, entries, total, a.Recursive))
	return nil
}

// entry describes a directory entry; ok is false when it vanished.
func (c *confined) entry(dirReal, dirDisplay, dirRel string, de fs.DirEntry) (listed, bool) {
	name := de.Name()
	fi, err := de.Info()
	if err != nil {
		return listed{}, false
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if real, err := filepath.EvalSymlinks(filepath.Join(dirReal, name)); err == nil && c.inside(real) {
			if tfi, err := os.Stat(real); err == nil {
				fi = tfi
			}
		}
	}
	e := listed{FileEntry: events.FileEntry{
		Name:         name,
		Path:         filepath.Join(dirDisplay, name),
		IsDirectory:  fi.IsDir(),
		ModifiedTime: events.At(fi.ModTime()),
	}, rel: filepath.ToSlash(filepath.Join(dirRel, name)), link: de.Type()&fs.ModeSymlink != 0}
	if !e.IsDirectory {
		e.Size = fi.Size()
	}
	return e, true
}

func listingText(dir string, entries []listed, total int, recursive bool) string {
	if total == 0 {
		return fmt.Sprintf("The directory %s is empty (hidden entries are not listed).", dir)
	}
	var b strings.Builder
	what := "entries"
	if total == 1 {
		what = "entry"
	}
	if recursive {
		what += fmt.Sprintf(", %d levels deep", RecursiveListDepth)
	}
	fmt.Fprintf(&b, "Contents of %s (%d %s; hidden entries are not listed):\n", dir, total, what)
	for _, e := range entries {
		if e.IsDirectory {
			fmt.Fprintf(&b, "%s/\n", e.rel)
		} else {
			fmt.Fprintf(&b, "%s (%d bytes)\n", e.rel, e.Size)
		}
	}
	if total > len(entries) {
		fmt.Fprintf(&b, "\n(Listing truncated: showing %d of %d entries. List a subdirectory to see more.)\n", len(entries), total)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
