package fstools_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

type grepFunc func(ctx context.Context, r fstools.Root, a *events.GrepAction) (*events.GrepObservation, error)

// grepEngines are the implementations under test: Go always, ripgrep when
// installed.
func grepEngines(t *testing.T) map[string]grepFunc {
	engines := map[string]grepFunc{"go": fstools.GrepGo}
	if rg, err := exec.LookPath("rg"); err == nil {
		engines["rg"] = func(ctx context.Context, r fstools.Root, a *events.GrepAction) (*events.GrepObservation, error) {
			return fstools.GrepRipgrep(ctx, r, a, rg)
		}
	} else {
		t.Log("rg is not installed: only the Go implementation is tested")
	}
	return engines
}

func utf16LE(s string) string {
	b := []byte{0xFF, 0xFE}
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return string(b)
}

// grepFixture builds a tree exercising ripgrep's default filtering.
func grepFixture(t *testing.T) (fstools.Root, string) {
	t.Helper()
	r, root := newRoot(t)
	filler := strings.Repeat("filler line\n", 100<<10/12) // ~100 KiB
	tree(t, root, map[string]string{
		"main.go":            "package main\n\nfunc main() {}\n",
		"util.go":            "package util\n\nfunc helper() int { return 42 }\n",
		"web/app.ts":         "export function main() {}\n",
		"web/view.tsx":       "const main = 1;\n",
		"web/style.css":      "main { color: red; }\n",
		"README.md":          "The Main entry point\n",
		".env":               "main=1\n",
		".hidden/x.go":       "func main() {}\n",
		"bin.dat":            "main\x00\x01\x02",
		"late_nul.txt":       "main\n" + filler + "\x00main\n",
		"after_nul.txt":      filler + "\x00main\n",
		"cut_line.txt":       "prefix main\x00 suffix\n",
		".gitignore":         "*.log\n!keep.log\nvendor/\n/top.txt\n",
		"ignored.log":        "main\n",
		"keep.log":           "main\n",
		"vendor/lib.go":      "func main() {}\n",
		"top.txt":            "main\n",
		"sub/top.txt":        "main\n",
		"sub/.gitignore":     "local.txt\n",
		"sub/local.txt":      "main\n",
		"sub/deep/local.txt": "main\n",
		"sub/other.txt":      "main\n",
		"utf16.txt":          utf16LE("utf16 main here\n"),
		"bom8.txt":           "\xEF\xBB\xBFmain at start\n",
		"crlf.txt":           "crlf main\r\n",
		"empty.txt":          "",
		"digits.txt":         "order 12345\n",
	})
	symlink(t, filepath.Join(root, "main.go"), filepath.Join(root, "link.go"))
	symlink(t, filepath.Join(root, "web"), filepath.Join(root, "weblink"))
	return r, root
}

