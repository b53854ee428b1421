// Package fileeditor implements the agent's file_editor and
// planning_file_editor tools with OpenHands-compatible semantics: view (files
// with `cat -n` numbering, directories two levels deep), create, str_replace,
// insert and undo_edit, confined to one workspace directory, with a per-file
// undo history kept on disk.
package fileeditor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/pathguard"
)

const (
	defaultMaxHistory  = 10
	defaultMaxFileSize = 10 << 20
)

// Options configures an Editor.
type Options struct {
	// Root is the workspace directory; it must be absolute and exist. Every
	// path given to the editor must be absolute and inside Root once cleaned
	// and once the symlinks of its existing part are resolved.
	Root string
	// MaxHistory is the number of undo entries kept per file (default 10).
	MaxHistory int
	// MaxFileSize is the largest file, in bytes, that can be viewed or edited
	// (default 10 MB).
	MaxFileSize int64
	// HistoryDir is where the undo history is stored. It must not be inside
	// Root. When empty, New creates a temporary directory that Close removes.
	HistoryDir string
}

// Editor executes file_editor commands inside one workspace. It is safe for
// concurrent use: commands are serialized.
type Editor struct {
	mu          sync.Mutex
	root        string // Options.Root, cleaned; used in messages
	rootReal    string // Root with symlinks resolved; used for containment
	maxFileSize int64
	hist        *history
	ownsHistory bool
	closed      bool
}

// New validates opts and returns an Editor. It fails when Root is not an
// absolute path to an existing directory, or when the history directory
// lies inside Root, or it (or, while it does not exist, its deepest
// existing ancestor) is not a directory this process can write in.
func New(opts Options) (*Editor, error) {
	if opts.Root == "" || !filepath.IsAbs(opts.Root) {
		return nil, fmt.Errorf("fileeditor: root %q must be an absolute path", opts.Root)
	}
	root := filepath.Clean(opts.Root)
	rootReal, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("fileeditor: root: %w", err)
	}
	if fi, err := os.Stat(rootReal); err != nil {
		return nil, fmt.Errorf("fileeditor: root: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("fileeditor: root %s is not a directory", root)
	}
	e := &Editor{
		root:        root,
		rootReal:    rootReal,
		maxFileSize: opts.MaxFileSize,
		hist:        &history{max: opts.MaxHistory},
	}
	if e.maxFileSize <= 0 {
		e.maxFileSize = defaultMaxFileSize
	}
	if e.hist.max <= 0 {
		e.hist.max = defaultMaxHistory
	}

	dir := opts.HistoryDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "fileeditor-history-"); err != nil {
			return nil, fmt.Errorf("fileeditor: creating history directory: %w", err)
		}
		e.ownsHistory = true
	} else {
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, fmt.Errorf("fileeditor: history directory: %w", err)
		}
	}
	e.hist.dir = dir
	fail := func(err error) (*Editor, error) {
		if e.ownsHistory {
			os.RemoveAll(dir)
		}
		return nil, err
	}
	// A caller's history directory is made at the first edit that keeps
	// history (history.push), not here: a new file or directory costs a
	// millisecond of kernel time on some file systems, and most
	// conversations start without editing. Where it will be is checked
	// now: its real path (pathguard.Real: symlinks of its existing part
	// resolved) outside Root, and its deepest existing ancestor a
	// directory this process can write in.
	existing, err := existingDir(dir)
	if err != nil {
		return fail(fmt.Errorf("fileeditor: history directory: %w", err))
	}
	dirReal, err := pathguard.Real(dir)
	if err != nil {
		return fail(fmt.Errorf("fileeditor: history directory: %w", err))
	}
	if pathguard.Within(rootReal, dirReal) {
		return fail(fmt.Errorf("fileeditor: history directory %s must not be inside root %s", dir, root))
	}
	if err := writableDir(existing); err != nil {
		return fail(fmt.Errorf("fileeditor: history directory is not writable: %w", err))
	}
	return e, nil
}

// HistoryDir returns the directory holding the undo history.
func (e *Editor) HistoryDir() string { return e.hist.dir }

