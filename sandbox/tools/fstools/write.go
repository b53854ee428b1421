package fstools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/acs-project/acs/events"
)

// WriteFile writes a.Content as the whole content of a.FilePath (relative to
// the working directory), creating missing parent directories.
//
// Guarantees: the write is atomic (a temporary file in the same directory
// renamed over the target), so readers see the old or the new content,
// never a mix; an existing file keeps its permission bits and a read-only
// file is refused rather than replaced; a new file gets mode 0644. Writing
// through a symbolic link replaces the link's target (inside the root), not
// the link. OldContent is the previous content when the file existed and was
// text of at most 10 MiB (nil otherwise).
func WriteFile(ctx context.Context, r Root, a *events.WriteFileAction) (*events.WriteFileObservation, error) {
	obs := &events.WriteFileObservation{}
	c, err := r.check()
	if err != nil {
		return nil, err
	}
	if err := writeFile(ctx, c, a, obs); err != nil {
		if msg, ok := asModelError(err); ok {
			obs.IsError = true
			obs.SetText(msg)
			return obs, nil
		}
		return nil, err
	}
	return obs, nil
}

func writeFile(ctx context.Context, c *confined, a *events.WriteFileAction, obs *events.WriteFileObservation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if a.FilePath == "" {
		return modelErrorf("The file_path parameter is required.")
	}
	t, err := c.resolve(a.FilePath)
	if err != nil {
		return err
	}
	obs.FilePath = &t.path
	existed := false
	if fi, err := os.Stat(t.real); err == nil {
		if fi.IsDir() {
			return modelErrorf("The path %s is a directory; write_file can only write files.", t.path)
		}
		existed = true
		if old, _, err := readTextFile(t); err == nil {
			obs.OldContent = &old
		}
	}
	if err := c.makeParents(t); err != nil {
		return err
	}
	if err := writeFileAtomic(t.real, t.path, a.Content); err != nil {
		return err
	}
	content := a.Content
	obs.NewContent = &content
	obs.IsNewFile = !existed
	how := "created a new file"
	if existed {
		how = "overwrote the existing file"
	}
	obs.SetText(fmt.Sprintf("Wrote %d bytes to %s (%s).", len(a.Content), t.path, how))
	return nil
}

// makeParents creates the missing parent directories of t and checks that
// they still resolve inside the root.
func (c *confined) makeParents(t *target) error {
	dir := filepath.Dir(t.real)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fsError("create the parent directories of", t.path, err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fsError("create the parent directories of", t.path, err)
	}
	if !c.inside(real) {
		return modelErrorf("The path %s points outside the workspace %s through a symbolic link. Only paths inside %s can be used.", t.path, c.root, c.root)
	}
	return nil
}

// Edit replaces a.OldString by a.NewString in the file a.FilePath (relative
// to the working directory).
//
// Guarantees: an empty OldString creates the file with NewString as content
// (and its missing parent directories); it is an error when the file exists
// and is not empty (an existing empty file is filled). Otherwise the file
// must be UTF-8 text of at most 10 MiB, OldString must differ from
// NewString and occur exactly ExpectedReplacements times (default 1;
// non-overlapping occurrences, matched byte for byte); every occurrence is
// then replaced and the file written atomically, keeping its mode. On any
// error the file is unchanged.
func Edit(ctx context.Context, r Root, a *events.EditAction) (*events.EditObservation, error) {
	obs := &events.EditObservation{}
	c, err := r.check()
	if err != nil {
		return nil, err
	}
	if err := edit(ctx, c, a, obs); err != nil {
		if msg, ok := asModelError(err); ok {
			obs.IsError = true
			obs.SetText(msg)
			return obs, nil
		}
		return nil, err
	}
	return obs, nil
}