func TestGrep(t *testing.T) {
	r, root := grepFixture(t)
	cases := []struct {
		name, pattern, include, path string
		want                         []string
	}{
		{"word", `main`, "", "", sorted("main.go", "web/app.ts", "web/view.tsx", "web/style.css",
			"late_nul.txt", "keep.log", "sub/top.txt", "sub/other.txt", "utf16.txt", "bom8.txt", "crlf.txt")},
		{"regex", `func\s+\w+\(\)`, "", "", sorted("main.go", "util.go")},
		{"case sensitive", `Main`, "", "", sorted("README.md")},
		{"inline case folding", `(?i)MAIN ENTRY`, "", "", sorted("README.md")},
		{"anchors are per line", `^func main`, "", "", sorted("main.go")},
		{"bom stripped", `^main at start$`, "", "", sorted("bom8.txt")},
		{"no crlf handling", `crlf main$`, "", "", sorted()},
		{"nul in the first 64 KiB makes a file binary", `prefix main`, "", "", sorted()},
		{"text after a later nul is not searched", `^\x00?main$`, "*nul.txt", "", sorted("late_nul.txt")},
		{"include", `main`, "*.go", "", sorted("main.go")},
		{"include braces", `main`, "*.{ts,tsx}", "", sorted("web/app.ts", "web/view.tsx")},
		{"include with a slash", `main`, "web/*.css", "", sorted("web/style.css")},
		{"include beats gitignore", `main`, "*.log", "", sorted("ignored.log", "keep.log")},
		{"include beats hidden files", `main`, "*env", "", sorted(".env")},
		{"include does not enter hidden directories", `main`, "*.go", "", sorted("main.go")},
		{"negated include", `main`, "!*.txt", "", sorted("main.go", "web/app.ts", "web/view.tsx", "web/style.css", "keep.log")},
		{"path", `main`, "", "web", sorted("web/app.ts", "web/view.tsx", "web/style.css")},
		{"absolute path", `main`, "", filepath.Join(root, "sub"), sorted("sub/top.txt", "sub/other.txt")},
		{"path inside a hidden directory", `main`, "", ".hidden", sorted(".hidden/x.go")},
		{"path inside an ignored directory", `main`, "", "vendor", sorted("vendor/lib.go")},
		{"empty pattern matches non-empty files", ``, "*.txt", "", sorted("late_nul.txt", "after_nul.txt", "top.txt",
			"sub/top.txt", "sub/other.txt", "sub/local.txt", "sub/deep/local.txt", "utf16.txt", "bom8.txt", "crlf.txt", "digits.txt")},
		{"digits", `\d{5}`, "", "", sorted("digits.txt")},
		{"no match", `zzz_nothing`, "", "", sorted()},
	}
	for name, grep := range grepEngines(t) {
		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				a := &events.GrepAction{Pattern: c.pattern}
				if c.include != "" {
					a.Include = sp(c.include)
				}
				if c.path != "" {
					a.Path = sp(c.path)
				}
				o, err := grep(context.Background(), r, a)
				wantOK(t, o, err)
				if got := rels(t, root, o.Matches); !slices.Equal(got, c.want) {
					t.Errorf("matches = %v, want %v", got, c.want)
				}
				if o.Pattern != c.pattern || !filepath.IsAbs(o.SearchPath) || o.Truncated {
					t.Errorf("pattern %q search path %q truncated %v", o.Pattern, o.SearchPath, o.Truncated)
				}
				if (o.IncludePattern == nil) != (c.include == "") {
					t.Errorf("include pattern %v", o.IncludePattern)
				}
				if len(c.want) == 0 {
					if !strings.HasPrefix(obsText(o), fmt.Sprintf("No files found containing pattern %q in %s", c.pattern, o.SearchPath)) {
						t.Errorf("text = %q", obsText(o))
					}
				} else if obsText(o) != strings.Join(o.Matches, "\n") {
					t.Errorf("text = %q, want the paths one per line", obsText(o))
				}
			})
		}
	}
}

func TestGrepErrors(t *testing.T) {
	r, _ := grepFixture(t)
	cases := []struct {
		name, pattern, include, path string
		fragments                    []string
	}{
		{"invalid regex", `func(`, "", "", []string{"Invalid regex pattern", "missing closing )"}},
		{"unsupported syntax", `(?=x)`, "", "", []string{"Invalid regex pattern"}},
		{"literal newline", `a\nb`, "", "", []string{"line break"}},
		{"invalid include", `x`, "*.{go", "", []string{"Invalid include pattern", "unclosed"}},
		{"nested braces in include", `x`, "*.{go,{ts,js}}", "", []string{"Invalid include pattern", "nested"}},
		{"doublestar inside a component", `x`, "a**.go", "", []string{"Invalid include pattern", "'**'"}},
		{"unclosed class in include", `x`, "[ab", "", []string{"Invalid include pattern", "unclosed '['"}},
		{"missing path", `x`, "", "nope", []string{"does not exist"}},
		{"path is a file", `x`, "", "main.go", []string{"is not a directory"}},
		{"path outside", `x`, "", "../..", []string{"outside the workspace"}},
	}
	for name, grep := range grepEngines(t) {
		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				a := &events.GrepAction{Pattern: c.pattern}
				if c.include != "" {
					a.Include = sp(c.include)
				}
				if c.path != "" {
					a.Path = sp(c.path)
				}
				o, err := grep(context.Background(), r, a)
				wantError(t, o, err, c.fragments...)
				if o.SearchPath == "" || o.Pattern != c.pattern {
					t.Errorf("search path %q pattern %q", o.SearchPath, o.Pattern)
				}
			})
		}
	}
}

