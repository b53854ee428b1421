package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestStartRefusesStoredSecretInInitialMessage: like send-message, a start
// request (POST and stream-start) whose initial message holds the value of
// one of the user's stored secrets is refused with 422 at the text, and no
// task is created. A stored secret overridden by a request secret of the
// same name is not the conversation's, and another user's secrets do not
// count.
func TestStartRefusesStoredSecretInInitialMessage(t *testing.T) {
	e := newEnv(t, false)
	for _, s := range []string{`{"name":"GH_TOKEN","value":"ghp-stored-0123"}`, `{"name":"SHORT","value":"abc"}`} {
		if r := e.as(aliceKey, "POST", "/api/v1/secrets", s); r.status != 201 {
			t.Fatalf("store secret %s: %d %s", s, r.status, r.body)
		}
	}
	msg := func(texts ...string) string {
		var items []string
		for _, x := range texts {
			items = append(items, `{"type":"text","text":"`+x+`"}`)
		}
		return `"initial_message":{"role":"user","content":[` + strings.Join(items, ",") + `],"run":false}`
	}
	cases := []struct {
		name, key, path, body string
		loc                   string // "" when the start is accepted
	}{
		{"stored secret in message", aliceKey, "/api/v1/app-conversations",
			`{` + msg("push with ghp-stored-0123 please") + `}`, "body.initial_message.content[0].text"},
		{"stored secret in second item", aliceKey, "/api/v1/app-conversations",
			`{` + msg("hello", "token: ghp-stored-0123") + `}`, "body.initial_message.content[1].text"},
		{"stream-start", aliceKey, "/api/v1/app-conversations/stream-start",
			`{` + msg("ghp-stored-0123") + `}`, "body.initial_message.content[0].text"},
		{"with an unrelated request secret", aliceKey, "/api/v1/app-conversations",
			`{"secrets":{"OTHER":"other-value"},` + msg("ghp-stored-0123") + `}`, "body.initial_message.content[0].text"},
		{"overridden by a request secret", aliceKey, "/api/v1/app-conversations",
			`{"secrets":{"GH_TOKEN":"ghp-request-9876"},` + msg("the old ghp-stored-0123") + `}`, ""},
		{"no secret in message", aliceKey, "/api/v1/app-conversations", `{` + msg("refer to $GH_TOKEN") + `}`, ""},
		{"value under 4 characters", aliceKey, "/api/v1/app-conversations", `{` + msg("abc") + `}`, ""},
		{"another user's secret", bobKey, "/api/v1/app-conversations", `{` + msg("ghp-stored-0123") + `}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := taskCount(t, e, tc.key)
			r := startOnce(t, e, tc.key, tc.path, tc.body)
			if tc.loc == "" {
				if r.status != 200 {
					t.Fatalf("start refused: %d %s", r.status, r.body)
				}
				return
			}
			assert422(t, r, tc.loc)
			if strings.Contains(string(r.body), "ghp-stored") {
				t.Errorf("the refusal repeats the secret value: %s", r.body)
			}
			if !strings.Contains(string(r.body), "GH_TOKEN") {
				t.Errorf("the refusal does not name the secret: %s", r.body)
			}
			if after := taskCount(t, e, tc.key); after != before {
				t.Errorf("a refused start created a task: %s tasks, then %s", before, after)
			}
		})
	}
}

// startOnce posts a start request; an accepted one's body is not read (a
// stream-start answer goes on until the task is READY, and this API has no
// worker).
func startOnce(t *testing.T, e *env, key, path, body string) resp {
	t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	r := resp{status: res.StatusCode, header: res.Header}
	if res.StatusCode != 200 {
		r.body, _ = io.ReadAll(res.Body)
	}
	return r
}

func taskCount(t *testing.T, e *env, key string) string {
	t.Helper()
	r := e.as(key, "GET", "/api/v1/app-conversations/start-tasks/count", "")
	if r.status != 200 {
		t.Fatalf("count start tasks: %d %s", r.status, r.body)
	}
	return string(r.body)
}
