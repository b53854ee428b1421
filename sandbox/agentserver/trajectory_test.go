package agentserver_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

// unzipAll returns the entries of a zip archive by name.
func unzipAll(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("not a zip (%d bytes): %v", len(b), err)
	}
	out := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("read %s: %v", f.Name, err)
		}
		out[f.Name] = data
	}
	return out
}

// TestDownloadTrajectory: the zip holds the conversation's meta, state and
// every event in order, with its secrets masked, and survives a restart.
func TestDownloadTrajectory(t *testing.T) {
	const token = "tok-traj-5e6f7a8b9c"
	term := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{"command": `echo "val:$TRAJ_TOKEN"`}}}}
	finish := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "done"}}}}
	e := newEnv(t, term, finish)
	id := e.create(map[string]any{"secrets": map[string]any{"TRAJ_TOKEN": token}}, "terminal")
	if r := e.call("POST", "/api/conversations/"+id+"/events", userMessage("print "+token, true)); r.status != 200 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	e.waitStatus(id, "finished")
	evs := e.allEvents(id)

	check := func(when string) {
		t.Helper()
		r := e.call("GET", "/api/file/download-trajectory/"+id, nil)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", when, r.status, r.body)
		}
		files := unzipAll(t, r.body)
		var names []string
		for n, b := range files {
			names = append(names, n)
			if !json.Valid(b) {
				t.Errorf("%s: %s is not JSON: %s", when, n, b)
			}
			for _, secret := range []string{token, "sk-secret-llm-key"} {
				if bytes.Contains(b, []byte(secret)) {
					t.Errorf("%s: %s holds secret %q", when, n, secret)
				}
			}
		}
		sort.Strings(names)
		var meta struct {
			ID      string `json:"id"`
			Request struct {
				Agent struct {
					LLM struct {
						APIKey string `json:"api_key"`
						Model  string `json:"model"`
					} `json:"llm"`
				} `json:"agent"`
				Secrets map[string]struct {
					Value string `json:"value"`
				} `json:"secrets"`
			} `json:"request"`
		}
		if err := json.Unmarshal(files["meta.json"], &meta); err != nil {
			t.Fatalf("%s: meta.json: %v (entries %v)", when, err, names)
		}
		if strings.ReplaceAll(meta.ID, "-", "") != strings.ReplaceAll(id, "-", "") || meta.Request.Agent.LLM.Model != "openai/test-model" ||
			meta.Request.Agent.LLM.APIKey != "**********" || meta.Request.Secrets["TRAJ_TOKEN"].Value != "**********" {
			t.Fatalf("%s: meta.json = %s", when, files["meta.json"])
		}
		var st struct {
			ExecutionStatus string `json:"execution_status"`
		}
		if err := json.Unmarshal(files["state.json"], &st); err != nil || st.ExecutionStatus != "finished" {
			t.Fatalf("%s: state.json = %s (%v)", when, files["state.json"], err)
		}
		eventName := regexp.MustCompile(`^events/event-(\d{5})-[0-9a-zA-Z_-]*\.json$`)
		var got []string
		for _, n := range names {
			if eventName.MatchString(n) {
				got = append(got, n)
			} else if n != "meta.json" && n != "state.json" {
				t.Errorf("%s: unexpected entry %s", when, n)
			}
		}
		if len(got) != len(evs) {
			t.Fatalf("%s: %d event entries, the conversation has %d events", when, len(got), len(evs))
		}
		all := []byte{}
		for i, n := range got {
			var ev struct{ ID string }
			if err := json.Unmarshal(files[n], &ev); err != nil || ev.ID != evs[i]["id"] {
				t.Fatalf("%s: entry %s holds event %q, want %v (%v)", when, n, ev.ID, evs[i]["id"], err)
			}
			all = append(all, files[n]...)
		}
		for _, want := range []string{"val:<secret-hidden>", "print <secret-hidden>"} {
			if !bytes.Contains(all, []byte(want)) {
				t.Errorf("%s: events lack %q", when, want)
			}
		}
	}
	check("live")
	e.restart()
	check("after a restart")
}

func TestDownloadTrajectoryErrors(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, path, key string
		status          int
	}{
		{"unknown", "/api/file/download-trajectory/7d4b1e7c-1f0a-4a57-9e61-2a8c4f3b9d10", testKey, 404},
		{"unknown hex", "/api/file/download-trajectory/7d4b1e7c1f0a4a579e612a8c4f3b9d10", testKey, 404},
		{"not a uuid", "/api/file/download-trajectory/nope", testKey, 422},
		{"no key", "/api/file/download-trajectory/7d4b1e7c-1f0a-4a57-9e61-2a8c4f3b9d10", "", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("GET", tc.path, nil, tc.key)
			var body struct{ Detail any }
			if r.status != tc.status || json.Unmarshal(r.body, &body) != nil || body.Detail == nil {
				t.Fatalf("%d %s, want %d with a detail", r.status, r.body, tc.status)
			}
		})
	}
}
