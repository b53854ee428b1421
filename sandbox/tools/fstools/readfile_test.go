package fstools_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

// numbered builds lines "line N\n" for N in [from, to].
func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadFile(t *testing.T) {
	r, root := newRoot(t)
	tree(t, root, map[string]string{
		"ten.txt":     numbered(1, 10),
		"nonl.txt":    "a\nb",
		"crlf.txt":    "a\r\nb\r\n",
		"empty.txt":   "",
		"big.txt":     numbered(1, 2500),
		"invalid.txt": "ok \xff\xfe here\n",
	})
	cases := []struct {
		name          string
		file          string
		offset, limit *int
		content       string
		shown         []int
		total         int
		truncated     bool
		note          string
	}{
		{"whole file", "ten.txt", nil, nil, numbered(1, 10), []int{1, 10}, 10, false, ""},
		{"offset", "ten.txt", ip(7), nil, numbered(8, 10), []int{8, 10}, 10, false, ""},
		{"limit", "ten.txt", nil, ip(3), numbered(1, 3), []int{1, 3}, 10, true, "offset=3 and limit=3"},
		{"offset and limit", "ten.txt", ip(4), ip(2), numbered(5, 6), []int{5, 6}, 10, true, "Showing lines 5-6 of 10"},
		{"limit past the end", "ten.txt", ip(8), ip(50), numbered(9, 10), []int{9, 10}, 10, false, ""},
		{"last line without newline", "nonl.txt", nil, nil, "a\nb", []int{1, 2}, 2, false, ""},
		{"crlf kept raw", "crlf.txt", nil, nil, "a\r\nb\r\n", []int{1, 2}, 2, false, ""},
		{"empty file", "empty.txt", nil, nil, "", nil, 0, false, "is empty"},
		{"default cap", "big.txt", nil, nil, numbered(1, 2000), []int{1, 2000}, 2500, true, "offset=2000 and limit=2000"},
		{"limit above the cap", "big.txt", ip(100), ip(5000), numbered(101, 2100), []int{101, 2100}, 2500, true, "offset=2100"},
		{"read on", "big.txt", ip(2000), nil, numbered(2001, 2500), []int{2001, 2500}, 2500, false, ""},
		{"invalid utf-8 replaced", "invalid.txt", nil, nil, "ok \uFFFD here\n", []int{1, 1}, 1, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := fstools.ReadFile(context.Background(), r, &events.ReadFileAction{FilePath: c.file, Offset: c.offset, Limit: c.limit})
			wantOK(t, o, err)
			if o.FileContent != c.content {
				t.Errorf("content = %.200q, want %.200q", o.FileContent, c.content)
			}
			if !slices.Equal(o.LinesShown, c.shown) || o.TotalLines == nil || *o.TotalLines != c.total || o.IsTruncated != c.truncated {
				t.Errorf("shown %v total %v truncated %v; want %v %d %v", o.LinesShown, o.TotalLines, o.IsTruncated, c.shown, c.total, c.truncated)
			}
			if o.FilePath != root+"/"+c.file {
				t.Errorf("file path %s", o.FilePath)
			}
			if c.note != "" && !strings.Contains(obsText(o), c.note) {
				t.Errorf("text does not contain %q: ...%s", c.note, tail(obsText(o)))
			}
			if c.note == "" && strings.Contains(obsText(o), "To read more") {
				t.Errorf("unexpected note: %s", tail(obsText(o)))
			}
		})
	}
}

func tail(s string) string { return s[max(0, len(s)-200):] }

func TestReadFileNumberedText(t *testing.T) {
	r, root := newRoot(t)
	write(t, root, "f.txt", "alpha\r\n\tbeta\ngamma")
	o, err := fstools.ReadFile(context.Background(), r, &events.ReadFileAction{FilePath: "f.txt", Offset: ip(1)})
	wantOK(t, o, err)
	want := "     2\t\tbeta\n     3\tgamma"
	if obsText(o) != want {
		t.Errorf("text = %q, want %q", obsText(o), want)
	}
}

func TestReadFileByteBudget(t *testing.T) {
	r, root := newRoot(t)
	line := strings.Repeat("x", 1000) + "\n"
	write(t, root, "wide.txt", strings.Repeat(line, 1000)) // ~1 MB
	o, err := fstools.ReadFile(context.Background(), r, &events.ReadFileAction{FilePath: "wide.txt"})
	wantOK(t, o, err)
	n := fstools.MaxReadBytes / len(line)
	if len(o.FileContent) != n*len(line) || !slices.Equal(o.LinesShown, []int{1, n}) || !o.IsTruncated {
		t.Errorf("got %d bytes, lines %v, truncated %v", len(o.FileContent), o.LinesShown, o.IsTruncated)
	}
	if !strings.Contains(obsText(o), fmt.Sprintf("offset=%d", n)) {
		t.Errorf("no read-on note: %s", tail(obsText(o)))
	}

	// One line longer than the budget is cut.
	write(t, root, "one.txt", strings.Repeat("é", fstools.MaxReadBytes)+"\nnext\n")
	o, err = fstools.ReadFile(context.Background(), r, &events.ReadFileAction{FilePath: "one.txt"})
	wantOK(t, o, err)
	if len(o.FileContent) > fstools.MaxReadBytes || !strings.HasPrefix(o.FileContent, "éé") ||
		!slices.Equal(o.LinesShown, []int{1, 1}) || !o.IsTruncated || *o.TotalLines != 2 {
		t.Errorf("got %d bytes, lines %v, truncated %v", len(o.FileContent), o.LinesShown, o.IsTruncated)
	}
	if !strings.Contains(obsText(o), "only its beginning is shown") {
		t.Errorf("no cut note: %s", tail(obsText(o)))
	}
}

func TestReadFileErrors(t *testing.T) {
	r, root := newRoot(t)
	write(t, root, "bin.dat", "head\x00tail")
	write(t, root, "late.dat", strings.Repeat("a", 9000)+"\x00")
	write(t, root, "f.txt", "one\ntwo\n")
	mkdir(t, root, "dir")
	cases := []struct {
		name   string
		file   string
		offset *int
		frag   string
	}{
		{"missing", "nope.txt", nil, "does not exist"},
		{"directory", "dir", nil, "is a directory"},
		{"binary", "bin.dat", nil, "appears to be binary"},
		{"offset past the end", "f.txt", ip(2), "has only 2 line(s)"},
		{"negative offset", "f.txt", ip(-1), "Invalid offset"},
		{"empty path", "", nil, "required"},
		{"outside", "../x", nil, "outside the workspace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := fstools.ReadFile(context.Background(), r, &events.ReadFileAction{FilePath: c.file, Offset: c.offset})
			wantError(t, o, err, c.frag)
		})
	}
	// A NUL byte after the first 8 KiB does not make the file binary.
	o, err := fstools.ReadFile(context.Background(), r, &events.ReadFileAction{FilePath: "late.dat"})
	wantOK(t, o, err)
	o, err = fstools.ReadFile(context.Background(), r, &events.ReadFileAction{FilePath: "f.txt", Limit: ip(0)})
	wantError(t, o, err, "Invalid limit")
}
