package agentserver_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testwait"
)

// readySpare waits until the spares directory of kind holds a spare made
// to the end (for workspaces: its .git has HEAD) and returns its path.
func (e *env) readySpare(kind string) string {
	e.t.Helper()
	dir := filepath.Join(e.cfg.ConversationsDir, ".spares", kind)
	var found string
	if !testwait.Until(10*time.Second, func() bool {
		entries, _ := os.ReadDir(dir)
		for _, en := range entries {
			p := filepath.Join(dir, en.Name())
			if kind != "workspaces" {
				found = p
				return true
			}
			if _, err := os.Stat(filepath.Join(p, ".git", "HEAD")); err == nil {
				found = p
				return true
			}
		}
		return false
	}) {
		e.t.Fatalf("no spare %s was made", kind)
	}
	return found
}

// A new working directory is an empty repository's work tree whether a
// spare was renamed into place or it was made on demand (the first create
// of a parent that does not exist yet), a conversation made in a spare
// directory loads after a restart, and a working directory inside a
// repository gets no nested one.
func TestNewWorkingDirectoriesAreRepositoriesWithOrWithoutSpares(t *testing.T) {
	e := newEnv(t)
	root := filepath.Join(e.dir, "ws")
	var ids []string
	usedSpare := false
	for i := 0; i < 10 && !usedSpare; i++ {
		ws, conv := e.readySpare("workspaces"), e.readySpare("conversations")
		work := filepath.Join(root, string(rune('a'+i)))
		ids = append(ids, e.create(map[string]any{"workspace": map[string]any{"working_dir": work}}))
		if got := gitRun(t, work, "rev-parse", "--show-toplevel"); got != work {
			t.Fatalf("create #%d: the work tree of %s is %s", i+1, work, got)
		}
		if head := gitRun(t, work, "symbolic-ref", "HEAD"); head != "refs/heads/main" {
			t.Fatalf("create #%d: HEAD = %s", i+1, head)
		}
		_, wsErr := os.Stat(ws)
		_, convErr := os.Stat(conv)
		usedSpare = os.IsNotExist(wsErr) && os.IsNotExist(convErr)
	}
	if !usedSpare {
		t.Fatal("no create used a spare working directory and conversation directory")
	}
	// The repository works: a commit in it.
	last := filepath.Join(root, string(rune('a'+len(ids)-1)))
	os.WriteFile(filepath.Join(last, "f.txt"), []byte("f\n"), 0o644)
	gitRun(t, last, "add", "f.txt")
	gitRun(t, last, "commit", "-q", "-m", "first")
	// Inside that repository, a new working directory is no repository of
	// its own.
	nested := filepath.Join(last, "pkg")
	e.readySpare("workspaces")
	e.create(map[string]any{"workspace": map[string]any{"working_dir": nested}})
	if _, err := os.Stat(filepath.Join(nested, ".git")); !os.IsNotExist(err) {
		t.Fatalf("a working directory inside a repository got its own: %v", err)
	}
	e.restart()
	for _, id := range ids {
		if r := e.call("GET", "/api/conversations/"+id, nil); r.status != 200 {
			t.Fatalf("conversation %s after a restart: %d %s", id, r.status, r.body)
		}
	}
}
