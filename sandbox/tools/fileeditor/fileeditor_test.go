package fileeditor_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fileeditor"
)

// ---- helpers ----

func sp(s string) *string { return &s }
func ip(i int) *int       { return &i }

type env struct {
	ed   *fileeditor.Editor
	root string
	hist string
}

func newEnv(t *testing.T, opts fileeditor.Options) *env {
	t.Helper()
	if opts.Root == "" {
		opts.Root = t.TempDir()
	}
	if opts.HistoryDir == "" {
		opts.HistoryDir = filepath.Join(t.TempDir(), "history")
	}
	ed, err := fileeditor.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { ed.Close() })
	return &env{ed: ed, root: opts.Root, hist: opts.HistoryDir}
}

func (v *env) p(rel string) string { return filepath.Join(v.root, rel) }

func (v *env) write(t *testing.T, rel, content string) string {
	t.Helper()
	p := v.p(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (v *env) exec(t *testing.T, f events.FileEditorFields) *events.FileEditorObservation {
	t.Helper()
	o, err := v.ed.Execute(context.Background(), &f)
	if err != nil {
		t.Fatalf("Execute(%s %s): unexpected Go error: %v", f.Command, f.Path, err)
	}
	if o.Command != f.Command {
		t.Errorf("Command = %q, want %q", o.Command, f.Command)
	}
	if o.Path == nil || *o.Path != f.Path {
		t.Errorf("Path = %v, want %q", o.Path, f.Path)
	}
	return o
}

// ok runs f and requires success.
func (v *env) ok(t *testing.T, f events.FileEditorFields) *events.FileEditorObservation {
	t.Helper()
	o := v.exec(t, f)
	if o.IsError {
		t.Fatalf("%s %s: unexpected error observation: %s", f.Command, f.Path, o.Text())
	}
	return o
}

// fail runs f and requires an error observation containing want.
func (v *env) fail(t *testing.T, f events.FileEditorFields, want string) *events.FileEditorObservation {
	t.Helper()
	o := v.exec(t, f)
	if !o.IsError {
		t.Fatalf("%s %s: expected an error observation, got: %s", f.Command, f.Path, o.Text())
	}
	if !strings.Contains(o.Text(), want) {
		t.Fatalf("%s %s: error text\n%q\ndoes not contain\n%q", f.Command, f.Path, o.Text(), want)
	}
	return o
}

func catN(header string, start int, lines ...string) string {
	var b strings.Builder
	b.WriteString(header)
	for i, l := range lines {
		fmt.Fprintf(&b, "%6d\t%s\n", start+i, l)
	}
	return b.String()
}

func view(p string) events.FileEditorFields {
	return events.FileEditorFields{Command: events.EditorView, Path: p}
}

func replace(p, old string, new *string) events.FileEditorFields {
	return events.FileEditorFields{Command: events.EditorStrReplace, Path: p, OldStr: &old, NewStr: new}
}

func insert(p string, line int, s string) events.FileEditorFields {
	return events.FileEditorFields{Command: events.EditorInsert, Path: p, InsertLine: &line, NewStr: &s}
}

func create(p, text string) events.FileEditorFields {
	return events.FileEditorFields{Command: events.EditorCreate, Path: p, FileText: &text}
}

func undo(p string) events.FileEditorFields {
	return events.FileEditorFields{Command: events.EditorUndoEdit, Path: p}
}

// ---- view ----

func TestViewFile(t *testing.T) {
	v := newEnv(t, fileeditor.Options{})
	tests := []struct {
		name, content string
		want          []string // displayed lines
	}{
		{"trailing newline and tabs", "first\n\tsecond\tx\nthird\n", []string{"first", "\tsecond\tx", "third"}},
		{"no trailing newline", "a\nb", []string{"a", "b"}},
		{"blank lines kept", "a\n\n\nb\n", []string{"a", "", "", "b"}},
		{"crlf shown without carriage returns", "a\r\nb\r\n", []string{"a", "b"}},
		{"empty file", "", nil},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := v.write(t, fmt.Sprintf("f%d.txt", i), tc.content)
			o := v.ok(t, view(p))
			want := catN("Here's the result of running `cat -n` on "+p+":\n", 1, tc.want...)
			if o.Text() != want {
				t.Fatalf("got\n%q\nwant\n%q", o.Text(), want)
			}
			if !o.PrevExist || o.OldContent != nil || o.NewContent != nil {
				t.Fatalf("unexpected fields: %+v", o)
			}
		})
	}
}

