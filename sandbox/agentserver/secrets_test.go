package agentserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentserver"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/sandbox/secrets"
)

// TestSecretsNeverLeak plants secrets (static, looked up over HTTP, added
// live, the LLM key), has the agent and the bash API print them in several
// ways, and asserts that no value appears in anything the server writes or
// serves: events, responses, WebSocket frames, webhooks, log lines, LLM
// requests, files on disk and downloads.
func TestSecretsNeverLeak(t *testing.T) {
	const (
		token    = "tok-3f9a1c7e5b2d4680"
		quoted   = `q"uo\te<d>&-9x8y`
		looked   = "lookup-77aa55bb"
		lookCred = "Bearer lookup-cred-9z"
		fresh    = "fresh-0a1b2c3d4e"
		llmKey   = "sk-secret-llm-key"
	)
	quotedJSON := `q\"uo\\te<d>&-9x8y`
	const cloneTok = "clone-tok-998877aa"
	values := []string{token, quoted, quotedJSON, looked, "lookup-cred-9z", fresh, llmKey, token[:8], cloneTok}

	dir := t.TempDir()
	t.Setenv("TMPDIR", filepath.Join(dir, "tmp"))
	os.MkdirAll(filepath.Join(dir, "tmp"), 0o700)

	lookup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != lookCred {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		io.WriteString(w, looked)
	}))
	defer lookup.Close()

	var hookMu sync.Mutex
	var hookBodies [][]byte
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hookMu.Lock()
		hookBodies = append(hookBodies, append([]byte(r.URL.Path+" "), b...))
		hookMu.Unlock()
	}))
	defer hooks.Close()

	var logs testwait.Buffer
	masker := secrets.NewMasker()
	prev := slog.Default()
	slog.SetDefault(slog.New(masker.Handler(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	defer slog.SetDefault(prev)

	term := func(cmd string) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{"command": cmd}}}}
	}
	finish := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "done"}}}}
	e := buildEnv(t, envOptions{dir: dir, adjust: func(c *agentserver.Config) {
		c.WebhookURLs = []string{hooks.URL + "/hooks"}
		c.Masker = masker
	}},
		term(`echo "plain:$API_TOKEN"`),
		term(`printf 'split:%s' "${API_TOKEN:0:6}"; sleep 0.3; printf '%s\n' "${API_TOKEN:6}"`),
		term(`printf '{"q":"%s","l":"%s"}\n' "$(printf '%s' "$QUOTED" | sed 's/[\\"]/\\&/g')" "$LOOKED_UP"`),
		term(`echo "$API_TOKEN" > leak.txt && echo written`),
		finish,
		term(`echo "new:$NEW_TOKEN"`),
		finish,
		term(`echo "again:$API_TOKEN:$LOOKED_UP"`),
		finish,
	)

	id := e.create(map[string]any{"secrets": map[string]any{
		"API_TOKEN": token,
		"QUOTED":    map[string]any{"kind": "StaticSecret", "value": quoted, "description": "a quoted one"},
		"LOOKED_UP": map[string]any{"kind": "LookupSecret", "url": lookup.URL + "/v", "headers": map[string]string{"Authorization": lookCred}},
	}}, "terminal")

	var frames testwait.Buffer
	ws, err := e.dial(t, id, "session_api_key="+testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	wsDone := make(chan struct{})
	go func() {
		defer close(wsDone)
		for {
			_, data, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			frames.Write(append(data, '\n'))
		}
	}()

	run := func(text, wantInOutput string) {
		t.Helper()
		if r := e.post("/api/conversations/"+id+"/events", userMessage(text, true)); r.status != 200 {
			t.Fatalf("send: %d %s", r.status, r.body)
		}
		e.waitStatus(id, "finished")
		all := mustJSON(e.allEvents(id))
		for _, want := range strings.Split(wantInOutput, "|") {
			if !bytes.Contains(all, []byte(want)) {
				t.Fatalf("events lack %q (the secret did not reach the command, or was not masked):\n%s", want, all)
			}
		}
	}
	run("print the secrets", "plain:<secret-hidden>|split:<secret-hidden>|"+
		`{\"q\":\"<secret-hidden>\",\"l\":\"<secret-hidden>\"}|written`)

	// Bash API: a secret printed across two output chunks, and the secrets
	// of every conversation in its environment.
	if r := e.post("/api/conversations/"+id+"/secrets", map[string]any{"secrets": map[string]any{"NEW_TOKEN": fresh}}); r.status != 200 {
		t.Fatalf("update secrets: %d %s", r.status, r.body)
	}
	// Every frame of the bash-events socket (replay and live) is collected
	// from here on.
	bashWS, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(e.http.URL, "http")+
		"/sockets/bash-events?resend_mode=all&session_api_key="+testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	var bashFramesMu sync.Mutex
	var bashFrames [][]byte
	bashDone := make(chan struct{})
	go func() {
		defer close(bashDone)
		for {
			_, data, err := bashWS.Read(context.Background())
			if err != nil {
				return
			}
			bashFramesMu.Lock()
			bashFrames = append(bashFrames, data)
			bashFramesMu.Unlock()
		}
	}()
	r := e.post("/api/bash/execute_bash_command", map[string]any{"command": `printf 'ab:%s' "${API_TOKEN:0:4}"; sleep 0.8; printf '%s|%s\n' "${API_TOKEN:4}" "$NEW_TOKEN"`})
	if r.status != 200 {
		t.Fatalf("bash: %d %s", r.status, r.body)
	}
	// A command's own secrets (the ACS extension the start flow clones
	// with): in its environment only, masked, never stored.
	r = e.post("/api/bash/execute_bash_command", map[string]any{"command": `echo "clone:$CLONE_TOKEN"`,
		"secrets": map[string]string{"CLONE_TOKEN": cloneTok}})
	if r.status != 200 || !strings.Contains(string(r.body), "clone:<secret-hidden>") {
		t.Fatalf("bash with secrets: %d %s", r.status, r.body)
	}
	// A command that holds a secret value literally: it runs with the real
	// text (the comparison succeeds), but is stored, served and sent masked;
	// so is a cwd that holds one (in the BashError).
	r = e.post("/api/bash/execute_bash_command", map[string]any{
		"command": `test "$API_TOKEN" = '` + token + `' && echo literal-ok`})
	if r.status != 200 || !strings.Contains(string(r.body), "literal-ok") {
		t.Fatalf("bash with a literal secret: %d %s", r.status, r.body)
	}
	r = e.post("/api/bash/start_bash_command", map[string]any{"command": "true", "cwd": "/nonexistent/" + fresh})
	if r.status != 422 || !strings.Contains(string(r.body), "/nonexistent/"+secrets.Hidden) {
		t.Fatalf("bash with a secret in cwd: %d %s", r.status, r.body)
	}
	bashEvents := e.call("GET", "/api/bash/bash_events/search?limit=100", nil)
	var page struct {
		Items []struct {
			Stdout *string `json:"stdout"`
		} `json:"items"`
	}
	bashEvents.json(t, &page)
	// The socket sends every stored event once: wait for all of them.
	frameCount := func() int {
		bashFramesMu.Lock()
		defer bashFramesMu.Unlock()
		return len(bashFrames)
	}
	if !testwait.Until(20*time.Second, func() bool { return frameCount() >= len(page.Items) }) {
		t.Fatalf("bash-events socket sent %d frames, want %d", frameCount(), len(page.Items))
	}
	bashWS.Close(websocket.StatusNormalClosure, "")
	<-bashDone
	allBashFrames := bytes.Join(bashFrames, []byte("\n"))
	for _, want := range []string{`"kind":"BashCommand"`, `= '` + secrets.Hidden + `' && echo literal-ok`, `"stdout":"literal-ok\n"`, `"kind":"BashError"`} {
		if !bytes.Contains(allBashFrames, []byte(want)) {
			t.Errorf("bash-events frames lack %q:\n%s", want, allBashFrames)
		}
	}
	var stdout string
	for _, it := range page.Items {
		if it.Stdout != nil {
			stdout += *it.Stdout
		}
	}
	if !strings.HasPrefix(stdout, "ab:<secret-hidden>|<secret-hidden>\n") {
		t.Fatalf("bash output %q", stdout)
	}
	run("now the new one", "new:<secret-hidden>")

	// The LLM knows the names, never the values.
	evs := e.allEvents(id)
	sys := mustJSON(evs[0])
	for _, name := range []string{"API_TOKEN", "QUOTED", "LOOKED_UP"} {
		if !bytes.Contains(sys, []byte(name)) {
			t.Fatalf("system prompt does not name %s: %s", name, sys)
		}
	}

	// A download of a file the agent wrote the value into is masked.
	dl := e.call("GET", "/api/file/download?path="+filepath.Join(e.work, "leak.txt"), nil)
	if dl.status != 200 || string(dl.body) != secrets.Hidden+"\n" {
		t.Fatalf("download: %d %q", dl.status, dl.body)
	}
	// So is the workspace archive: that file is archived masked, a file
	// without secrets byte for byte.
	plain := bytes.Repeat([]byte("plain\x00\xff\r\n"), 20000)
	if err := os.WriteFile(filepath.Join(e.work, "plain.bin"), plain, 0o600); err != nil {
		t.Fatal(err)
	}
	ar := e.call("GET", "/api/workspace/archive", nil)
	if ar.status != 200 {
		t.Fatalf("archive: %d %s", ar.status, ar.body)
	}
	_, archived := archiveNames(t, ar.body)
	if archived["leak.txt"] != secrets.Hidden+"\n" || archived["plain.bin"] != string(plain) {
		t.Fatalf("archive: leak.txt %q, plain.bin byte for byte: %v", archived["leak.txt"], archived["plain.bin"] == string(plain))
	}
	for name, content := range archived {
		for _, v := range values {
			if strings.Contains(name+content, v) {
				t.Errorf("archive entry %s contains secret %q", name, v)
			}
		}
	}
	info := e.call("GET", "/api/conversations/"+id, nil)

	// After a restart the secrets are still there (sealed with the session
	// key) and still masked.
	ws.Close(websocket.StatusNormalClosure, "")
	<-wsDone
	e.restart()
	run("once more", "again:<secret-hidden>:<secret-hidden>")
	e.stop()

	hookMu.Lock()
	hookAll := bytes.Join(hookBodies, []byte("\n"))
	hookMu.Unlock()
	reqs := mustJSON(e.llm.Requests())
	served := map[string][]byte{
		"events": mustJSON(e.allEventsOffline(id)), "websocket frames": frames.Bytes(), "webhooks": hookAll,
		"logs": logs.Bytes(), "llm requests": reqs, "conversation info": info.body, "bash events": bashEvents.body,
		"bash-events socket frames": allBashFrames,
	}
	if len(hookAll) == 0 || frames.Len() == 0 || logs.Len() == 0 {
		t.Fatalf("nothing captured: webhooks %d, frames %d, logs %d bytes", len(hookAll), frames.Len(), logs.Len())
	}
	for what, b := range served {
		for _, v := range values {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("%s contain secret %q", what, v)
			}
		}
	}
	// Every file the server wrote (conversation files, bash events, tool
	// state, temporary files), except the one the agent itself wrote.
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == filepath.Join(e.work, "leak.txt") || strings.Contains(p, "/.git/") {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, v := range values {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("file %s contains secret %q", p, v)
			}
		}
		return nil
	})
}

// allEventsOffline re-reads the events from a fresh server over the same
// directories (after stop).
func (e *env) allEventsOffline(id string) []map[string]any {
	e.start()
	defer e.stop()
	return e.allEvents(id)
}

// mustJSON encodes v without HTML escaping (so "<secret-hidden>" reads as
// such).
func mustJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return b.Bytes()
}
