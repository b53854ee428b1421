package api

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/golden"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/conversations"
)

// TestAgentErrGolden pins what the handlers answer (status, headers, body)
// for the errors that are not the service's own: an agent server's
// failures as send-message and the pending messages pass them on, the
// review routes' refusals, a full message queue, a file too large to read,
// a path no route serves and a panic. testdata/agent_errors.golden is the
// record (go test -run TestAgentErrGolden -update rewrites it).
func TestAgentErrGolden(t *testing.T) {
	agentErr := func(status int, detail string) error {
		return &conversations.AgentError{Err: &client.HTTPError{Status: status, Detail: detail}}
	}
	unreachable := &conversations.AgentError{Err: fmt.Errorf("post events: %w", errors.New("dial tcp 10.0.0.7:8000: connect: connection refused"))}
	conv := acs.Conversation{WorkingDir: "/data/sandboxes/sb1/workspace/app"}
	sb := acs.Sandbox{WorkingDir: "/data/sandboxes/sb1/workspace"}
	file := reviewPath{param: "file_path", abs: "/data/sandboxes/sb1/workspace/app/docs/a&b<c>.txt", rel: "app/docs/a&b<c>.txt"}
	review := func(status int, detail string) func(*httptest.ResponseRecorder) {
		return func(w *httptest.ResponseRecorder) {
			writeReviewErr(w, &client.HTTPError{Status: status, Detail: detail}, file, conv, sb)
		}
	}
	convErr := func(err error) func(*httptest.ResponseRecorder) {
		return func(w *httptest.ResponseRecorder) { writeConvErr(w, err) }
	}
	cases := []struct {
		name  string
		write func(*httptest.ResponseRecorder)
	}{
		// The conversation service's errors (send-message, pending messages).
		{"conv/queue-full", convErr(fmt.Errorf("add pending message: %w", conversations.ErrQueueFull))},
		{"conv/secret-in-content", convErr(strictjson.Errors{{Loc: []any{"body", "content", 0, "text"}, Msg: "the message holds the value of secret NPM_TOKEN", Type: "value_error"}})},
		{"conv/not-found", convErr(fmt.Errorf("Conversation not found: %s: %w", "c0ffee", acs.ErrNotFound))},
		{"conv/agent-422", convErr(agentErr(422, `[{"loc":["body","content"],"msg":"a <b> & c","type":"value_error"}]`))},
		{"conv/agent-507", convErr(agentErr(507, "No space left on device"))},
		{"conv/agent-500", convErr(agentErr(500, "Internal Server Error"))},
		{"conv/agent-401", convErr(agentErr(401, "Unauthorized"))},
		{"conv/agent-404", convErr(agentErr(404, "Conversation not found"))},
		{"conv/agent-unreachable", convErr(unreachable)},
		// The review routes' reads (file, git changes and diff).
		{"review/404", review(404, "File not found: /data/sandboxes/sb1/workspace/app/docs/a&b<c>.txt")},
		{"review/403", review(403, "Forbidden: /data/sandboxes/sb1/workspace/app/docs leads outside")},
		{"review/422-list", review(422, `[{"loc":["query","path"],"msg":"Value error, path too long: /data/sandboxes/sb1/workspace/app/x","type":"value_error"}]`)},
		{"review/422-plain", review(422, "bad path /data/sandboxes/sb1/workspace/app/x")},
		{"review/400-directory", review(400, "Path is a directory: /data/sandboxes/sb1/workspace/app/docs")},
		{"review/400-not-regular", review(400, "Not a regular file: /data/sandboxes/sb1/workspace/app/fifo")},
		{"review/400-other", review(400, "permission denied: /data/sandboxes/sb1/workspace/app/secret")},
		{"review/413", review(413, "Too large: /data/sandboxes/sb1/workspace/app/big.bin: file exceeds 1000 bytes")},
		{"review/409", review(409, "not a git repository: /data/sandboxes/sb1/workspace/app")},
		{"review/500", review(500, "git failed in /data/sandboxes/sb1/workspace/app: exit status 128")},
		{"review/401", review(401, "Unauthorized")},
		{"review/unreachable", func(w *httptest.ResponseRecorder) {
			writeReviewErr(w, errors.New("dial tcp 10.0.0.7:8000: connect: connection refused"), file, conv, sb)
		}},
		{"review/file-too-large", func(w *httptest.ResponseRecorder) { writeFileTooLarge(w, file) }},
		// The mux's own answers.
		{"mux/no-route", func(w *httptest.ResponseRecorder) {
			writeNoRoute(w, httptest.NewRequest("GET", "/api/v1/nothing", nil))
		}},
		{"mux/panic", func(w *httptest.ResponseRecorder) { writePanic(w) }},
	}
	var b strings.Builder
	for _, tc := range cases {
		w := httptest.NewRecorder()
		tc.write(w)
		fmt.Fprintf(&b, "== %s\nHTTP %d\n", tc.name, w.Code)
		var names []string
		for k := range w.Header() {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(w.Header()[k], ", "))
		}
		fmt.Fprintf(&b, "%s\n\n", w.Body.String())
	}
	golden.Check(t, filepath.Join("testdata", "agent_errors.golden"), []byte(b.String()), *updateGolden)
}