// Close releases the editor. It removes the history directory if New created
// it (a caller-supplied HistoryDir is left in place). After Close, Execute and
// ExecutePlanning return an error. Close is idempotent.
func (e *Editor) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	if e.ownsHistory {
		return os.RemoveAll(e.hist.dir)
	}
	return nil
}

// Execute runs one file_editor command and returns its observation, whose
// Command and Path echo the request. Problems the model can act on (bad path,
// missing file, invalid parameters, no match, ...) come back as an
// observation with IsError set and an explanatory text, never as a Go error.
// A Go error (and a nil observation) is returned only for a nil request, a
// cancelled ctx, a closed editor, or an infrastructure failure such as an
// unwritable history directory; in that last case the edited file is left
// unchanged, except for undo_edit, whose file is already restored when
// dropping the used history entry fails.
func (e *Editor) Execute(ctx context.Context, f *events.FileEditorFields) (*events.FileEditorObservation, error) {
	if f == nil {
		return nil, errors.New("fileeditor: nil request")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errors.New("fileeditor: editor is closed")
	}
	res, err := e.run(f)
	return observation(f, res, err)
}

// ExecutePlanning runs one planning_file_editor command. view behaves as in
// Execute and works on any path inside Root; every other command is allowed
// only on planPath (compared after resolving symlinks) and otherwise yields an
// IsError observation. planPath must be absolute, else a Go error is
// returned. Errors follow the same rules as Execute.
func (e *Editor) ExecutePlanning(ctx context.Context, f *events.FileEditorFields, planPath string) (*events.PlanningFileEditorObservation, error) {
	if f == nil {
		return nil, errors.New("fileeditor: nil request")
	}
	if !filepath.IsAbs(planPath) {
		return nil, fmt.Errorf("fileeditor: plan path %q must be absolute", planPath)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errors.New("fileeditor: editor is closed")
	}
	var res *result
	var err error
	// A relative path falls through to run, which explains how to fix it.
	if f.Command != events.EditorView && filepath.IsAbs(f.Path) {
		planReal, perr := pathguard.Real(filepath.Clean(planPath))
		pathReal, qerr := pathguard.Real(filepath.Clean(f.Path))
		if perr != nil || qerr != nil || planReal != pathReal {
			err = toolErrorf("Operation '%s' is not allowed on file '%s'. Only the following files can be edited: ['%s']",
				f.Command, f.Path, planPath)
		}
	}
	if err == nil {
		res, err = e.run(f)
	}
	o, err := observation(f, res, err)
	if err != nil {
		return nil, err
	}
	return &events.PlanningFileEditorObservation{ObservationBase: o.ObservationBase, FileEditorResult: o.FileEditorResult}, nil
}

// toolError is an error reported to the model as an IsError observation.
type toolError struct{ msg string }

func (t *toolError) Error() string { return t.msg }

func toolErrorf(format string, args ...any) error {
	return &toolError{msg: fmt.Sprintf(format, args...)}
}

// result is the successful outcome of a command.
type result struct {
	text       string
	prevExist  bool
	oldContent *string
	newContent *string
}

func observation(f *events.FileEditorFields, res *result, err error) (*events.FileEditorObservation, error) {
	path := f.Path
	o := &events.FileEditorObservation{FileEditorResult: events.FileEditorResult{Command: f.Command, Path: &path, PrevExist: true}}
	if err != nil {
		var te *toolError
		if !errors.As(err, &te) {
			return nil, err
		}
		o.IsError = true
		o.SetText(te.msg)
		return o, nil
	}
	o.SetText(res.text)
	o.PrevExist = res.prevExist
	o.OldContent = res.oldContent
	o.NewContent = res.newContent
	return o, nil
}

// target is a validated request path.
type target struct {
	path string      // as given by the model; used in messages
	real string      // resolved; used for file system access and history
	info fs.FileInfo // nil for create
}

