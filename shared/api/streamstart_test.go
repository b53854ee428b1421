package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/services"
	"github.com/acs-project/acs/shared/startflow"
	"github.com/acs-project/acs/shared/v1wire"
)

type streamPollKey struct{}

// gatedStore holds each start-task read of a stream-start request (its
// polls) until the test releases one through poll; other reads pass.
type gatedStore struct {
	acs.Store
	poll chan struct{}
}

func (g gatedStore) GetStartTask(ctx context.Context, id string) (acs.StartTask, error) {
	if ctx.Value(streamPollKey{}) != nil {
		select {
		case <-g.poll:
		case <-ctx.Done():
			return acs.StartTask{}, ctx.Err()
		}
	}
	return g.Store.GetStartTask(ctx, id)
}

// TestStreamStartStreamsEveryStatus: a real start worker runs several steps
// between two polls of a stream-start answer (the polls are held until the
// worker has moved on), and the stream still holds the task at every status
// exactly once, in order, each as GET start-tasks showed it at that status.
func TestStreamStartStreamsEveryStatus(t *testing.T) {
	store := openStore(t)
	queue := openQueue(t)
	rt := openRuntime(t, testbin.ACS(t))
	ctx := context.Background()
	if err := store.CreateUser(ctx, acs.User{ID: "alice", Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateAPIKey(ctx, acs.APIKey{ID: "alice-k", UserID: "alice", Hash: acs.HashKey(aliceKey)}); err != nil {
		t.Fatal(err)
	}
	model := llmtest.New()
	t.Cleanup(model.Close)
	cfg := llm.DefaultConfig()
	cfg.Model, cfg.BaseURL, cfg.NumRetries = "test", &model.URL, 0

	srv := httptest.NewUnstartedServer(nil)
	flow := startflow.Config{LLM: cfg, StartupTimeout: 60 * time.Second, Sandboxes: sandboxes.Config{PollInterval: 50 * time.Millisecond,
		Specs: []acs.SandboxSpec{{ID: "acs-local"}}, WebhookBaseURL: "http://" + srv.Listener.Addr().String() + "/api/v1/webhooks"}}
	sealer := sealbox.FromPassphrase("stream start passphrase")
	gate := make(chan struct{})
	h := api.New(api.Deps{Services: services.Build(services.Adapters{Store: gatedStore{Store: store, poll: gate},
		Queue: queue, Runtime: rt, Flow: flow, Sealer: sealer})}).Handler()
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/stream-start") {
			r = r.WithContext(context.WithValue(r.Context(), streamPollKey{}, true))
		}
		h.ServeHTTP(w, r)
	})
	srv.Start()
	t.Cleanup(srv.Close)

	// The worker uses the store directly (its reads are never held) and
	// reports each step it ran.
	stepped := make(chan struct{}, 1)
	w := startflow.NewWorker(store, queue, rt, sealer, flow)
	w.AfterStep = func(context.Context, acs.StartTaskStatus, acs.Delivery) {
		select {
		case stepped <- struct{}{}:
		default:
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { w.Run(wctx, 1); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/app-conversations/stream-start", strings.NewReader(`{"title":"streamed"}`))
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("stream-start: %d", res.StatusCode)
	}
	dec := json.NewDecoder(res.Body)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		t.Fatalf("the stream does not open an array: %v %v", tok, err)
	}
	var first v1wire.StartTask
	if err := dec.Decode(&first); err != nil {
		t.Fatal(err)
	}
	rest := make(chan []v1wire.StartTask, 1)
	go func() {
		var items []v1wire.StartTask
		for dec.More() {
			var it v1wire.StartTask
			if err := dec.Decode(&it); err != nil {
				t.Errorf("stream item: %v", err)
				break
			}
			items = append(items, it)
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
			t.Errorf("the stream does not close its array: %v %v", tok, err)
		}
		rest <- items
	}()

	// waitFor waits until the worker has taken the task to a status
	// satisfying ok (or ended it).
	rank := map[acs.StartTaskStatus]int{}
	for i, s := range []acs.StartTaskStatus{acs.TaskWorking, acs.TaskWaitingForSandbox, acs.TaskPreparingRepository,
		acs.TaskRunningSetupScript, acs.TaskSettingUpGitHooks, acs.TaskSettingUpSkills, acs.TaskStartingConversation, acs.TaskReady} {
		rank[s] = i
	}
	waitFor := func(ok func(acs.StartTaskStatus) bool) {
		t.Helper()
		give := time.After(2 * time.Minute) // a bound against hanging, not a timing assertion
		for {
			tk, err := store.GetStartTask(ctx, first.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ok(tk.Status) || tk.Status.Done() {
				return
			}
			select {
			case <-stepped:
			case <-give:
				t.Fatalf("the start stays %s", tk.Status)
			}
		}
	}
	// First poll: once the worker is past WAITING_FOR_SANDBOX. Second: at
	// READY. Each sees several new steps.
	waitFor(func(s acs.StartTaskStatus) bool { return rank[s] >= rank[acs.TaskPreparingRepository] })
	gate <- struct{}{}
	waitFor(func(acs.StartTaskStatus) bool { return false })
	var items []v1wire.StartTask
	for items == nil {
		select {
		case gate <- struct{}{}:
		case items = <-rest:
		}
	}
	streamed := append([]v1wire.StartTask{first}, items...)

	checkEveryStatus(t, streamed)

	// Each item is the task as it was at its status: the steps so far (the
	// current one without the detail recorded when it ends), updated when
	// the status began, and the fields set by then. The last is the task
	// as GET start-tasks shows it.
	var final []*v1wire.StartTask
	e := &env{t: t, srv: srv}
	e.as(aliceKey, "GET", "/api/v1/app-conversations/start-tasks?ids="+first.ID, "").json(t, &final)
	if len(final) != 1 || final[0] == nil {
		t.Fatalf("start task: %+v", final)
	}
	fin := *final[0]
	for i, it := range streamed {
		at := it.Status
		if it.ID != fin.ID || len(it.Steps) != i+1 {
			t.Fatalf("%s: id %s, %d steps", at, it.ID, len(it.Steps))
		}
		for j, s := range it.Steps {
			f := fin.Steps[j]
			if s.Status != f.Status || !s.StartedAt.Equal(f.StartedAt.Time) {
				t.Errorf("%s: step %d is %+v, finally %+v", at, j, s, f)
			}
			if j < i && !reflect.DeepEqual(s.Detail, f.Detail) {
				t.Errorf("%s: step %s detail %v, finally %v", at, s.Status, s.Detail, f.Detail)
			}
		}
		if it.Steps[i].Detail != nil && at != "READY" {
			t.Errorf("%s: its own step already has a detail: %q", at, *it.Steps[i].Detail)
		}
		if !it.UpdatedAt.Equal(it.Steps[i].StartedAt.Time) {
			t.Errorf("%s: updated_at %s, step began %s", at, it.UpdatedAt, it.Steps[i].StartedAt)
		}
		if it.Detail != nil {
			t.Errorf("%s: detail %q", at, *it.Detail)
		}
		if (it.SandboxID != nil) != (i >= 1) || (it.Placement != nil) != (i >= 1) {
			t.Errorf("%s: sandbox_id %v, placement %v", at, it.SandboxID, it.Placement)
		}
		if it.SandboxID != nil && *it.SandboxID != *fin.SandboxID {
			t.Errorf("%s: sandbox_id %s, finally %s", at, *it.SandboxID, *fin.SandboxID)
		}
		if (it.AgentServerURL != nil) != (i >= 2) {
			t.Errorf("%s: agent_server_url %v", at, it.AgentServerURL)
		}
		if (it.AppConversationID != nil) != (at == "READY") {
			t.Errorf("%s: app_conversation_id %v", at, it.AppConversationID)
		}
	}
	last, _ := json.Marshal(streamed[len(streamed)-1])
	fb, _ := json.Marshal(fin)
	if string(last) != string(fb) {
		t.Errorf("the READY item\n%s\nis not the task\n%s", last, fb)
	}
}

// A start on a running sandbox whose agent server answered the worker is
// placed as it is submitted: POST answers it READY (no poll needed), and
// stream-start still streams each of its statuses once, in order, ending
// with the task as GET start-tasks shows it.
func TestAReusedStartIsAnsweredReadyAndStreamsEveryStatus(t *testing.T) {
	e := newEnv(t, true)
	if r := e.as(aliceKey, "POST", "/api/v1/settings", `{"sandbox_grouping_strategy":"ADD_TO_ANY"}`); r.status != 200 {
		t.Fatalf("settings: %d %s", r.status, r.body)
	}
	ready := func(tk v1wire.StartTask) v1wire.StartTask {
		t.Helper()
		for give := time.Now().Add(time.Minute); tk.Status != "READY"; {
			if tk.Status == "ERROR" || time.Now().After(give) {
				t.Fatalf("start: %s %v", tk.Status, tk.Detail)
			}
			var got []*v1wire.StartTask
			e.as(aliceKey, "GET", "/api/v1/app-conversations/start-tasks?ids="+tk.ID, "").json(t, &got)
			tk = *got[0]
		}
		return tk
	}
	var first v1wire.StartTask
	e.as(aliceKey, "POST", "/api/v1/app-conversations", `{}`).json(t, &first)
	if first.Status != "WORKING" {
		t.Fatalf("the first start, which makes a sandbox, answered %s", first.Status)
	}
	first = ready(first)

	var reused v1wire.StartTask
	e.as(aliceKey, "POST", "/api/v1/app-conversations", `{}`).json(t, &reused)
	if reused.Status != "READY" || reused.SandboxID == nil || *reused.SandboxID != *first.SandboxID || reused.AppConversationID == nil {
		t.Fatalf("a reused start answered %s on %v (app_conversation_id %v), want READY on %s", reused.Status, reused.SandboxID, reused.AppConversationID, *first.SandboxID)
	}

	var streamed []v1wire.StartTask
	e.as(aliceKey, "POST", "/api/v1/app-conversations/stream-start", `{}`).json(t, &streamed)
	checkEveryStatus(t, streamed)
	for i, it := range streamed {
		if len(it.Steps) != i+1 || (it.SandboxID != nil) != (i >= 1) || (it.AgentServerURL != nil) != (i >= 2) || (it.AppConversationID != nil) != (it.Status == "READY") {
			t.Errorf("%s: %d steps, sandbox_id %v, agent_server_url %v, app_conversation_id %v", it.Status, len(it.Steps), it.SandboxID, it.AgentServerURL, it.AppConversationID)
		}
	}
	var final []*v1wire.StartTask
	e.as(aliceKey, "GET", "/api/v1/app-conversations/start-tasks?ids="+streamed[0].ID, "").json(t, &final)
	last, _ := json.Marshal(streamed[len(streamed)-1])
	fb, _ := json.Marshal(final[0])
	if string(last) != string(fb) {
		t.Errorf("the READY item\n%s\nis not the task\n%s", last, fb)
	}
}

// checkEveryStatus checks that a stream holds each start status once, in
// order.
func checkEveryStatus(t *testing.T, streamed []v1wire.StartTask) {
	t.Helper()
	var got []string
	for _, it := range streamed {
		got = append(got, it.Status)
	}
	want := []string{"WORKING", "WAITING_FOR_SANDBOX", "PREPARING_REPOSITORY", "RUNNING_SETUP_SCRIPT",
		"SETTING_UP_GIT_HOOKS", "SETTING_UP_SKILLS", "STARTING_CONVERSATION", "READY"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("streamed statuses %v, want %v", got, want)
	}
}