func TestViewRange(t *testing.T) {
	v := newEnv(t, fileeditor.Options{})
	p := v.write(t, "r.txt", "l1\nl2\nl3\nl4\nl5\n")
	header := "Here's the result of running `cat -n` on " + p + ":\n"
	tests := []struct {
		name    string
		rng     []int
		want    string // exact output on success
		wantErr string // substring of the error
	}{
		{name: "whole", rng: []int{1, 5}, want: catN(header, 1, "l1", "l2", "l3", "l4", "l5")},
		{name: "middle", rng: []int{2, 3}, want: catN(header, 2, "l2", "l3")},
		{name: "single line", rng: []int{4, 4}, want: catN(header, 4, "l4")},
		{name: "to end with -1", rng: []int{3, -1}, want: catN(header, 3, "l3", "l4", "l5")},
		{name: "last line to end", rng: []int{5, -1}, want: catN(header, 5, "l5")},
		{name: "empty range means whole file", rng: []int{}, want: catN(header, 1, "l1", "l2", "l3", "l4", "l5")},
		{name: "start zero", rng: []int{0, 2}, wantErr: "Invalid `view_range` parameter: [0, 2]. Its first element `0` should be within the range of lines of the file: [1, 5]."},
		{name: "start negative", rng: []int{-1, 2}, wantErr: "Its first element `-1` should be within the range of lines of the file: [1, 5]."},
		{name: "start past end", rng: []int{6, 6}, wantErr: "Its first element `6` should be within the range of lines of the file: [1, 5]."},
		{name: "end before start", rng: []int{3, 2}, wantErr: "Its second element `2` should be greater than or equal to the first element `3`."},
		{name: "end past end", rng: []int{1, 6}, wantErr: "Its second element `6` should be smaller than or equal to the number of lines in the file: `5`."},
		{name: "end -2", rng: []int{2, -2}, wantErr: "Its second element `-2` should be greater than or equal to the first element `2`."},
		{name: "one element", rng: []int{1}, wantErr: "Invalid `view_range` parameter: [1]. It should be a list of two integers."},
		{name: "three elements", rng: []int{1, 2, 3}, wantErr: "It should be a list of two integers."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := view(p)
			f.ViewRange = tc.rng
			if tc.wantErr != "" {
				v.fail(t, f, tc.wantErr)
				return
			}
			if o := v.ok(t, f); o.Text() != tc.want {
				t.Fatalf("got\n%q\nwant\n%q", o.Text(), tc.want)
			}
		})
	}
}

func TestViewTruncation(t *testing.T) {
	v := newEnv(t, fileeditor.Options{})
	line := strings.Repeat("x", 99)
	var b strings.Builder
	for range 300 { // 30000 characters
		b.WriteString(line + "\n")
	}
	p := v.write(t, "big.txt", b.String())
	o := v.ok(t, view(p))
	notice := "<response clipped><NOTE>To save on context only part of this file has been shown to you. You should retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are looking for.</NOTE>"
	if !strings.HasSuffix(o.Text(), notice+"\n") {
		t.Fatalf("missing clipping notice, tail: %q", o.Text()[len(o.Text())-300:])
	}
	// 16000 characters of content = 160 full lines; line 161 holds the notice.
	if !strings.Contains(o.Text(), fmt.Sprintf("%6d\t%s\n", 160, line)) || strings.Contains(o.Text(), fmt.Sprintf("%6d\t", 162)) {
		t.Fatalf("unexpected clipping point")
	}
	if !strings.Contains(o.Text(), fmt.Sprintf("%6d\t%s\n", 161, notice)) {
		t.Fatalf("notice not on line 161")
	}

	// Short output is not clipped.
	f := view(p)
	f.ViewRange = []int{1, 10}
	if o := v.ok(t, f); strings.Contains(o.Text(), "<response clipped>") {
		t.Fatalf("short range was clipped")
	}
}

