package agentserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreateConversationRefusesAnUnusableWorkingDir: a working_dir no
// directory can have (a NUL byte, too long, a name over 255 bytes) or that
// cannot be created (a regular file in its way) is the caller's mistake: 422
// at body.workspace.working_dir naming no host path, not a 500 from mkdir.
// (The route fuzz found a NUL byte answered 500 "Could not create the
// conversation: create working dir: mkdir …: invalid argument".)
func TestCreateConversationRefusesAnUnusableWorkingDir(t *testing.T) {
	e := newEnv(t)
	file := filepath.Join(e.work, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dir, msg string }{
		{"NUL byte", e.work + "/a\x00b", "Value error, Invalid path: contains a NUL byte"},
		{"too long", e.work + "/" + strings.Repeat("d/", 2500), "Value error, Invalid path: longer than 4096 bytes"},
		{"long name", e.work + "/" + strings.Repeat("n", 256), "Value error, Invalid path: a name is longer than 255 bytes"},
		{"below a file", file + "/sub", "Value error, Cannot create the working directory: not a directory"},
		{"a file", file, "Value error, Cannot create the working directory: not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("POST", "/api/conversations", map[string]any{"agent": e.agent(), "workspace": map[string]any{"working_dir": tc.dir}})
			want, _ := json.Marshal(map[string]any{"detail": []map[string]any{{"loc": []string{"body", "workspace", "working_dir"}, "msg": tc.msg, "type": "value_error"}}})
			if r.status != 422 || string(r.body) != string(want) {
				t.Fatalf("%d %s\nwant 422 %s", r.status, r.body, want)
			}
		})
	}
	// Nothing was created, and no conversation directory (a spare taken
	// for a refused create) was left behind.
	if r := e.call("GET", "/api/conversations/count", nil); string(r.body) != "0" {
		t.Fatalf("conversations after refusals: %s", r.body)
	}
	entries, _ := os.ReadDir(e.cfg.ConversationsDir)
	for _, en := range entries {
		if en.Name() != ".spares" {
			t.Errorf("a refused create left %s in the conversations directory", en.Name())
		}
	}
}
