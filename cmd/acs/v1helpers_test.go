package main_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testwait"
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

// taskInfo is a start task as the tests read it.
type taskInfo struct {
	ID                string  `json:"id"`
	Status            string  `json:"status"`
	Detail            *string `json:"detail"`
	AppConversationID *string `json:"app_conversation_id"`
	SandboxID         *string `json:"sandbox_id"`
	Placement         *string `json:"placement"`
	Request           map[string]any
	Steps             []struct {
		Status string  `json:"status"`
		Detail *string `json:"detail"`
	} `json:"steps"`
}

// start submits a start request and waits for READY or ERROR.
func (s *acsServe) start(key string, body any) taskInfo {
	s.t.Helper()
	var tk taskInfo
	s.do("POST", "/api/v1/app-conversations", body, key).into(&tk)
	return s.waitTask(key, tk.ID)
}

// waitTask polls a start task until READY or ERROR.
func (s *acsServe) waitTask(key, id string) taskInfo {
	s.t.Helper()
	var tk taskInfo
	if !testwait.Until(90*time.Second, func() bool {
		var ts []*taskInfo
		s.do("GET", "/api/v1/app-conversations/start-tasks?ids="+id, nil, key).into(&ts)
		if ts[0] != nil {
			tk = *ts[0]
		}
		return ts[0] != nil && (ts[0].Status == "READY" || ts[0].Status == "ERROR")
	}) {
		s.t.Fatalf("start task %s did not finish:\n%s", id, s.log)
	}
	return tk
}

// convInfo is an app conversation as the tests read it.
type convInfo struct {
	ID                 string  `json:"id"`
	SandboxID          string  `json:"sandbox_id"`
	SandboxStatus      string  `json:"sandbox_status"`
	ExecutionStatus    *string `json:"execution_status"`
	ConversationURL    *string `json:"conversation_url"`
	SessionAPIKey      *string `json:"session_api_key"`
	Title              *string `json:"title"`
	SelectedRepository *string `json:"selected_repository"`
	SelectedBranch     *string `json:"selected_branch"`
	Public             *bool   `json:"public"`
	ParentID           *string `json:"parent_conversation_id"`
	LLMModel           *string `json:"llm_model"`
}

// conv fetches one conversation (nil when missing).
func (s *acsServe) conv(key, id string) *convInfo {
	s.t.Helper()
	var cs []*convInfo
	s.do("GET", "/api/v1/app-conversations?ids="+id, nil, key).into(&cs)
	return cs[0]
}

// sandboxInfo is a sandbox as the tests read it.
type sandboxInfo struct {
	ID            string  `json:"id"`
	Status        string  `json:"status"`
	SessionAPIKey *string `json:"session_api_key"`
	Conversations int     `json:"conversation_count"`
	ExposedURLs   []struct {
		Name string `json:"name"`
		URL  string `json:"url"`
	} `json:"exposed_urls"`
}

func (s *acsServe) sandbox(key, id string) *sandboxInfo {
	s.t.Helper()
	var sbs []*sandboxInfo
	s.do("GET", "/api/v1/sandboxes?id="+id, nil, key).into(&sbs)
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