func TestViewDirectory(t *testing.T) {
	v := newEnv(t, fileeditor.Options{})
	v.write(t, "proj/b.txt", "b")
	v.write(t, "proj/a/x.go", "x")
	v.write(t, "proj/a/sub/deep.txt", "too deep")
	v.write(t, "proj/a/.hidden-in-sub", "h")
	v.write(t, "proj/c/.keep", "")
	v.write(t, "proj/.env", "SECRET=1")
	v.write(t, "proj/.git/config", "")
	v.write(t, "proj/.cache/x", "")
	if err := os.Mkdir(v.p("proj/empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := v.p("proj")

	o := v.ok(t, view(dir))
	want := "Here's the files and directories up to 2 levels deep in " + dir + ", excluding hidden items:\n" +
		dir + "/\n" +
		dir + "/a/\n" +
		dir + "/a/sub/\n" +
		dir + "/a/x.go\n" +
		dir + "/b.txt\n" +
		dir + "/c/\n" +
		dir + "/empty/\n" +
		"\n3 hidden files/directories in this directory are excluded. You can use 'ls -la " + dir + "' to see them."
	if o.Text() != want {
		t.Fatalf("got\n%s\nwant\n%s", o.Text(), want)
	}

	// A trailing slash is accepted and no hidden note without hidden entries.
	o = v.ok(t, view(v.p("proj/a/sub")+"/"))
	want = "Here's the files and directories up to 2 levels deep in " + v.p("proj/a/sub") + ", excluding hidden items:\n" +
		v.p("proj/a/sub") + "/\n" + v.p("proj/a/sub/deep.txt")
	if o.Text() != want {
		t.Fatalf("got\n%s\nwant\n%s", o.Text(), want)
	}

	f := view(dir)
	f.ViewRange = []int{1, 2}
	v.fail(t, f, "The `view_range` parameter is not allowed when `path` points to a directory.")
}

func TestViewDirectorySymlinks(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	v := newEnv(t, fileeditor.Options{})
	v.write(t, "d/inner/file.txt", "f")
	for name, target := range map[string]string{
		"d/link-in":   v.p("d/inner"),
		"d/link-out":  outside,
		"d/link-file": v.p("d/inner/file.txt"),
		"d/dangling":  v.p("d/nowhere"),
	} {
		if err := os.Symlink(target, v.p(name)); err != nil {
			t.Fatal(err)
		}
	}
	d := v.p("d")
	o := v.ok(t, view(d))
	want := "Here's the files and directories up to 2 levels deep in " + d + ", excluding hidden items:\n" +
		d + "/\n" +
		d + "/dangling\n" +
		d + "/inner/\n" +
		d + "/inner/file.txt\n" +
		d + "/link-file\n" +
		d + "/link-in/\n" +
		d + "/link-in/file.txt\n" +
		d + "/link-out/" // listed, but its outside content is not
	if o.Text() != want {
		t.Fatalf("got\n%s\nwant\n%s", o.Text(), want)
	}
}

// ---- create ----

func TestCreate(t *testing.T) {
	v := newEnv(t, fileeditor.Options{})
	existing := v.write(t, "exists.txt", "old")
	tests := []struct {
		name    string
		f       events.FileEditorFields
		wantErr string
	}{
		{name: "new file", f: create(v.p("new.txt"), "hello\n\tworld\n")},
		{name: "creates parents", f: create(v.p("a/b/c/new.txt"), "deep")},
		{name: "empty content", f: create(v.p("empty.txt"), "")},
		{name: "crlf kept", f: create(v.p("crlf.txt"), "a\r\nb\r\n")},
		{name: "existing file", f: create(existing, "new"),
			wantErr: "File already exists at: " + existing + ". Cannot overwrite files using command \"create\"."},
		{name: "existing directory", f: create(v.root, "x"), wantErr: "File already exists at: " + v.root},
		{name: "missing file_text", f: events.FileEditorFields{Command: events.EditorCreate, Path: v.p("nothing.txt")},
			wantErr: "Parameter `file_text` is required for command: create."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantErr != "" {
				v.fail(t, tc.f, tc.wantErr)
				return
			}
			o := v.ok(t, tc.f)
			if want := "File created successfully at: " + tc.f.Path; o.Text() != want {
				t.Fatalf("text %q, want %q", o.Text(), want)
			}
			if o.PrevExist || o.NewContent == nil || *o.NewContent != *tc.f.FileText || o.OldContent != nil {
				t.Fatalf("unexpected fields: %+v", o)
			}
			if got := read(t, tc.f.Path); got != *tc.f.FileText {
				t.Fatalf("file content %q, want %q", got, *tc.f.FileText)
			}
		})
	}
	if got := read(t, existing); got != "old" {
		t.Fatalf("existing file was overwritten: %q", got)
	}
	if _, err := os.Stat(v.p("nothing.txt")); err == nil {
		t.Fatalf("file created without file_text")
	}
}

// ---- str_replace ----

func TestStrReplace(t *testing.T) {
	const base = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"
	tests := []struct {
		name     string
		content  string
		old      string
		new      *string
		want     string // new file content
		wantText string // exact observation text (optional)
		wantErr  string
	}{
		{name: "unique", content: base, old: "five", new: sp("FIVE"),
			want: "one\ntwo\nthree\nfour\nFIVE\nsix\nseven\neight\nnine\nten\n",
			wantText: "The file %[1]s has been edited. " + catN("Here's the result of running `cat -n` on a snippet of %[1]s:\n", 1,
				"one", "two", "three", "four", "FIVE", "six", "seven", "eight", "nine") +
				"Review the changes and make sure they are as expected. Edit the file again if necessary."},
		{name: "multi-line replacement widens snippet", content: base, old: "nine\n", new: sp("nine\nnine-and-a-half\n"),
			want: "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nnine-and-a-half\nten\n",
			wantText: "The file %[1]s has been edited. " + catN("Here's the result of running `cat -n` on a snippet of %[1]s:\n", 5,
				"five", "six", "seven", "eight", "nine", "nine-and-a-half", "ten") +
				"Review the changes and make sure they are as expected. Edit the file again if necessary."},
		{name: "none", content: base, old: "eleven", new: sp("11"),
			wantErr: "No replacement was performed, old_str `eleven` did not appear verbatim in %[1]s."},
		{name: "many", content: "a\nx = 1\nb\nx = 1\nc\nd x = 1 x = 1\n", old: "x = 1", new: sp("x = 2"),
			wantErr: "No replacement was performed. Multiple occurrences of old_str `x = 1` in lines [2, 4, 6]. Please ensure it is unique."},
		{name: "identical", content: base, old: "two", new: sp("two"),
			wantErr: "No replacement was performed. `new_str` and `old_str` must be different."},
		{name: "empty old_str", content: base, old: "", new: sp("x"), wantErr: "`old_str` must not be empty"},
		{name: "whitespace trimmed retry keeps new_str", content: "func f() {\n\treturn 1\n}\n", old: "  \n\treturn 1\n\n", new: sp("\treturn 2 "),
			want: "func f() {\n\t\treturn 2 \n}\n"},
		{name: "deletion with omitted new_str", content: base, old: "three\n", new: nil,
			want: "one\ntwo\nfour\nfive\nsix\nseven\neight\nnine\nten\n"},
		{name: "deletion with empty new_str", content: "keep remove keep", old: " remove", new: sp(""), want: "keep keep"},
		{name: "tabs preserved", content: "if x {\n\tfoo()\n}\n", old: "\tfoo()", new: sp("\tbar()\n\tbaz()"),
			want: "if x {\n\tbar()\n\tbaz()\n}\n"},
		{name: "crlf preserved with lf old_str", content: "a\r\nb\r\nc\r\n", old: "a\nb", new: sp("A\nB\nB2"),
			want: "A\r\nB\r\nB2\r\nc\r\n"},
		{name: "crlf preserved with crlf old_str", content: "a\r\nb\r\nc\r\n", old: "b\r\nc", new: sp("C"),
			want: "a\r\nC\r\n"},
		{name: "regexp metacharacters are literal", content: "a.*b\naxxb\n", old: "a.*b", new: sp("ok"), want: "ok\naxxb\n"},
	}
	v := newEnv(t, fileeditor.Options{})
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := v.write(t, fmt.Sprintf("s%d.txt", i), tc.content)
			f := replace(p, tc.old, tc.new)
			if tc.wantErr != "" {
				v.fail(t, f, strings.ReplaceAll(tc.wantErr, "%[1]s", p))
				if got := read(t, p); got != tc.content {
					t.Fatalf("file changed on error: %q", got)
				}
				return
			}
			o := v.ok(t, f)
			if got := read(t, p); got != tc.want {
				t.Fatalf("file content\n%q\nwant\n%q", got, tc.want)
			}
			if tc.wantText != "" {
				if want := fmt.Sprintf(tc.wantText, p); o.Text() != want {
					t.Fatalf("text\n%q\nwant\n%q", o.Text(), want)
				}
			}
			if !o.PrevExist || o.OldContent == nil || *o.OldContent != tc.content || o.NewContent == nil || *o.NewContent != tc.want {
				t.Fatalf("unexpected fields: prev=%v old=%v new=%v", o.PrevExist, o.OldContent, o.NewContent)
			}
		})
	}
	t.Run("missing old_str", func(t *testing.T) {
		p := v.write(t, "m.txt", "x")
		v.fail(t, events.FileEditorFields{Command: events.EditorStrReplace, Path: p, NewStr: sp("y")},
			"Parameter `old_str` is required for command: str_replace.")
	})
}