func (e *Editor) run(f *events.FileEditorFields) (*result, error) {
	switch f.Command {
	case events.EditorView, events.EditorCreate, events.EditorStrReplace, events.EditorInsert, events.EditorUndoEdit:
	default:
		return nil, toolErrorf("Unrecognized command %s. The allowed commands for the file_editor tool are: view, create, str_replace, insert, undo_edit", f.Command)
	}
	t, err := e.validatePath(f.Command, f.Path)
	if err != nil {
		return nil, err
	}
	switch f.Command {
	case events.EditorView:
		return e.view(t, f.ViewRange)
	case events.EditorCreate:
		if f.FileText == nil {
			return nil, missingParam(f.Command, "file_text")
		}
		return e.create(t, *f.FileText)
	case events.EditorStrReplace:
		if f.OldStr == nil {
			return nil, missingParam(f.Command, "old_str")
		}
		newStr := ""
		if f.NewStr != nil {
			newStr = *f.NewStr
		}
		return e.strReplace(t, *f.OldStr, newStr)
	case events.EditorInsert:
		if f.InsertLine == nil {
			return nil, missingParam(f.Command, "insert_line")
		}
		if f.NewStr == nil {
			return nil, missingParam(f.Command, "new_str")
		}
		return e.insert(t, *f.InsertLine, *f.NewStr)
	default:
		return e.undo(t)
	}
}

func missingParam(cmd events.EditorCommand, name string) error {
	return toolErrorf("Parameter `%s` is required for command: %s.", name, cmd)
}

// validatePath checks that p is absolute, inside the root, and compatible
// with cmd.
func (e *Editor) validatePath(cmd events.EditorCommand, p string) (*target, error) {
	if p == "" {
		return nil, missingParam(cmd, "path")
	}
	if !filepath.IsAbs(p) {
		msg := fmt.Sprintf("The path %s is not an absolute path, it should start with \"/\".", p)
		cand := filepath.Join(e.root, p)
		if real, err := pathguard.Real(cand); err == nil && pathguard.Within(e.rootReal, real) {
			if _, err := os.Stat(real); err == nil {
				msg += fmt.Sprintf(" Maybe you meant %s?", cand)
			}
		}
		return nil, &toolError{msg: msg}
	}
	real, err := pathguard.Real(filepath.Clean(p))
	if err != nil {
		return nil, toolErrorf("Ran into %v while resolving the path %s.", unwrapPathError(err), p)
	}
	if !pathguard.Within(e.rootReal, real) {
		return nil, toolErrorf("The path %s is outside the workspace %s. Only paths inside %s can be used.", p, e.root, e.root)
	}
	t := &target{path: p, real: real}
	if cmd == events.EditorCreate {
		if _, err := os.Lstat(real); err == nil {
			return nil, toolErrorf("File already exists at: %s. Cannot overwrite files using command \"create\".", p)
		}
		return t, nil
	}
	fi, err := os.Stat(real)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, toolErrorf("The path %s does not exist. Please provide a valid path.", p)
		}
		return nil, toolErrorf("Ran into %v while accessing the path %s.", unwrapPathError(err), p)
	}
	if fi.IsDir() {
		if cmd != events.EditorView {
			return nil, toolErrorf("The path %s is a directory and only the \"view\" command can be used on directories.", p)
		}
	} else if !fi.Mode().IsRegular() {
		return nil, toolErrorf("The path %s is not a regular file or directory and cannot be used with this tool.", p)
	}
	t.info = fi
	return t, nil
}

// unwrapPathError drops the path from *fs.PathError so messages do not show
// resolved paths.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// readText reads a regular file after checking its size and that it is text.
func (e *Editor) readText(t *target) (string, error) {
	if t.info.Size() > e.maxFileSize {
		return "", e.tooLarge(t.path, t.info.Size())
	}
	data, err := os.ReadFile(t.real)
	if err != nil {
		return "", toolErrorf("Ran into %v while trying to read %s", unwrapPathError(err), t.path)
	}
	if int64(len(data)) > e.maxFileSize {
		return "", e.tooLarge(t.path, int64(len(data)))
	}
	if looksBinary(data) {
		return "", toolErrorf("File validation failed for %s: File appears to be binary and this file type cannot be read or edited by this tool.", t.path)
	}
	return string(data), nil
}

