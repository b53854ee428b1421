package diskfulltest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/acs-project/acs/internal/diskfull"
	"github.com/acs-project/acs/internal/diskfull/diskfulltest"
)

// TestFillMakesWritesFailUntilFreed: on the tmpfs, a write after Fill fails
// with an error diskfull.Is recognises, and succeeds once it is freed.
func TestFillMakesWritesFailUntilFreed(t *testing.T) {
	dir := diskfulltest.Dir(t, 1<<20)
	free := diskfulltest.Fill(t, dir)
	path := filepath.Join(dir, "f")
	err := os.WriteFile(path, make([]byte, 8<<10), 0o600)
	if !diskfull.Is(err) {
		t.Fatalf("write on a full disk: %v", err)
	}
	free()
	if err := os.WriteFile(path, make([]byte, 8<<10), 0o600); err != nil {
		t.Fatalf("write after freeing: %v", err)
	}
}
