package fstools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/procenv"
)

// grepBinaryWindow is how much of a file is checked for a NUL byte before it
// is searched; it is ripgrep's initial read buffer size, so that both
// implementations skip the same binary files.
const grepBinaryWindow = 64 << 10

// Grep lists the files under a.Path (the working directory by default; it
// must be a directory) that contain a line matching the regular expression
// a.Pattern, like `rg -l`. a.Include, when set, is a glob restricting the
// files searched ("*.go", "*.{ts,tsx}", "src/**/*.py"; see the override
// rules below).
//
// When the ripgrep binary (rg) is on PATH it does the search; otherwise, or
// when rg fails, a Go implementation does, with the same result set on the
// same tree, both applying ripgrep's default filtering:
//
//   - the pattern is matched against each line (it cannot span lines; a
//     literal "\n" in it is an error). Every pattern is first validated as
//     Go (RE2) syntax, whichever implementation runs, so both accept the
//     same patterns ([[:alpha:]], \b, (?i)... work; look-around and
//     back-references don't); the Go implementation's \d, \w, \s and \b
//     are ASCII-only where ripgrep's are Unicode-aware;
//   - hidden files and directories (name starting with '.') are skipped,
//     and so are symbolic links and special files;
//   - .gitignore files inside the searched tree are honoured (including
//     negations, anchored, directory-only and "**" patterns), whether or not
//     it is a git repository; parent directories' .gitignore files, global
//     excludes, .git/info/exclude and .ignore/.rgignore files are not;
//   - a file whose first 64 KiB contain a NUL byte is binary and skipped;
//     otherwise only the part before its first NUL byte (if any) is searched;
//     UTF-16 files with a byte-order mark are searched as text;
//   - the include glob takes precedence over .gitignore and hidden-file
//     skipping for files (as rg --glob does): "*.env" finds ".env" files in
//     the directories searched; it does not make grep enter hidden or
//     ignored directories. A glob starting with '!' excludes instead.
//
// Results are absolute paths under the search path, most recently modified
// first (ties by path), at most MaxSearchResults with Truncated set when
// more files matched.
func Grep(ctx context.Context, r Root, a *events.GrepAction) (*events.GrepObservation, error) {
	rg, _ := exec.LookPath("rg")
	return grepWith(ctx, r, a, rg, true)
}

// grepRequest is a validated grep action.
type grepRequest struct {
	dir     *target
	pattern string
	re      *regexp.Regexp
	include string
	ov      *override
}

// grepWith runs grep with the rg binary at rg ("" for the Go
// implementation). With fallback, an rg failure falls back to Go; without,
// it is returned as an error.
func grepWith(ctx context.Context, r Root, a *events.GrepAction, rg string, fallback bool) (*events.GrepObservation, error) {
	obs := &events.GrepObservation{Pattern: a.Pattern, IncludePattern: a.Include}
	c, err := r.check()
	if err != nil {
		return nil, err
	}
	obs.SearchPath = c.workDir
	matches, total, err := runGrep(ctx, c, a, obs, rg, fallback)
	if err != nil {
		if msg, ok := asModelError(err); ok {
			obs.IsError = true
			obs.SetText(msg)
			return obs, nil
		}
		return nil, err
	}
	obs.Matches, obs.Truncated = matches, total > len(matches)
	if len(matches) == 0 {
		text := fmt.Sprintf("No files found containing pattern %q in %s", a.Pattern, obs.SearchPath)
		if a.Include != nil && *a.Include != "" {
			text += fmt.Sprintf(" (searching only files matching %q)", *a.Include)
		}
		obs.SetText(text)
		return obs, nil
	}
	text := strings.Join(matches, "\n")
	if obs.Truncated {
		text += fmt.Sprintf("\n\n(Results are truncated: showing the %d most recently modified of %d matching files. Use a more specific pattern, path or include filter to see the others.)", len(matches), total)
	}
	obs.SetText(text)
	return obs, nil
}