func (e *Editor) tooLarge(p string, size int64) error {
	return toolErrorf("File validation failed for %s: File is too large (%s). Maximum allowed size is %s.", p, formatSize(size), formatSize(e.maxFileSize))
}

// checkNewSize refuses to write content larger than the size limit.
func (e *Editor) checkNewSize(p, content string) error {
	if int64(len(content)) > e.maxFileSize {
		return toolErrorf("No change was made: the new content of %s would be too large (%s). Maximum allowed size is %s.", p, formatSize(int64(len(content))), formatSize(e.maxFileSize))
	}
	return nil
}

func formatSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

// commit writes content to t with the history entry histContent pushed first.
// A history failure is an infrastructure error (file untouched); a write
// failure is reported to the model and the history entry is rolled back.
func (e *Editor) commit(t *target, content, histContent string, create bool) error {
	seq, err := e.hist.push(t.real, histContent)
	if err != nil {
		return err
	}
	if werr := e.write(t, content, create); werr != nil {
		if err := e.hist.remove(t.real, seq); err != nil {
			return err
		}
		return werr
	}
	return e.hist.trim(t.real)
}

func (e *Editor) write(t *target, content string, create bool) error {
	wrap := func(err error) error {
		return toolErrorf("Ran into %v while trying to write to %s", unwrapPathError(err), t.path)
	}
	if create {
		dir := filepath.Dir(t.real)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return wrap(err)
		}
		// The directories were resolved before they existed; make sure that
		// nothing redirected them out of the workspace in the meantime.
		if r, err := filepath.EvalSymlinks(dir); err != nil {
			return wrap(err)
		} else if !pathguard.Within(e.rootReal, r) {
			return toolErrorf("The path %s is outside the workspace %s. Only paths inside %s can be used.", t.path, e.root, e.root)
		}
		if err := writeFileAtomic(t.real, content, 0o644, false); err != nil {
			return wrap(err)
		}
		return nil
	}
	if err := writeFileAtomic(t.real, content, 0, true); err != nil {
		return wrap(err)
	}
	return nil
}

func (e *Editor) create(t *target, text string) (*result, error) {
	if err := e.checkNewSize(t.path, text); err != nil {
		return nil, err
	}
	// Reference behaviour: create records the new content, so undoing a
	// create rewrites the same content.
	if err := e.commit(t, text, text, true); err != nil {
		return nil, err
	}
	return &result{
		text:       "File created successfully at: " + t.path,
		prevExist:  false,
		newContent: &text,
	}, nil
}

func (e *Editor) strReplace(t *target, oldStr, newStr string) (*result, error) {
	if newStr == oldStr {
		return nil, toolErrorf("No replacement was performed. `new_str` and `old_str` must be different.")
	}
	if oldStr == "" {
		return nil, toolErrorf("No replacement was performed. `old_str` must not be empty.")
	}
	content, err := e.readText(t)
	if err != nil {
		return nil, err
	}
	// In a CRLF file, match and edit in LF space and convert back, so that
	// old_str written with "\n" matches and the line endings are kept.
	crlf := isCRLF(content)
	work, o, n := content, oldStr, newStr
	if crlf {
		work, o, n = toLF(work), toLF(o), toLF(n)
	}
	used := o
	idxs := findAll(work, used)
	if len(idxs) == 0 {
		if trimmed := strings.TrimSpace(o); trimmed != "" && trimmed != o {
			used = trimmed
			idxs = findAll(work, used)
		}
	}
	if len(idxs) == 0 {
		return nil, toolErrorf("No replacement was performed, old_str `%s` did not appear verbatim in %s.", oldStr, t.path)
	}
	if len(idxs) > 1 {
		var lines []string
		last := 0
		for _, i := range idxs {
			l := strings.Count(work[:i], "\n") + 1
			if l != last {
				lines = append(lines, fmt.Sprint(l))
				last = l
			}
		}
		shown := used
		if used == o {
			shown = oldStr
		}
		return nil, toolErrorf("No replacement was performed. Multiple occurrences of old_str `%s` in lines [%s]. Please ensure it is unique.", shown, strings.Join(lines, ", "))
	}
	idx := idxs[0]
	newWork := work[:idx] + n + work[idx+len(used):]
	newContent, err := e.writeEdit(t, newWork, content, crlf)
	if err != nil {
		return nil, err
	}

	replLine := strings.Count(work[:idx], "\n") + 1
	lines := splitLines(newWork)
	start := max(0, replLine-1-snippetContext)
	end := min(len(lines), replLine+snippetContext+strings.Count(n, "\n"))
	start = min(start, end)
	text := fmt.Sprintf("The file %s has been edited. ", t.path) +
		makeOutput(lines[start:end], "a snippet of "+t.path, start+1) +
		"Review the changes and make sure they are as expected. Edit the file again if necessary."
	return &result{text: text, prevExist: true, oldContent: &content, newContent: &newContent}, nil
}