func TestGrepNewestFirstAndCap(t *testing.T) {
	r, root := newRoot(t)
	for i := range 130 {
		n := fmt.Sprintf("d%d/f%03d.txt", i%5, i)
		write(t, root, n, "needle\n")
		touch(t, root, n, i)
	}
	write(t, root, "other.txt", "haystack\n")
	for name, grep := range grepEngines(t) {
		t.Run(name, func(t *testing.T) {
			o, err := grep(context.Background(), r, &events.GrepAction{Pattern: "needle"})
			wantOK(t, o, err)
			if len(o.Matches) != fstools.MaxSearchResults || !o.Truncated {
				t.Fatalf("got %d matches, truncated %v", len(o.Matches), o.Truncated)
			}
			for i, m := range o.Matches {
				if want := fmt.Sprintf("f%03d.txt", 129-i); filepath.Base(m) != want {
					t.Fatalf("match %d = %s, want %s", i, m, want)
				}
			}
			if !strings.Contains(obsText(o), "100 most recently modified of 130") {
				t.Error("no truncation note")
			}
		})
	}
}

// TestGrepParity runs ripgrep and the Go implementation on the same tree and
// requires identical results.
func TestGrepParity(t *testing.T) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		t.Skip("rg (ripgrep) is not installed")
	}
	r, root := grepFixture(t)
	// More structure for the ignore rules.
	tree(t, root, map[string]string{
		"nested/.gitignore":         "*.gen.go\n!keep.gen.go\nbuild/\n/anchored.txt\ndocs/**/*.md\n",
		"nested/a.gen.go":           "main\n",
		"nested/keep.gen.go":        "main\n",
		"nested/build/x.go":         "main\n",
		"nested/x/build":            "main\n",
		"nested/anchored.txt":       "main\n",
		"nested/x/anchored.txt":     "main\n",
		"nested/docs/a/b.md":        "main\n",
		"nested/docs/c.md":          "main\n",
		"nested/docs/c.txt":         "main\n",
		"nested/.dotdir/a.txt":      "main\n",
		"nested/x/.dot.txt":         "main\n",
		"nested/x/[weird] name.txt": "main\n",
		"nested/x/unicode_é.txt":    "café main\n",
	})
	patterns := []string{`main`, `^main$`, `func`, `\bmain\b`, `ma.n`, `[Mm]ain`, `(?i)MAIN`, `main|helper`, `\d+`, `é`, ``, `zzz`}
	includes := []string{"", "*.go", "*.{txt,md}", "*.log", "!*.go", "nested/**", "**/x/*", "*.env", "web/*"}
	paths := []string{"", "nested", "sub"}
	for _, p := range patterns {
		for _, inc := range includes {
			for _, dir := range paths {
				a := &events.GrepAction{Pattern: p}
				if inc != "" {
					a.Include = sp(inc)
				}
				if dir != "" {
					a.Path = sp(dir)
				}
				ogo, err := fstools.GrepGo(context.Background(), r, a)
				if err != nil {
					t.Fatal(err)
				}
				org, err := fstools.GrepRipgrep(context.Background(), r, a, rg)
				if err != nil {
					t.Fatalf("rg: pattern %q include %q path %q: %v", p, inc, dir, err)
				}
				if ogo.IsError != org.IsError {
					t.Errorf("pattern %q include %q path %q: IsError go=%v rg=%v", p, inc, dir, ogo.IsError, org.IsError)
					continue
				}
				gotGo, gotRg := rels(t, root, ogo.Matches), rels(t, root, org.Matches)
				if !slices.Equal(gotGo, gotRg) {
					t.Errorf("pattern %q include %q path %q:\n  go: %v\n  rg: %v", p, inc, dir, gotGo, gotRg)
				}
			}
		}
	}
}