// ---- insert ----

func TestInsert(t *testing.T) {
	const base = "l1\nl2\nl3\n"
	tests := []struct {
		name     string
		content  string
		line     int
		text     string
		want     string
		wantText string
		wantErr  string
	}{
		{name: "top", content: base, line: 0, text: "l0", want: "l0\nl1\nl2\nl3\n",
			wantText: "The file %[1]s has been edited. " + catN("Here's the result of running `cat -n` on a snippet of the edited file:\n", 1,
				"l0", "l1", "l2", "l3") +
				"Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary."},
		{name: "middle", content: base, line: 2, text: "a\n\tb", want: "l1\nl2\na\n\tb\nl3\n"},
		{name: "end", content: base, line: 3, text: "l4", want: "l1\nl2\nl3\nl4\n"},
		{name: "end without trailing newline", content: "l1\nl2", line: 2, text: "l3", want: "l1\nl2\nl3\n"},
		{name: "middle without trailing newline", content: "l1\nl2", line: 1, text: "x", want: "l1\nx\nl2"},
		{name: "empty file", content: "", line: 0, text: "only", want: "only\n"},
		{name: "empty new_str inserts blank line", content: base, line: 1, text: "", want: "l1\n\nl2\nl3\n"},
		{name: "crlf kept", content: "a\r\nb\r\n", line: 1, text: "x\ny", want: "a\r\nx\r\ny\r\nb\r\n"},
		{name: "out of range", content: base, line: 4, text: "x",
			wantErr: "Invalid `insert_line` parameter: 4. It should be within the range of allowed values: [0, 3]"},
		{name: "negative", content: base, line: -1, text: "x", wantErr: "It should be within the range of allowed values: [0, 3]"},
	}
	v := newEnv(t, fileeditor.Options{})
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := v.write(t, fmt.Sprintf("i%d.txt", i), tc.content)
			f := insert(p, tc.line, tc.text)
			if tc.wantErr != "" {
				v.fail(t, f, tc.wantErr)
				if got := read(t, p); got != tc.content {
					t.Fatalf("file changed on error: %q", got)
				}
				return
			}
			o := v.ok(t, f)
			if got := read(t, p); got != tc.want {
				t.Fatalf("file content\n%q\nwant\n%q", got, tc.want)
			}
			if tc.wantText != "" {
				if want := fmt.Sprintf(tc.wantText, p); o.Text() != want {
					t.Fatalf("text\n%q\nwant\n%q", o.Text(), want)
				}
			}
			if !o.PrevExist || *o.OldContent != tc.content || *o.NewContent != tc.want {
				t.Fatalf("unexpected fields: %+v", o)
			}
		})
	}

	t.Run("snippet context", func(t *testing.T) {
		var lines []string
		for i := 1; i <= 20; i++ {
			lines = append(lines, fmt.Sprintf("line%d", i))
		}
		p := v.write(t, "ctx.txt", strings.Join(lines, "\n")+"\n")
		o := v.ok(t, insert(p, 10, "new1\nnew2"))
		want := "The file " + p + " has been edited. " +
			catN("Here's the result of running `cat -n` on a snippet of the edited file:\n", 7,
				"line7", "line8", "line9", "line10", "new1", "new2", "line11", "line12", "line13", "line14") +
			"Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary."
		if o.Text() != want {
			t.Fatalf("text\n%q\nwant\n%q", o.Text(), want)
		}
	})

	t.Run("missing parameters", func(t *testing.T) {
		p := v.write(t, "mp.txt", base)
		v.fail(t, events.FileEditorFields{Command: events.EditorInsert, Path: p, NewStr: sp("x")},
			"Parameter `insert_line` is required for command: insert.")
		v.fail(t, events.FileEditorFields{Command: events.EditorInsert, Path: p, InsertLine: ip(1)},
			"Parameter `new_str` is required for command: insert.")
	})
}

// ---- undo ----

