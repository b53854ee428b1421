package bashapi

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/acs-project/acs/sandbox/agentwire"
)

func TestCut(t *testing.T) {
	cases := []struct {
		name  string
		b     string
		limit int
		want  int
	}{
		{"ascii", "abcdefgh", 4, 4},
		{"line break in second half", "ab\ncdefgh", 4, 3},
		{"line break too early", "a\nbcdefghij", 8, 8},
		{"carriage return", "abc\rdefgh", 5, 4},
		{"inside a 2-byte rune", "aéé", 2, 1},
		{"after a 2-byte rune", "aéé", 3, 3},
		{"inside a 4-byte rune", "a😀b", 3, 1},
		{"invalid bytes", "\x80\x80\x80\x80\x80\x80", 4, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := cut([]byte(tc.b), tc.limit); got != tc.want {
				t.Fatalf("cut(%q, %d) = %d, want %d", tc.b, tc.limit, got, tc.want)
			}
		})
	}
}

func TestCompleteUTF8(t *testing.T) {
	cases := []struct {
		b    string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"abé", 4},
		{"ab\xc3", 2},
		{"ab\xf0\x9f\x98", 2},
		{"ab😀", 6},
		{"ab\x80", 3}, // invalid, not incomplete: kept
	}
	for _, tc := range cases {
		if got := completeUTF8([]byte(tc.b)); got != tc.want {
			t.Fatalf("completeUTF8(%q) = %d, want %d", tc.b, got, tc.want)
		}
	}
}

// TestEmitChunkNeverSplitsRunes feeds a stream of 2-byte runes at odd offsets
// and checks every non-final chunk is valid UTF-8 within the size limit.
func TestEmitChunkNeverSplitsRunes(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Options{Dir: dir, WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := &runner{s: s, p: &process{cmd: &agentwire.BashCommand{ID: newID()}}}
	data := "x" + strings.Repeat("é", maxChunk)
	var got strings.Builder
	for i := 0; i < len(data); i += 4097 {
		r.streams[0].buf = append(r.streams[0].buf, data[i:min(i+4097, len(data))]...)
		for r.pending() >= maxChunk {
			ev := r.emitChunk(true, nil)
			if ev == nil {
				t.Fatal("no progress")
			}
			if !utf8.ValidString(*ev.Stdout) || len(*ev.Stdout) > maxChunk {
				t.Fatalf("chunk of %d bytes, valid %v", len(*ev.Stdout), utf8.ValidString(*ev.Stdout))
			}
			got.WriteString(*ev.Stdout)
		}
	}
	code := 0
	for r.pending() > 0 {
		ev := r.emitChunk(true, &code)
		got.WriteString(*ev.Stdout)
	}
	if got.String() != data {
		t.Fatal("output changed")
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"FOO_TOKEN": true, "SESSION_API_KEY": true, "OH_SESSION_API_KEYS_0": true,
		"aws_secret_access_key": true, "DB_PASSWORD": true, "PATH": false, "HOME": false,
	} {
		if got := secretName(name); got != want {
			t.Fatalf("secretName(%s) = %v", name, got)
		}
	}
}

func TestNormalizeID(t *testing.T) {
	hex := "0123456789abcdef0123456789abcdef"
	for in, want := range map[string]string{
		hex:                                    hex,
		strings.ToUpper(hex):                   hex,
		"01234567-89ab-cdef-0123-456789abcdef": hex,
		"01234567-89ab-cdef-0123_456789abcdef": "",
		hex[:31]:                               "",
		hex[:31] + "g":                         "",
	} {
		got, ok := normalizeID(in)
		if got != want || ok != (want != "") {
			t.Fatalf("normalizeID(%q) = %q, %v", in, got, ok)
		}
	}
}

// TestReadPipeKeepsWhatThePipeHoldsAtTheDeadline: a reader that reaches the
// drain deadline late, with output the command wrote still in the pipe,
// forwards that output before its EOF; a background process holding the
// pipe open does not make it wait for more.
func TestReadPipeKeepsWhatThePipeHoldsAtTheDeadline(t *testing.T) {
	s, err := New(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	want := strings.Repeat("é", 20000) // 40000 bytes: more than one read
	if _, err := io.WriteString(w, want); err != nil {
		t.Fatal(err)
	}
	if err := r.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	data := make(chan pipeData, 16)
	go s.readPipe(r, 0, data)
	var got strings.Builder
	for d := range data {
		if d.eof {
			break
		}
		got.Write(d.b)
	}
	if got.String() != want {
		t.Fatalf("forwarded %d bytes, want %d", got.Len(), len(want))
	}
}