// TestGrepFallsBackWhenRipgrepFails checks that a broken rg does not break
// Grep: the Go implementation answers.
func TestGrepFallsBackWhenRipgrepFails(t *testing.T) {
	r, root := newRoot(t)
	write(t, root, "a.txt", "needle\n")
	bin := t.TempDir()
	write(t, bin, "rg", "#!/bin/sh\necho 'rg: broken' >&2\nexit 2\n")
	if err := os.Chmod(filepath.Join(bin, "rg"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	o, err := fstools.Grep(context.Background(), r, &events.GrepAction{Pattern: "needle"})
	wantOK(t, o, err)
	if got := rels(t, root, o.Matches); !slices.Equal(got, []string{"a.txt"}) {
		t.Errorf("matches = %v", got)
	}
	// Without fallback the failure is a Go error.
	if _, err := fstools.GrepRipgrep(context.Background(), r, &events.GrepAction{Pattern: "needle"}, filepath.Join(bin, "rg")); err == nil {
		t.Error("GrepRipgrep with a failing rg: no error")
	}
}

// TestGrepRipgrepInvocation checks the rg command line and the parsing of
// its output with a stand-in rg that records its arguments.
func TestGrepRipgrepInvocation(t *testing.T) {
	r, root := newRoot(t)
	write(t, root, "sub/a.txt", "x")
	write(t, root, "sub/deep/b.txt", "x")
	bin := t.TempDir()
	record := filepath.Join(bin, "args")
	script := "#!/bin/sh\n" +
		"pwd > " + record + "\n" +
		"for a in \"$@\"; do echo \"$a\" >> " + record + "; done\n" +
		"for last in \"$@\"; do :; done\n" +
		"printf '%s/a.txt\\0%s/deep/b.txt\\0' \"$last\" \"$last\"\n"
	write(t, bin, "rg", script)
	if err := os.Chmod(filepath.Join(bin, "rg"), 0o755); err != nil {
		t.Fatal(err)
	}
	o, err := fstools.GrepRipgrep(context.Background(), r, &events.GrepAction{Pattern: "-x", Path: sp("sub"), Include: sp("*.txt")}, filepath.Join(bin, "rg"))
	wantOK(t, o, err)
	if got := rels(t, root, o.Matches); !slices.Equal(got, sorted("sub/a.txt", "sub/deep/b.txt")) {
		t.Errorf("matches = %v", got)
	}
	lines := strings.Split(strings.TrimSpace(readString(t, record)), "\n")
	sub := filepath.Join(root, "sub")
	if lines[0] != sub {
		t.Errorf("rg ran in %s, want %s", lines[0], sub)
	}
	args := lines[1:]
	for _, want := range []string{"--files-with-matches", "--null", "--no-messages", "--no-config", "--no-require-git",
		"--no-ignore-parent", "--no-ignore-global", "--no-ignore-exclude", "--no-ignore-dot", "--glob=*.txt", "--regexp=-x"} {
		if !slices.Contains(args, want) {
			t.Errorf("rg arguments %v lack %s", args, want)
		}
	}
	if n := len(args); n < 2 || args[n-2] != "--" || args[n-1] != sub {
		t.Errorf("rg arguments end with %v", args[max(0, n-2):])
	}
}