func runGrep(ctx context.Context, c *confined, a *events.GrepAction, obs *events.GrepObservation, rg string, fallback bool) ([]string, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	arg := ""
	if a.Path != nil {
		arg = *a.Path
	}
	dir, err := searchDir(c, arg)
	if dir != nil {
		obs.SearchPath = dir.path
	}
	if err != nil {
		return nil, 0, err
	}
	req := &grepRequest{dir: dir, pattern: a.Pattern}
	if req.re, err = compileLineRegexp(a.Pattern); err != nil {
		return nil, 0, err
	}
	if a.Include != nil {
		req.include = *a.Include
	}
	if req.ov, err = newOverride(dir.real, req.include); err != nil {
		return nil, 0, modelErrorf("Invalid include pattern %q: %v.", req.include, err)
	}
	var rels []string
	if rg != "" {
		rels, err = grepRipgrep(ctx, rg, req)
		if err != nil && ctx.Err() == nil && fallback {
			rg = ""
		}
	}
	if rg == "" {
		rels, err = grepGo(ctx, req)
	}
	if err != nil {
		return nil, 0, err
	}
	found := make(map[string]time.Time, len(rels))
	for _, rel := range rels {
		fi, err := os.Lstat(filepath.Join(dir.real, rel))
		if err != nil {
			continue // removed since
		}
		found[filepath.Join(dir.path, rel)] = fi.ModTime()
	}
	matches, _ := newestFirst(found, MaxSearchResults)
	return matches, len(found), nil
}

// compileLineRegexp compiles a grep pattern, rejecting what cannot match
// within one line the way ripgrep does.
func compileLineRegexp(pattern string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, modelErrorf("Invalid regex pattern %q: %v.", pattern, unwrapSyntaxError(err))
	}
	if tree, err := syntax.Parse(pattern, syntax.Perl); err == nil && hasLiteralNewline(tree) {
		return nil, modelErrorf("Invalid regex pattern %q: the pattern contains a literal line break (\\n), but grep matches one line at a time.", pattern)
	}
	return re, nil
}

func unwrapSyntaxError(err error) error {
	var se *syntax.Error
	if errors.As(err, &se) {
		return se
	}
	return err
}

func hasLiteralNewline(re *syntax.Regexp) bool {
	if re.Op == syntax.OpLiteral {
		for _, r := range re.Rune {
			if r == '\n' {
				return true
			}
		}
	}
	for _, sub := range re.Sub {
		if hasLiteralNewline(sub) {
			return true
		}
	}
	return false
}

// grepRipgrep runs rg and returns the matching files relative to the search
// directory. Any failure other than "no match" is an error.
func grepRipgrep(ctx context.Context, rg string, req *grepRequest) ([]string, error) {
	args := []string{
		"--files-with-matches", "--null", "--no-messages", "--no-config", "--color=never",
		"--no-ignore-parent", "--no-ignore-global", "--no-ignore-exclude", "--no-ignore-dot", "--no-require-git",
	}
	if req.include != "" {
		args = append(args, "--glob="+req.include)
	}
	args = append(args, "--regexp="+req.pattern, "--", req.dir.real)
	cmd := exec.CommandContext(ctx, rg, args...)
	// rg roots --glob patterns at its working directory.
	cmd.Dir = req.dir.real
	cmd.Env = procenv.Environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return nil, fmt.Errorf("grep: run rg: %w", err)
		}
		switch code := ee.ExitCode(); {
		case code == 1: // no match
		case code == 2 && (stdout.Len() > 0 || stderr.Len() == 0):
			// Some files could not be read (messages suppressed).
		default:
			return nil, fmt.Errorf("grep: rg exited with status %d: %s", code, strings.TrimSpace(stderr.String()))
		}
	}
	var out []string
	for _, p := range strings.Split(stdout.String(), "\x00") {
		if p == "" {
			continue
		}
		if rel, ok := relSlash(req.dir.real, filepath.Clean(p)); ok {
			out = append(out, filepath.FromSlash(rel))
		}
	}
	return out, nil
}

