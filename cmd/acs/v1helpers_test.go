package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/shared/v1wire"
)

// resp is an HTTP answer.
type resp struct {
	t      testing.TB
	status int
	header http.Header
	body   []byte
}

// into decodes a 2xx JSON answer.
func (r resp) into(v any) resp {
	r.t.Helper()
	if r.status/100 != 2 {
		r.t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		r.t.Fatalf("decode %s: %v", r.body, err)
	}
	return r
}

// want fails unless the status is code.
func (r resp) want(code int) resp {
	r.t.Helper()
	if r.status != code {
		r.t.Fatalf("HTTP %d, want %d: %s", r.status, code, r.body)
	}
	return r
}

// do sends a request with the API key (body: nil, a string, or JSON-encoded).
func (s *acsServe) do(method, path string, body any, key string) resp {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{t: s.t, status: res.StatusCode, header: res.Header, body: b}
}

// admin sends a request as the admin.
func (s *acsServe) admin(method, path string, body any) resp { return s.do(method, path, body, apiKey) }

// The V1 bodies as the tests read them: the client's (v1wire) types.
type (
	taskInfo    = v1wire.StartTask
	convInfo    = v1wire.Conversation
	sandboxInfo = v1wire.Sandbox
)

// api is a client of the server with key; the status of its last answer
// is s.status.
func (s *acsServe) api(key string) *client.Client {
	return client.New(s.url, key, client.WithHTTPClient(&http.Client{Transport: s.status}))
}

// lastStatus records the status of the last answer through it.
type lastStatus struct {
	mu   sync.Mutex
	code int
}

func (l *lastStatus) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		l.mu.Lock()
		l.code = res.StatusCode
		l.mu.Unlock()
	}
	return res, err
}

// ok fails unless err is nil and the last answer's status was code.
func (s *acsServe) ok(err error, code int, what string) {
	s.t.Helper()
	if err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
	s.status.mu.Lock()
	got := s.status.code
	s.status.mu.Unlock()
	if got != code {
		s.t.Fatalf("%s: HTTP %d, want %d", what, got, code)
	}
}

// startBody is a start request given as a map or JSON text, decoded as the
// server decodes it.
func startBody(t testing.TB, body any) *v1wire.StartRequest {
	t.Helper()
	raw, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	var req v1wire.StartRequest
	if err := strictjson.Unmarshal([]byte(raw), &req); err != nil {
		t.Fatalf("start request %s: %v", raw, err)
	}
	return &req
}

// start submits a start request and waits for READY or ERROR.
func (s *acsServe) start(key string, body any) taskInfo {
	s.t.Helper()
	tk, err := s.api(key).StartConversation(s.t.Context(), startBody(s.t, body))
	if err != nil {
		s.t.Fatalf("start: %v", err)
	}
	return s.waitTask(key, tk.ID)
}

// waitTask polls a start task until READY or ERROR.
func (s *acsServe) waitTask(key, id string) taskInfo {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.t.Context(), 90*time.Second)
	defer cancel()
	tk, err := s.api(key).WaitStartTask(ctx, id, 100*time.Millisecond)
	if err != nil && !errors.Is(err, client.ErrStartFailed) {
		s.t.Fatalf("start task %s did not finish: %v\n%s", id, err, s.log)
	}
	return tk
}

// conv fetches one conversation (nil when missing).
func (s *acsServe) conv(key, id string) *convInfo {
	s.t.Helper()
	cs, err := s.api(key).GetConversations(s.t.Context(), id)
	if err != nil || len(cs) != 1 {
		s.t.Fatalf("get conversation %s: %v %v", id, cs, err)
	}
	return cs[0]
}

func (s *acsServe) sandbox(key, id string) *sandboxInfo {
	s.t.Helper()
	sbs, err := s.api(key).GetSandboxes(s.t.Context(), id)
	if err != nil || len(sbs) != 1 {
		s.t.Fatalf("get sandbox %s: %v %v", id, sbs, err)
	}
	return sbs[0]
}

// waitConv polls a conversation until ok.
func (s *acsServe) waitConv(key, id, what string, ok func(*convInfo) bool) *convInfo {
	s.t.Helper()
	var c *convInfo
	if !testwait.Until(60*time.Second, func() bool { c = s.conv(key, id); return c != nil && ok(c) }) {
		s.t.Fatalf("conversation %s never reached %s (last %+v)\n%s", id, what, c, s.log)
	}
	return c
}

func msg(text string) map[string]any {
	return map[string]any{"role": "user", "content": []map[string]any{{"type": "text", "text": text}}, "run": true}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