func TestUndo(t *testing.T) {
	tests := []struct {
		name  string
		setup func(v *env, t *testing.T, p string) // leaves one edit to undo
		// before is the file content the undo must restore.
		before string
	}{
		{name: "after str_replace", before: "alpha\nbeta\n", setup: func(v *env, t *testing.T, p string) {
			v.write(t, filepath.Base(p), "alpha\nbeta\n")
			v.ok(t, replace(p, "beta", sp("gamma")))
		}},
		{name: "after insert", before: "alpha\nbeta\n", setup: func(v *env, t *testing.T, p string) {
			v.write(t, filepath.Base(p), "alpha\nbeta\n")
			v.ok(t, insert(p, 1, "inserted"))
		}},
		{name: "after create keeps the created content", before: "created\n", setup: func(v *env, t *testing.T, p string) {
			v.ok(t, create(p, "created\n"))
		}},
	}
	v := newEnv(t, fileeditor.Options{})
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := v.p(fmt.Sprintf("u%d.txt", i))
			tc.setup(v, t, p)
			current := read(t, p)
			o := v.ok(t, undo(p))
			want := "Last edit to " + p + " undone successfully. " +
				catN("Here's the result of running `cat -n` on "+p+":\n", 1, splitForTest(tc.before)...)
			if o.Text() != want {
				t.Fatalf("text\n%q\nwant\n%q", o.Text(), want)
			}
			if got := read(t, p); got != tc.before {
				t.Fatalf("content %q, want %q", got, tc.before)
			}
			if *o.OldContent != current || *o.NewContent != tc.before {
				t.Fatalf("unexpected fields: old=%q new=%q", *o.OldContent, *o.NewContent)
			}
			v.fail(t, undo(p), "No edit history found for "+p+".")
		})
	}

	t.Run("no history", func(t *testing.T) {
		p := v.write(t, "never-edited.txt", "x")
		v.fail(t, undo(p), "No edit history found for "+p+".")
	})
}

func splitForTest(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func TestUndoTwelveEdits(t *testing.T) {
	v := newEnv(t, fileeditor.Options{})
	p := v.write(t, "counter.txt", "header\nvalue=0\n")
	states := []string{read(t, p)}
	for i := 1; i <= 12; i++ {
		v.ok(t, replace(p, fmt.Sprintf("value=%d", i-1), sp(fmt.Sprintf("value=%d", i))))
		states = append(states, read(t, p))
	}
	if got := read(t, p); got != "header\nvalue=12\n" {
		t.Fatalf("after edits: %q", got)
	}
	for i := 1; i <= 10; i++ {
		v.ok(t, undo(p))
		if got, want := read(t, p), states[12-i]; got != want {
			t.Fatalf("after undo %d: %q, want %q", i, got, want)
		}
	}
	v.fail(t, undo(p), "No edit history found for "+p+".")
	if got := read(t, p); got != "header\nvalue=2\n" {
		t.Fatalf("final content %q", got)
	}
}

func TestMaxHistoryOption(t *testing.T) {
	v := newEnv(t, fileeditor.Options{MaxHistory: 2})
	p := v.write(t, "h.txt", "v0")
	for i := 1; i <= 4; i++ {
		v.ok(t, replace(p, fmt.Sprintf("v%d", i-1), sp(fmt.Sprintf("v%d", i))))
	}
	v.ok(t, undo(p))
	v.ok(t, undo(p))
	v.fail(t, undo(p), "No edit history found")
	if got := read(t, p); got != "v2" {
		t.Fatalf("content %q, want v2", got)
	}
}

// ---- paths ----

func TestPathErrors(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	v := newEnv(t, fileeditor.Options{})
	v.write(t, "src/main.go", "package main\n")
	if err := os.Symlink(secret, v.p("link-to-secret")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, v.p("link-to-outside")); err != nil {
		t.Fatal(err)
	}
	outsideMsg := "is outside the workspace " + v.root

	tests := []struct {
		name    string
		f       events.FileEditorFields
		wantErr string
		exact   bool
	}{
		{name: "relative existing path suggests absolute", f: view("src/main.go"), exact: true,
			wantErr: "The path src/main.go is not an absolute path, it should start with \"/\". Maybe you meant " + v.p("src/main.go") + "?"},
		{name: "relative missing path has no suggestion", f: create("new.txt", "x"), exact: true,
			wantErr: "The path new.txt is not an absolute path, it should start with \"/\"."},
		{name: "relative escaping path has no suggestion", f: view("../" + filepath.Base(outside)), exact: true,
			wantErr: "The path ../" + filepath.Base(outside) + " is not an absolute path, it should start with \"/\"."},
		{name: "dotdot view", f: view(v.root + "/../" + filepath.Base(outside) + "/secret.txt"), wantErr: outsideMsg},
		{name: "dotdot create", f: create(v.root+"/src/../../evil.txt", "x"), wantErr: outsideMsg},
		{name: "absolute outside", f: view(secret), wantErr: outsideMsg},
		{name: "symlink to outside file view", f: view(v.p("link-to-secret")), wantErr: outsideMsg},
		{name: "symlink to outside file edit", f: replace(v.p("link-to-secret"), "secret", sp("pwned")), wantErr: outsideMsg},
		{name: "create through symlinked dir", f: create(v.p("link-to-outside/new.txt"), "x"), wantErr: outsideMsg},
		{name: "create deep through symlinked dir", f: create(v.p("link-to-outside/a/b.txt"), "x"), wantErr: outsideMsg},
		{name: "directory with str_replace", f: replace(v.p("src"), "a", sp("b")), exact: true,
			wantErr: "The path " + v.p("src") + " is a directory and only the \"view\" command can be used on directories."},
		{name: "directory with insert", f: insert(v.p("src"), 0, "x"), wantErr: "only the \"view\" command can be used on directories."},
		{name: "directory with undo", f: undo(v.root), wantErr: "only the \"view\" command can be used on directories."},
		{name: "missing file view", f: view(v.p("nope.txt")), exact: true,
			wantErr: "The path " + v.p("nope.txt") + " does not exist. Please provide a valid path."},
		{name: "missing file str_replace", f: replace(v.p("nope.txt"), "a", sp("b")), wantErr: "does not exist. Please provide a valid path."},
		{name: "missing file under a file", f: view(v.p("src/main.go/x")), wantErr: "does not exist. Please provide a valid path."},
		{name: "missing file undo", f: undo(v.p("nope.txt")), wantErr: "does not exist. Please provide a valid path."},
		{name: "empty path", f: view(""), wantErr: "Parameter `path` is required"},
		{name: "unknown command", f: events.FileEditorFields{Command: "delete", Path: v.p("src/main.go")}, wantErr: "Unrecognized command delete."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := v.fail(t, tc.f, tc.wantErr)
			if tc.exact && o.Text() != tc.wantErr {
				t.Fatalf("text %q, want %q", o.Text(), tc.wantErr)
			}
		})
	}
	if got := read(t, secret); got != "secret" {
		t.Fatalf("outside file modified: %q", got)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Fatalf("files created outside the root: %v", entries)
	}

	// Symlinks that stay inside the root are fine, and edit their target.
	target := v.write(t, "real.txt", "inside\n")
	if err := os.Symlink(target, v.p("link-inside")); err != nil {
		t.Fatal(err)
	}
	v.ok(t, replace(v.p("link-inside"), "inside", sp("edited")))
	if got := read(t, target); got != "edited\n" {
		t.Fatalf("target content %q", got)
	}
	if fi, err := os.Lstat(v.p("link-inside")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("symlink replaced by the edit")
	}
	// Clean paths inside the root with dot segments are accepted.
	v.ok(t, view(v.root+"/src/../real.txt"))
}

