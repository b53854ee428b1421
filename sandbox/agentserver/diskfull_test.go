package agentserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acs-project/acs/internal/diskfull/diskfulltest"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// newEnvOnDisk is newEnv with the workspace and the conversations on a
// small file system of their own, which a test can fill.
func newEnvOnDisk(t *testing.T, replies ...llmtest.Reply) (*env, string) {
	t.Helper()
	disk := diskfulltest.Dir(t, 8<<20)
	return buildEnv(t, envOptions{dir: disk}, replies...), disk
}

// assert507 checks a full disk's answer: 507, Retry-After and a JSON
// detail that says the disk is full.
func assert507(t *testing.T, what string, res *http.Response) {
	t.Helper()
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var body struct {
		Detail string `json:"detail"`
	}
	if res.StatusCode != 507 || json.Unmarshal(b, &body) != nil || !strings.Contains(body.Detail, "disk is full") {
		t.Fatalf("%s on a full disk: %d %s; want 507 with a detail saying the disk is full", what, res.StatusCode, b)
	}
	if res.Header.Get("Retry-After") == "" {
		t.Fatalf("%s on a full disk: no Retry-After", what)
	}
}

func (e *env) raw(method, path, body, contentType string) *http.Response {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.http.URL+path, strings.NewReader(body))
	req.Header.Set("X-Session-API-Key", testKey)
	req.Header.Set("Content-Type", contentType)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// TestFullDiskAppendIs507: a message sent while the sandbox's disk is full
// is answered 507 with Retry-After (it was 500 with the log file's path),
// the event log stays well formed, and once space is freed the same
// message is stored and the log reopens intact (issue 11, defect 7).
func TestFullDiskAppendIs507(t *testing.T) {
	e, disk := newEnvOnDisk(t)
	id := e.create(nil)
	msg, _ := json.Marshal(userMessage("sent on a full disk", false))
	free := diskfulltest.Fill(t, disk)
	assert507(t, "send message", e.raw("POST", "/api/conversations/"+id+"/events", string(msg), "application/json"))
	free()
	if r := e.call("POST", "/api/conversations/"+id+"/events", userMessage("sent on a full disk", false)); r.status != 200 {
		t.Fatalf("send after freeing space: %d %s", r.status, r.body)
	}
	before := signature(e.allEvents(id))
	e.restart()
	after := signature(e.allEvents(id))
	if strings.Join(before, ",") != strings.Join(after, ",") {
		t.Fatalf("events changed across a restart:\n before %v\n after  %v", before, after)
	}
	users := 0
	for _, s := range after {
		if s == "MessageEvent:user" {
			users++
		}
	}
	if users != 1 {
		t.Fatalf("%d user messages stored, want the one sent after freeing space: %v", users, after)
	}
}

// TestFullDiskUploadIs507: an upload to a workspace whose disk is full is
// answered 507 with Retry-After (it was 500), leaves no file behind, and
// works once space is freed.
func TestFullDiskUploadIs507(t *testing.T) {
	e, disk := newEnvOnDisk(t)
	e.create(nil)
	path := filepath.Join(e.work, "up", "data.bin")
	body := "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"data.bin\"\r\n\r\n" + strings.Repeat("x", 256<<10) + "\r\n--B--\r\n"
	free := diskfulltest.Fill(t, disk)
	assert507(t, "upload", e.raw("POST", "/api/file/upload?path="+path, body, "multipart/form-data; boundary=B"))
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 0 {
		t.Fatalf("files left by the failed upload: %v", ents)
	}
	free()
	if r := e.rawRequest("POST", "/api/file/upload?path="+path, body, "multipart/form-data; boundary=B"); r.status != 200 {
		t.Fatalf("upload after freeing space: %d %s", r.status, r.body)
	}
}

// TestFullDiskDuringARunEndsItInError: when the disk fills while the agent
// runs, the run ends and the conversation reads error, even though not even
// the ConversationErrorEvent can be stored (it read running, though nothing
// ran); once space is freed a new message runs again and the log reopens
// intact.
func TestFullDiskDuringARunEndsItInError(t *testing.T) {
	filled := make(chan struct{})
	asked := make(chan struct{}, 10)
	e, disk := newEnvOnDisk(t,
		llmtest.Reply{Respond: func(*llmtest.Request) llmtest.Reply {
			asked <- struct{}{}
			<-filled
			return llmtest.Reply{Text: "answered on a full disk"}
		}},
		llmtest.Reply{Text: "answered after space was freed"})
	id := e.create(nil)
	if r := e.call("POST", "/api/conversations/"+id+"/events", userMessage("start", true)); r.status != 200 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	<-asked
	// The file system allocates whole pages: leave less than any event
	// needs in the log's last page, so that on the full disk no append
	// fits (padding with messages that do not start a run).
	logPath := filepath.Join(e.cfg.ConversationsDir, strings.ReplaceAll(id, "-", ""), "events.log")
	size := func() int64 {
		st, err := os.Stat(logPath)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	pad := func(n int64) {
		if r := e.call("POST", "/api/conversations/"+id+"/events", userMessage(strings.Repeat("p", int(n)), false)); r.status != 200 {
			t.Fatalf("pad: %d %s", r.status, r.body)
		}
	}
	const page, slack = 4096, 24
	for try := 0; page-size()%page > 96; try++ {
		if try == 5 {
			t.Fatalf("could not pad the log to a page boundary: %d bytes", size())
		}
		before := size()
		pad(1)
		overhead := size() - before - 1
		grow := (page - slack - size()%page + page) % page
		if grow < overhead+1 {
			grow += page
		}
		pad(grow - overhead)
	}
	free := diskfulltest.Fill(t, disk)
	close(filled)
	e.waitStatus(id, "error")
	free()
	if r := e.call("POST", "/api/conversations/"+id+"/events", userMessage("again", true)); r.status != 200 {
		t.Fatalf("send after freeing space: %d %s", r.status, r.body)
	}
	e.waitStatus(id, "finished")
	before := signature(e.allEvents(id))
	e.restart()
	if after := signature(e.allEvents(id)); strings.Join(before, ",") != strings.Join(after, ",") {
		t.Fatalf("events changed across a restart:\n before %v\n after  %v", before, after)
	}
}