// grepGo is the Go implementation of grepRipgrep.
func grepGo(ctx context.Context, req *grepRequest) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	paths := make(chan string, 64)
	var (
		mu  sync.Mutex
		out []string
		wg  sync.WaitGroup
	)
	workers := min(runtime.GOMAXPROCS(0), 8)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range paths {
				if ctx.Err() != nil {
					continue
				}
				if fileMatches(p, req.re) {
					mu.Lock()
					out = append(out, p)
					mu.Unlock()
				}
			}
		}()
	}
	w := &grepWalker{ctx: ctx, req: req, paths: paths}
	err := w.walk(req.dir.real, nil, true)
	close(paths)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	rels := make([]string, 0, len(out))
	for _, p := range out {
		if rel, ok := relSlash(req.dir.real, p); ok {
			rels = append(rels, filepath.FromSlash(rel))
		}
	}
	return rels, nil
}

type grepWalker struct {
	ctx   context.Context
	req   *grepRequest
	paths chan<- string
}

func (w *grepWalker) walk(dir string, ign *ignoreStack, isRoot bool) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	ign = ign.push(dir)
	des, err := os.ReadDir(dir)
	if err != nil {
		if isRoot {
			return fsError("read directory", w.req.dir.path, err)
		}
		return nil // like rg --no-messages: unreadable directories are skipped
	}
	for _, de := range des {
		typ := de.Type()
		isDir := typ.IsDir()
		if !isDir && !typ.IsRegular() {
			continue // symbolic links and special files
		}
		p := filepath.Join(dir, de.Name())
		if !w.selected(p, de.Name(), isDir, ign) {
			continue
		}
		if isDir {
			if err := w.walk(p, ign, false); err != nil {
				return err
			}
			continue
		}
		select {
		case w.paths <- p:
		case <-w.ctx.Done():
			return w.ctx.Err()
		}
	}
	return nil
}

// selected applies ripgrep's precedence: the include override, then
// .gitignore rules, then hidden-name skipping (which a .gitignore
// whitelist cancels).
func (w *grepWalker) selected(p, name string, isDir bool, ign *ignoreStack) bool {
	switch w.req.ov.match(p, isDir) {
	case matchIgnore:
		return false
	case matchWhitelist:
		return true
	}
	switch ign.match(p, isDir) {
	case matchIgnore:
		return false
	case matchWhitelist:
		return true
	}
	return !isHidden(name)
}

// fileMatches reports whether a line of the file at p matches re, with
// ripgrep's binary and encoding handling. Unreadable files do not match.
func fileMatches(p string, re *regexp.Regexp) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, grepBinaryWindow)
	head, _ := br.Peek(grepBinaryWindow)
	if bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF}) {
		data, err := io.ReadAll(br)
		if err != nil {
			return false
		}
		text := decodeUTF16(data)
		if hasNUL(text[:min(len(text), grepBinaryWindow)]) {
			return false
		}
		return readerMatches(bufio.NewReader(bytes.NewReader(text)), re)
	}
	if hasNUL(head) {
		return false
	}
	if bytes.HasPrefix(head, []byte{0xEF, 0xBB, 0xBF}) {
		br.Discard(3)
	}
	return readerMatches(br, re)
}

// readerMatches matches re against each line (without its "\n") up to the
// first NUL byte.
func readerMatches(br *bufio.Reader, re *regexp.Regexp) bool {
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if len(long) > 0 {
			long = append(long, chunk...)
			line = long
		}
		stop := err != nil
		if i := bytes.IndexByte(line, 0); i >= 0 {
			line, stop = line[:i], true
		} else if len(line) == 0 && err != nil {
			return false // end of file: no final line
		}
		line = bytes.TrimSuffix(line, []byte{'\n'})
		if re.Match(line) {
			return true
		}
		if stop {
			return false
		}
		long = long[:0]
	}
}

// decodeUTF16 transcodes UTF-16 text with a byte-order mark to UTF-8 (the
// mark dropped).
func decodeUTF16(data []byte) []byte {
	bigEndian := data[0] == 0xFE
	data = data[2:]
	u := make([]uint16, 0, len(data)/2)
	for i := 0; i+1 < len(data); i += 2 {
		if bigEndian {
			u = append(u, uint16(data[i])<<8|uint16(data[i+1]))
		} else {
			u = append(u, uint16(data[i+1])<<8|uint16(data[i]))
		}
	}
	return []byte(string(utf16.Decode(u)))
}
