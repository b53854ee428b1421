package fstools

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/acs-project/acs/events"
)

const (
	// MaxReadLines is the most lines read_file returns in one call.
	MaxReadLines = 2000
	// MaxReadBytes is the most bytes of content read_file returns in one
	// call.
	MaxReadBytes = 256 << 10
)

// ReadFile reads lines of the text file a.FilePath (relative to the working
// directory). a.Offset is the 0-based line to start at (default 0) and
// a.Limit the number of lines (default and maximum MaxReadLines).
//
// Guarantees: a file whose first 8 KiB contain a NUL byte is refused as
// binary; invalid UTF-8 is replaced by U+FFFD. FileContent holds the raw
// lines shown (with their line endings), LinesShown their 1-based inclusive
// range (nil when no line is shown), TotalLines the number of lines of the
// file (a last line without "\n" counts). At most MaxReadLines lines and
// MaxReadBytes bytes are returned (a single longer line is cut); IsTruncated
// is set when lines after the range exist or a line was cut, and the text
// then says how to read on. The text shows the lines numbered ("%6d\t%s").
// An offset at or past the end of a non-empty file is an error.
func ReadFile(ctx context.Context, r Root, a *events.ReadFileAction) (*events.ReadFileObservation, error) {
	obs := &events.ReadFileObservation{FilePath: a.FilePath}
	c, err := r.check()
	if err != nil {
		return nil, err
	}
	if err := readFile(ctx, c, a, obs); err != nil {
		if msg, ok := asModelError(err); ok {
			obs.IsError = true
			obs.SetText(msg)
			return obs, nil
		}
		return nil, err
	}
	return obs, nil
}

func readFile(ctx context.Context, c *confined, a *events.ReadFileAction, obs *events.ReadFileObservation) error {
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
	obs.FilePath = t.path
	offset, limit := 0, MaxReadLines
	if a.Offset != nil {
		if *a.Offset < 0 {
			return modelErrorf("Invalid offset %d: it must be 0 or more.", *a.Offset)
		}
		offset = *a.Offset
	}
	if a.Limit != nil {
		if *a.Limit < 1 {
			return modelErrorf("Invalid limit %d: it must be 1 or more.", *a.Limit)
		}
		limit = min(*a.Limit, MaxReadLines)
	}
	fi, err := os.Stat(t.real)
	if err != nil {
		return fsError("read", t.path, err)
	}
	if fi.IsDir() {
		return modelErrorf("The path %s is a directory, not a file. Use list_directory to see its contents.", t.path)
	}
	if !fi.Mode().IsRegular() {
		return modelErrorf("The path %s is not a regular file.", t.path)
	}
	f, err := os.Open(t.real)
	if err != nil {
		return fsError("read", t.path, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	head, err := br.Peek(binarySniffLen)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return fsError("read", t.path, err)
	}
	if hasNUL(head) {
		return modelErrorf("The file %s appears to be binary; only text files can be read.", t.path)
	}

	var (
		content strings.Builder
		shown   int
		total   int
		full    bool // the byte budget is spent
		cut     bool // a single line was cut to the budget
		long    []byte
	)
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, chunk...)
			continue
		}
		if err != nil && err != io.EOF {
			return fsError("read", t.path, err)
		}
		line := chunk
		if len(long) > 0 {
			long = append(long, chunk...)
			line = long
		}
		if len(line) > 0 {
			if total >= offset && shown < limit && !full {
				switch {
				case content.Len()+len(line) <= MaxReadBytes:
					content.Write(line)
					shown++
				case shown == 0:
					content.Write(cutUTF8(line, MaxReadBytes))
					shown++
					full, cut = true, true
				default:
					full = true
				}
			}
			total++
			if total%10000 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
		long = long[:0]
		if err == io.EOF {
			break
		}
	}
	obs.TotalLines = &total
	if total == 0 {
		obs.SetText(fmt.Sprintf("The file %s is empty.", t.path))
		return nil
	}
	if offset >= total {
		return modelErrorf("Invalid offset %d: the file %s has only %d line(s), so the offset must be at most %d.", offset, t.path, total, total-1)
	}
	start, end := offset+1, offset+shown
	obs.LinesShown = []int{start, end}
	obs.FileContent = strings.ToValidUTF8(content.String(), "\uFFFD")
	obs.IsTruncated = end < total || cut

	var b strings.Builder
	n := start
	for _, l := range strings.SplitAfter(obs.FileContent, "\n") {
		if l == "" {
			continue
		}
		l = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
		fmt.Fprintf(&b, "%6d\t%s\n", n, l)
		n++
	}
	text := strings.TrimSuffix(b.String(), "\n")
	if cut {
		text += fmt.Sprintf("\n\n(Line %d is longer than %d bytes; only its beginning is shown.)", start, MaxReadBytes)
	}
	if end < total {
		text += fmt.Sprintf("\n\n(Showing lines %d-%d of %d. To read more, call read_file with offset=%d and limit=%d.)", start, end, total, end, limit)
	}
	obs.SetText(text)
	return nil
}

// cutUTF8 returns at most n bytes of b, not splitting a UTF-8 character.
func cutUTF8(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = b[:n]
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}
