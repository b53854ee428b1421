// Package testbin builds the acs binary for tests that run real agent-server
// processes (process sandboxes, end-to-end tests). It builds once per test
// process into a temporary directory; Go's build cache makes later builds
// fast.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	once sync.Once
	path string
	err  error
	out  []byte
)

// ACS returns the path of a freshly built acs binary.
func ACS(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		var root []byte
		root, err = exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			return
		}
		dir, e := os.MkdirTemp("", "acs-testbin-")
		if e != nil {
			err = e
			return
		}
		path = filepath.Join(dir, "acs")
		cmd := exec.Command("go", "build", "-o", path, "./cmd/acs")
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
		out, err = cmd.CombinedOutput()
	})
	if err != nil {
		t.Fatalf("build acs: %v\n%s", err, out)
	}
	return path
}

// Main runs a package's tests and removes the built binary; use it as the
// body of TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// Cleanup removes the built binary.
func Cleanup() {
	if path != "" {
		os.RemoveAll(filepath.Dir(path))
	}
}