func TestRootItselfBehindSymlink(t *testing.T) {
	realRoot := t.TempDir()
	linkRoot := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(realRoot, linkRoot); err != nil {
		t.Fatal(err)
	}
	v := newEnv(t, fileeditor.Options{Root: linkRoot})
	p := filepath.Join(linkRoot, "f.txt")
	v.ok(t, create(p, "x\n"))
	v.ok(t, view(p))
	if got := read(t, filepath.Join(realRoot, "f.txt")); got != "x\n" {
		t.Fatalf("content %q", got)
	}
	v.ok(t, view(filepath.Join(realRoot, "f.txt"))) // the resolved path is inside too
}

// ---- file validation ----

func TestFileValidation(t *testing.T) {
	v := newEnv(t, fileeditor.Options{MaxFileSize: 1000})
	nul := v.write(t, "nul.bin", "text\x00more")
	badUTF8 := v.write(t, "latin1.txt", "caf\xe9\n")
	large := v.write(t, "large.txt", strings.Repeat("a", 1001))
	atLimit := v.write(t, "limit.txt", strings.Repeat("b", 999)+"\n")
	binMsg := "File appears to be binary and this file type cannot be read or edited by this tool."
	tooLarge := "File is too large (1001 bytes). Maximum allowed size is 1000 bytes."

	tests := []struct {
		name    string
		f       events.FileEditorFields
		wantErr string
	}{
		{"nul view", view(nul), "File validation failed for " + nul + ": " + binMsg},
		{"nul str_replace", replace(nul, "text", sp("x")), binMsg},
		{"nul insert", insert(nul, 0, "x"), binMsg},
		{"invalid utf8 view", view(badUTF8), binMsg},
		{"large view", view(large), "File validation failed for " + large + ": " + tooLarge},
		{"large str_replace", replace(large, "a", sp("b")), tooLarge},
		{"large undo", undo(large), tooLarge},
		{"edit growing past limit", insert(atLimit, 1, "more"), "would be too large"},
		{"create past limit", create(v.p("new-large.txt"), strings.Repeat("c", 1001)), "would be too large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v.fail(t, tc.f, tc.wantErr)
		})
	}
	v.ok(t, view(atLimit))
	if _, err := os.Stat(v.p("new-large.txt")); err == nil {
		t.Fatalf("oversized file was created")
	}

	t.Run("default limit is 10MB", func(t *testing.T) {
		d := newEnv(t, fileeditor.Options{})
		p := d.write(t, "ten.txt", strings.Repeat("z", 10<<20+1))
		d.fail(t, view(p), "File is too large (10.0MB). Maximum allowed size is 10.0MB.")
	})

	t.Run("multibyte character across the 8KB boundary is text", func(t *testing.T) {
		d := newEnv(t, fileeditor.Options{})
		p := d.write(t, "utf8.txt", strings.Repeat("a", 8191)+"é\n")
		d.ok(t, view(p))
	})
}

// ---- planning editor ----