func edit(ctx context.Context, c *confined, a *events.EditAction, obs *events.EditObservation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if a.FilePath == "" {
		return modelErrorf("The file_path parameter is required.")
	}
	t, err := c.resolve(a.FilePath)
	if err != nil {
		return err
	}
	obs.FilePath = &t.path
	if a.OldString == "" {
		return editCreate(c, t, a, obs)
	}
	expected := max(a.ExpectedReplacements, 1)
	if a.OldString == a.NewString {
		return modelErrorf("No changes to apply: old_string and new_string are identical.")
	}
	old, _, err := readTextFile(t)
	if err != nil {
		if _, serr := os.Stat(t.real); os.IsNotExist(serr) {
			return modelErrorf("The file %s does not exist. To create a new file, use an empty old_string.", t.path)
		}
		return err
	}
	found := strings.Count(old, a.OldString)
	switch {
	case found == 0:
		return modelErrorf("No replacement was made: old_string was not found in %s (0 occurrences). It must match the file exactly, including whitespace and indentation; use read_file to check the current content.", t.path)
	case found != expected:
		return modelErrorf("No replacement was made: expected %d occurrence(s) of old_string in %s but found %d. Add surrounding context to old_string to select the occurrence(s) you mean, or set expected_replacements to %d to replace all of them.", expected, t.path, found, found)
	}
	updated := strings.ReplaceAll(old, a.OldString, a.NewString)
	if err := writeFileAtomic(t.real, t.path, updated); err != nil {
		return err
	}
	obs.ReplacementsMade = found
	obs.OldContent, obs.NewContent = &old, &updated
	at := strings.Index(old, a.OldString)
	obs.SetText(fmt.Sprintf("Edited %s: replaced %d occurrence(s). A snippet of the edited file:\n%s",
		t.path, found, snippet(updated, at, len(a.NewString))))
	return nil
}

func editCreate(c *confined, t *target, a *events.EditAction, obs *events.EditObservation) error {
	existed := false
	if fi, err := os.Stat(t.real); err == nil {
		if fi.IsDir() {
			return modelErrorf("The path %s is a directory, not a file.", t.path)
		}
		if fi.Size() > 0 {
			return modelErrorf("Cannot create %s: the file already exists and is not empty. To change it, give the text to replace as old_string (or use write_file to overwrite the whole file).", t.path)
		}
		existed = true
	}
	if err := c.makeParents(t); err != nil {
		return err
	}
	if err := writeFileAtomic(t.real, t.path, a.NewString); err != nil {
		return err
	}
	content := a.NewString
	obs.IsNewFile = !existed
	obs.ReplacementsMade = 1
	obs.NewContent = &content
	if existed {
		empty := ""
		obs.OldContent = &empty
	}
	obs.SetText(fmt.Sprintf("Created %s (%d bytes). Its beginning:\n%s", t.path, len(content), snippet(content, 0, len(content))))
	return nil
}

const (
	snippetContext  = 4
	snippetMaxLines = 40
)

// snippet numbers the lines of content around the byte range [at, at+n),
// with snippetContext lines of context, at most snippetMaxLines lines.
func snippet(content string, at, n int) string {
	if content == "" {
		return "(empty file)"
	}
	lines := strings.SplitAfter(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	first := strings.Count(content[:at], "\n")
	last := first + strings.Count(content[at:at+n], "\n")
	from := max(first-snippetContext, 0)
	to := min(last+snippetContext, len(lines)-1)
	var b strings.Builder
	for i := from; i <= to; i++ {
		if i-from == snippetMaxLines {
			fmt.Fprintf(&b, "   ...\t(%d more lines)\n", to-i+1)
			break
		}
		l := strings.TrimSuffix(strings.TrimSuffix(lines[i], "\n"), "\r")
		if len(l) > 500 {
			l = string(cutUTF8([]byte(l), 500)) + "..."
		}
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, strings.ToValidUTF8(l, string(utf8.RuneError)))
	}
	return strings.TrimSuffix(b.String(), "\n")
}
