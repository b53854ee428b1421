// Package wsarchivetest reads workspace archives (wsarchive's format) in
// tests, checking what every entry of one must satisfy.
package wsarchivetest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"
)

// Entry is one entry of an archive.
type Entry struct {
	Typ     byte
	Mode    int64
	Content string
	Link    string
}

// Read decodes a complete archive (its gzip checksum included) and returns
// its entries by name and the names in archive order. It fails t on a
// malformed archive and reports (t.Errorf) an entry that records an owner,
// a time that is not whole seconds in the past, a name that is not relative
// to the directory, or a name that appears twice.
func Read(t testing.TB, b []byte) (map[string]Entry, []string) {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]Entry{}
	var order []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "" {
			t.Errorf("%s: owner recorded: %d:%d %q:%q", hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname)
		}
		if hdr.ModTime.Nanosecond() != 0 || hdr.ModTime.After(time.Now()) {
			t.Errorf("%s: mtime %v is not whole seconds in the past", hdr.Name, hdr.ModTime)
		}
		if !fs.ValidPath(strings.TrimSuffix(hdr.Name, "/")) || hdr.Name == "./" || hdr.Name == "." {
			t.Errorf("entry name %q is not relative to the directory", hdr.Name)
		}
		if _, dup := out[hdr.Name]; dup {
			t.Errorf("duplicate entry %s", hdr.Name)
		}
		out[hdr.Name] = Entry{Typ: hdr.Typeflag, Mode: hdr.Mode, Content: string(content), Link: hdr.Linkname}
		order = append(order, hdr.Name)
	}
	if _, err := io.Copy(io.Discard, gz); err != nil { // verifies the checksum
		t.Fatal(err)
	}
	return out, order
}
