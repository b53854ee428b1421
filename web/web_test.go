package web_test

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/acs-project/acs/web"
)

// Every file the UI refers to (module imports, the page's script and
// style) is embedded, and nothing is loaded from another origin.
func TestEveryReferenceIsEmbedded(t *testing.T) {
	fsys := web.FS()
	ref := regexp.MustCompile(`(?:from |import\(|src=|href=)"(/[^"]*\.(?:js|css))"`)
	external := regexp.MustCompile(`(?:from |import\(|src=|href=|url\()"?(?:https?:)?//`)
	seen := 0
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if m := external.FindString(string(b)); m != "" {
			t.Errorf("%s loads from another origin: %s", p, m)
		}
		for _, m := range ref.FindAllStringSubmatch(string(b), -1) {
			seen++
			if _, err := fs.Stat(fsys, strings.TrimPrefix(m[1], "/")); err != nil {
				t.Errorf("%s refers to %s, which is not embedded", p, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(fsys, "index.html"); err != nil || seen < 5 {
		t.Fatalf("index.html: %v; %d references found", err, seen)
	}
}