func TestPlanning(t *testing.T) {
	v := newEnv(t, fileeditor.Options{})
	plan := v.p("PLAN.md")
	other := v.write(t, "src/code.go", "package x\n")
	ctx := context.Background()
	run := func(f events.FileEditorFields) *events.PlanningFileEditorObservation {
		t.Helper()
		o, err := v.ed.ExecutePlanning(ctx, &f, plan)
		if err != nil {
			t.Fatalf("ExecutePlanning: %v", err)
		}
		if o.Command != f.Command || o.Path == nil || *o.Path != f.Path {
			t.Fatalf("command/path not echoed: %+v", o)
		}
		return o
	}
	notAllowed := func(cmd, p string) string {
		return fmt.Sprintf("Operation '%s' is not allowed on file '%s'. Only the following files can be edited: ['%s']", cmd, p, plan)
	}
	tests := []struct {
		name    string
		f       events.FileEditorFields
		wantErr string
		check   func(t *testing.T, o *events.PlanningFileEditorObservation)
	}{
		{name: "create plan", f: create(plan, "# Plan\n- step 1\n"), check: func(t *testing.T, o *events.PlanningFileEditorObservation) {
			if o.PrevExist || o.NewContent == nil || *o.NewContent != "# Plan\n- step 1\n" {
				t.Fatalf("unexpected fields: %+v", o)
			}
		}},
		{name: "view other file", f: view(other)},
		{name: "view directory", f: view(v.root)},
		{name: "edit plan", f: replace(plan, "step 1", sp("step one")), check: func(t *testing.T, o *events.PlanningFileEditorObservation) {
			if *o.OldContent != "# Plan\n- step 1\n" || *o.NewContent != "# Plan\n- step one\n" {
				t.Fatalf("unexpected contents: %+v", o)
			}
		}},
		{name: "insert into plan", f: insert(plan, 2, "- step two")},
		{name: "undo plan", f: undo(plan)},
		{name: "plan via dot segments", f: insert(v.root+"/src/../PLAN.md", 0, "<!-- -->")},
		{name: "edit other", f: replace(other, "x", sp("y")), wantErr: notAllowed("str_replace", other)},
		{name: "insert other", f: insert(other, 0, "y"), wantErr: notAllowed("insert", other)},
		{name: "create other", f: create(v.p("NOTES.md"), "y"), wantErr: notAllowed("create", v.p("NOTES.md"))},
		{name: "undo other", f: undo(other), wantErr: notAllowed("undo_edit", other)},
		{name: "view outside root still refused", f: view("/"), wantErr: "is outside the workspace"},
		{name: "relative plan path gets the absolute hint", f: replace("PLAN.md", "a", sp("b")), wantErr: "Maybe you meant " + plan + "?"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := run(tc.f)
			if tc.wantErr != "" {
				if !o.IsError || o.Text() != tc.wantErr && !strings.Contains(o.Text(), tc.wantErr) {
					t.Fatalf("got error=%v %q, want %q", o.IsError, o.Text(), tc.wantErr)
				}
				return
			}
			if o.IsError {
				t.Fatalf("unexpected error: %s", o.Text())
			}
			if tc.check != nil {
				tc.check(t, o)
			}
		})
	}
	if got := read(t, other); got != "package x\n" {
		t.Fatalf("other file modified: %q", got)
	}
	if _, err := os.Stat(v.p("NOTES.md")); err == nil {
		t.Fatalf("NOTES.md created")
	}
	if got := read(t, plan); got != "<!-- -->\n# Plan\n- step one\n" {
		t.Fatalf("plan content %q", got)
	}
	// The plain editor is not restricted.
	v.ok(t, replace(other, "x", sp("y")))

	if _, err := v.ed.ExecutePlanning(ctx, &events.FileEditorFields{Command: events.EditorView, Path: plan}, "PLAN.md"); err == nil {
		t.Fatalf("relative plan path accepted")
	}
}

// ---- history storage and infrastructure ----

func TestHistoryOnDisk(t *testing.T) {
	root := t.TempDir()
	histDir := filepath.Join(t.TempDir(), "hist")
	v := newEnv(t, fileeditor.Options{Root: root, HistoryDir: histDir})
	if v.ed.HistoryDir() != histDir {
		t.Fatalf("HistoryDir() = %q", v.ed.HistoryDir())
	}
	// The directory is made by the first edit that keeps history, not by
	// New or a view.
	p := v.write(t, "doc.txt", "original content\n")
	v.ok(t, events.FileEditorFields{Command: events.EditorView, Path: p})
	if _, err := os.Stat(histDir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("history directory before the first edit: %v, want it absent", err)
	}
	v.ok(t, replace(p, "original", sp("changed")))

	// The previous content is stored in a file under HistoryDir.
	var found []string
	filepath.WalkDir(histDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(path); string(b) == "original content\n" {
				found = append(found, path)
			}
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("history entry with the old content not found under %s (found %v)", histDir, found)
	}

	// A second editor sharing the directory sees the same history.
	if err := v.ed.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(histDir); err != nil {
		t.Fatalf("caller-supplied HistoryDir removed by Close: %v", err)
	}
	if _, err := v.ed.Execute(context.Background(), &events.FileEditorFields{Command: events.EditorView, Path: p}); err == nil {
		t.Fatalf("Execute after Close succeeded")
	}
	v2 := newEnv(t, fileeditor.Options{Root: root, HistoryDir: histDir})
	v2.ok(t, undo(p))
	if got := read(t, p); got != "original content\n" {
		t.Fatalf("content after undo %q", got)
	}
	if _, err := os.Stat(found[0]); err == nil {
		t.Fatalf("history entry not removed after undo")
	}

	// No temporary files are left next to edited files.
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Fatalf("unexpected files in root: %v", entries)
	}
}

