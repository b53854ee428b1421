package lambdatest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/internal/testwait"
)

// StartRuntimeAPI runs `acs runtime-api` (process sandboxes under a
// temporary root) with key, as the functions of a deployment reach their
// sandboxes, and returns its URL and the sandboxes' root. It is stopped
// when the test ends (SIGTERM, SIGKILL after 20 s); its output is logged
// when the test failed. It fails t when the server does not listen within
// 30 s.
func StartRuntimeAPI(t testing.TB, key string) (url, root string) {
	t.Helper()
	dir := t.TempDir()
	root, addrFile := filepath.Join(dir, "sandboxes"), filepath.Join(dir, "addr")
	cmd := exec.Command(testbin.ACS(t), "runtime-api", "--addr", "127.0.0.1:0", "--addr-file", addrFile, "--root", root)
	cmd.Env = append(os.Environ(), "ACS_RUNTIME_API_KEY="+key)
	log := &testwait.Buffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("acs runtime-api:\n%s", log.String())
		}
	})
	if !testwait.Until(30*time.Second, func() bool {
		b, err := os.ReadFile(addrFile)
		url = "http://" + strings.TrimSpace(string(b))
		return err == nil && len(b) > 0
	}) {
		t.Fatalf("acs runtime-api did not start:\n%s", log.String())
	}
	return url, root
}

// Answer is an HTTP answer as Call read it.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Call sends method baseURL+path (through a Gateway, say) with body
// encoded as JSON (none when nil) and key as its bearer credential (none
// when "") and returns the answer. It fails t when the request cannot be
// sent or gets no answer within 60 s.
func Call(t testing.TB, baseURL, method, path string, body any, key string) Answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, baseURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return Answer{Status: res.StatusCode, Header: res.Header, Body: b}
}