// writeEdit stores an edit made on the LF form of a file: it restores CRLF
// line endings when the file had them, checks the size limit and commits
// (with undo history). It returns the content written.
func (e *Editor) writeEdit(t *target, newWork, oldContent string, crlf bool) (string, error) {
	newContent := newWork
	if crlf {
		newContent = toCRLF(newWork)
	}
	if err := e.checkNewSize(t.path, newContent); err != nil {
		return "", err
	}
	if err := e.commit(t, newContent, oldContent, false); err != nil {
		return "", err
	}
	return newContent, nil
}

func (e *Editor) insert(t *target, line int, newStr string) (*result, error) {
	content, err := e.readText(t)
	if err != nil {
		return nil, err
	}
	crlf := isCRLF(content)
	work, n := content, newStr
	if crlf {
		work, n = toLF(work), toLF(n)
	}
	lines := splitLines(work)
	if line < 0 || line > len(lines) {
		return nil, toolErrorf("Invalid `insert_line` parameter: %d. It should be within the range of allowed values: [0, %d]", line, len(lines))
	}
	prefix := strings.Join(lines[:line], "\n")
	if line > 0 {
		prefix += "\n" // also terminates a last line that had no newline
	}
	suffix := ""
	if line < len(lines) {
		suffix = work[len(prefix):]
	}
	newWork := prefix + n + "\n" + suffix
	newContent, err := e.writeEdit(t, newWork, content, crlf)
	if err != nil {
		return nil, err
	}

	newLines := splitLines(newWork)
	inserted := strings.Count(n, "\n") + 1
	start := max(0, line-snippetContext)
	end := min(len(newLines), line+snippetContext+inserted)
	text := fmt.Sprintf("The file %s has been edited. ", t.path) +
		makeOutput(newLines[start:end], "a snippet of the edited file", start+1) +
		"Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary."
	return &result{text: text, prevExist: true, oldContent: &content, newContent: &newContent}, nil
}

func (e *Editor) undo(t *target) (*result, error) {
	current, err := e.readText(t)
	if err != nil {
		return nil, err
	}
	old, seq, ok, err := e.hist.last(t.real)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, toolErrorf("No edit history found for %s.", t.path)
	}
	if err := e.write(t, old, false); err != nil {
		return nil, err
	}
	if err := e.hist.remove(t.real, seq); err != nil {
		return nil, err
	}
	text := fmt.Sprintf("Last edit to %s undone successfully. ", t.path) + makeOutput(splitLines(old), t.path, 1)
	return &result{text: text, prevExist: true, oldContent: &current, newContent: &old}, nil
}

// findAll returns the start offsets of the non-overlapping occurrences of sub.
func findAll(s, sub string) []int {
	var idxs []int
	for off := 0; ; {
		i := strings.Index(s[off:], sub)
		if i < 0 {
			return idxs
		}
		idxs = append(idxs, off+i)
		off += i + len(sub)
	}
}

// isCRLF reports whether every line ending of s is "\r\n" (and there is one).
func isCRLF(s string) bool {
	n := strings.Count(s, "\r\n")
	return n > 0 && n == strings.Count(s, "\n")
}

func toLF(s string) string   { return strings.ReplaceAll(s, "\r\n", "\n") }
func toCRLF(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