func TestDefaultHistoryDirRemovedOnClose(t *testing.T) {
	ed, err := fileeditor.New(fileeditor.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dir := ed.HistoryDir()
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("history dir %q not created: %v", dir, err)
	}
	if err := ed.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("history dir %q not removed: %v", dir, err)
	}
	if err := ed.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestNewValidation(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "f")
	os.WriteFile(file, nil, 0o644)
	link := filepath.Join(t.TempDir(), "to-root")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts fileeditor.Options
	}{
		{"empty root", fileeditor.Options{}},
		{"relative root", fileeditor.Options{Root: "work"}},
		{"missing root", fileeditor.Options{Root: filepath.Join(root, "missing")}},
		{"root is a file", fileeditor.Options{Root: file}},
		{"history inside root", fileeditor.Options{Root: root, HistoryDir: filepath.Join(root, ".history")}},
		{"history is root", fileeditor.Options{Root: root, HistoryDir: root}},
		{"history dir is a file", fileeditor.Options{Root: root, HistoryDir: file}},
		{"history dir under a file", fileeditor.Options{Root: root, HistoryDir: filepath.Join(file, "h", "i")}},
		{"missing history dir inside root", fileeditor.Options{Root: root, HistoryDir: filepath.Join(root, "a", "b")}},
		{"missing history dir inside root through a symlink", fileeditor.Options{Root: root, HistoryDir: filepath.Join(link, "a")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if ed, err := fileeditor.New(tc.opts); err == nil {
				ed.Close()
				t.Fatalf("New(%+v) succeeded", tc.opts)
			}
		})
	}
}

func TestHistoryFailureIsGoError(t *testing.T) {
	histDir := filepath.Join(t.TempDir(), "hist")
	v := newEnv(t, fileeditor.Options{HistoryDir: histDir})
	p := v.write(t, "f.txt", "a\n")
	// Make the history directory unusable (works even as root).
	if err := os.RemoveAll(histDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(histDir, []byte("not a dir"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []events.FileEditorFields{replace(p, "a", sp("b")), insert(p, 0, "x"), create(v.p("g.txt"), "g")} {
		o, err := v.ed.Execute(context.Background(), &f)
		if err == nil {
			t.Fatalf("%s: expected a Go error, got observation %+v", f.Command, o)
		}
	}
	if got := read(t, p); got != "a\n" {
		t.Fatalf("file changed despite history failure: %q", got)
	}
	// Errors the model can act on are still observations.
	v.fail(t, view(v.p("missing")), "does not exist")
}

func TestWriteFailureRollsBackHistory(t *testing.T) {
	v := newEnv(t, fileeditor.Options{})
	file := v.write(t, "plain.txt", "x\n")
	// The parent "directory" is a regular file, so the write fails.
	p := filepath.Join(file, "child.txt")
	v.fail(t, create(p, "data"), "while trying to write to "+p)
	var entries []string
	filepath.WalkDir(v.hist, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(path) != "path" {
			entries = append(entries, path)
		}
		return nil
	})
	if len(entries) != 0 {
		t.Fatalf("history entries left after a failed write: %v", entries)
	}
}

func TestWritePreservesModeAndFailsOnReadOnly(t *testing.T) {
	v := newEnv(t, fileeditor.Options{})
	p := v.write(t, "script.sh", "#!/bin/sh\necho hi\n")
	if err := os.Chmod(p, 0o750); err != nil {
		t.Fatal(err)
	}
	v.ok(t, replace(p, "hi", sp("hello")))
	v.ok(t, insert(p, 2, "exit 0"))
	v.ok(t, undo(p))
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o750 {
		t.Fatalf("mode %v, want 0750", fi.Mode().Perm())
	}
	if got := read(t, p); got != "#!/bin/sh\necho hello\n" {
		t.Fatalf("content %q", got)
	}

	if os.Geteuid() == 0 {
		return // root can write read-only files
	}
	ro := v.write(t, "ro.txt", "x\n")
	os.Chmod(ro, 0o444)
	v.fail(t, replace(ro, "x", sp("y")), "while trying to write to "+ro)
	if got := read(t, ro); got != "x\n" {
		t.Fatalf("read-only file changed")
	}
	v.fail(t, undo(ro), "No edit history found") // the failed edit left no history
}

func TestCancelledContext(t *testing.T) {
	v := newEnv(t, fileeditor.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := create(v.p("x.txt"), "x")
	if _, err := v.ed.Execute(ctx, &f); err == nil {
		t.Fatalf("cancelled context accepted")
	}
	if _, err := os.Stat(v.p("x.txt")); err == nil {
		t.Fatalf("file created with cancelled context")
	}
}

func TestConcurrentUse(t *testing.T) {
	v := newEnv(t, fileeditor.Options{MaxHistory: 100})
	shared := v.write(t, "shared.txt", "")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := v.p(fmt.Sprintf("own%d.txt", g))
			for i := range 10 {
				f := insert(shared, 0, fmt.Sprintf("g%d-%d", g, i))
				if o, err := v.ed.Execute(context.Background(), &f); err != nil || o.IsError {
					t.Errorf("insert: %v %v", err, o)
				}
				var c events.FileEditorFields
				if i == 0 {
					c = create(own, "0")
				} else {
					c = replace(own, fmt.Sprint(i-1), sp(fmt.Sprint(i)))
				}
				if o, err := v.ed.Execute(context.Background(), &c); err != nil || o.IsError {
					t.Errorf("%s: %v %v", c.Command, err, o)
				}
				vf := view(shared)
				if o, err := v.ed.Execute(context.Background(), &vf); err != nil || o.IsError {
					t.Errorf("view: %v %v", err, o)
				}
			}
		}()
	}
	wg.Wait()
	if n := len(splitForTest(read(t, shared))); n != 80 {
		t.Fatalf("shared file has %d lines, want 80", n)
	}
	for g := range 8 {
		if got := read(t, v.p(fmt.Sprintf("own%d.txt", g))); got != "9" {
			t.Fatalf("own%d = %q", g, got)
		}
	}
}
