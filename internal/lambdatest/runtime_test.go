package lambdatest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// echoPkg is the tiny real Lambda function the tests run.
const echoPkg = "github.com/acs-project/acs/internal/lambdatest/testdata/echofn"

func TestMain(m *testing.M) {
	code := m.Run()
	RemoveBuilds()
	os.Exit(code)
}

// startEcho starts echofn; opts.Name defaults to "echo".
func startEcho(t *testing.T, opts Options) *Function {
	t.Helper()
	opts.Binary = Build(t, echoPkg)
	if opts.Name == "" {
		opts.Name = "echo"
	}
	return Start(t.Context(), t, opts)
}

func mustFunctionError(t *testing.T, err error, wantType string) *FunctionError {
	t.Helper()
	var fe *FunctionError
	if !errors.As(err, &fe) {
		t.Fatalf("error = %v (%T), want a *FunctionError", err, err)
	}
	if wantType != "" && fe.Type != wantType {
		t.Fatalf("FunctionError.Type = %q, want %q (message %q)", fe.Type, wantType, fe.Message)
	}
	return fe
}

func echo(t *testing.T, f *Function, data string) {
	t.Helper()
	out, err := f.Invoke(t.Context(), []byte(`{"op":"echo","data":`+data+`}`))
	if err != nil {
		t.Fatalf("echo invoke: %v", err)
	}
	if string(out) != data {
		t.Fatalf("echo returned %s, want %s", out, data)
	}
}

func TestFunctionColdStartAndEcho(t *testing.T) {
	t.Parallel()
	f := startEcho(t, Options{Name: "cold"})
	if d := f.InitDuration(); d <= 0 {
		t.Fatalf("InitDuration() = %v, want > 0", d)
	} else {
		t.Logf("cold start init duration: %v", d)
	}
	echo(t, f, `{"hello":"world","n":[1,2,3]}`)

	var lc struct {
		RequestID   string `json:"requestId"`
		FunctionARN string `json:"functionArn"`
		Deadline    int64  `json:"deadline"`
		TraceID     string `json:"traceId"`
	}
	before := time.Now()
	if err := f.InvokeJSON(t.Context(), map[string]string{"op": "context"}, &lc); err != nil {
		t.Fatal(err)
	}
	if lc.RequestID == "" {
		t.Error("the function saw no request id")
	}
	if want := "arn:aws:lambda:us-east-1:000000000000:function:cold"; lc.FunctionARN != want || f.ARN() != want {
		t.Errorf("function ARN = %q (ARN() %q), want %q", lc.FunctionARN, f.ARN(), want)
	}
	deadline := time.UnixMilli(lc.Deadline)
	if deadline.Before(before.Add(DefaultTimeout-time.Second)) || deadline.After(time.Now().Add(DefaultTimeout+time.Second)) {
		t.Errorf("deadline %v is not about %v from now", deadline, DefaultTimeout)
	}
	if !strings.HasPrefix(lc.TraceID, "Root=1-") {
		t.Errorf("trace id %q does not look like an X-Ray header", lc.TraceID)
	}
	if got := f.Invocations(); got != 2 {
		t.Errorf("Invocations() = %d, want 2", got)
	}
	if !strings.Contains(f.Stderr(), "echofn: init cold") {
		t.Errorf("Stderr() = %q, want the init line", f.Stderr())
	}
}

// Not parallel: it sets an environment variable that must not leak.
func TestFunctionEnvironment(t *testing.T) {
	t.Setenv("LAMBDATEST_MUST_NOT_LEAK", "1")
	f := startEcho(t, Options{
		Name: "envfn",
		Env:  []string{"CUSTOM=first", "CUSTOM=second", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=1024"},
	})
	var env map[string]string
	if err := f.InvokeJSON(t.Context(), map[string]string{"op": "env"}, &env); err != nil {
		t.Fatal(err)
	}
	taskRoot := filepath.Dir(Build(t, echoPkg))
	want := map[string]string{
		"AWS_LAMBDA_RUNTIME_API":          f.RuntimeAPI(),
		"AWS_LAMBDA_FUNCTION_NAME":        "envfn",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_REGION":                      "us-east-1",
		"AWS_DEFAULT_REGION":              "us-east-1",
		"_HANDLER":                        "bootstrap",
		"LAMBDA_TASK_ROOT":                taskRoot,
		"TZ":                              ":UTC",
		"PATH":                            os.Getenv("PATH"),
		"CUSTOM":                          "second",
		"(cwd)":                           taskRoot,
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["LAMBDATEST_MUST_NOT_LEAK"]; ok {
		t.Error("the test process environment leaked into the function")
	}
}

func TestFunctionError(t *testing.T) {
	t.Parallel()
	f := startEcho(t, Options{})
	_, err := f.Invoke(t.Context(), []byte(`{"op":"error","message":"boom"}`))
	fe := mustFunctionError(t, err, "errorString")
	if fe.Message != "boom" {
		t.Errorf("Message = %q, want boom", fe.Message)
	}
	if !strings.Contains(string(fe.Payload), `"errorMessage":"boom"`) {
		t.Errorf("Payload = %s", fe.Payload)
	}
	echo(t, f, `"still alive"`)
	if r := f.Restarts(); r != 0 {
		t.Errorf("Restarts() = %d after a plain function error, want 0", r)
	}
}

func TestFunctionCrashRestarts(t *testing.T) {
	t.Parallel()
	f := startEcho(t, Options{})
	echo(t, f, `1`)
	_, err := f.Invoke(t.Context(), []byte(`{"op":"exit","code":3}`))
	fe := mustFunctionError(t, err, "Runtime.ExitError")
	if !strings.Contains(fe.Message, "exit status 3") {
		t.Errorf("Message = %q, want it to mention exit status 3", fe.Message)
	}
	if r := f.Restarts(); r != 1 {
		t.Errorf("Restarts() = %d, want 1", r)
	}
	echo(t, f, `2`)
	if r := f.Restarts(); r != 1 {
		t.Errorf("Restarts() = %d after the next invoke, want 1", r)
	}
}

func TestFunctionPanicRestarts(t *testing.T) {
	t.Parallel()
	f := startEcho(t, Options{})
	_, err := f.Invoke(t.Context(), []byte(`{"op":"panic","message":"kaboom"}`))
	// aws-lambda-go reports the panic through the Runtime API, then exits.
	fe := mustFunctionError(t, err, "")
	if !strings.Contains(fe.Message, "echofn: kaboom") {
		t.Errorf("Message = %q, want the panic value", fe.Message)
	}
	echo(t, f, `"after panic"`)
	if r := f.Restarts(); r != 1 {
		t.Errorf("Restarts() = %d, want 1", r)
	}
}

func TestFunctionTimeout(t *testing.T) {
	t.Parallel()
	f := startEcho(t, Options{Timeout: 300 * time.Millisecond})
	start := time.Now()
	_, err := f.Invoke(t.Context(), []byte(`{"op":"sleep","ms":5000}`))
	fe := mustFunctionError(t, err, "Sandbox.Timedout")
	if !strings.Contains(fe.Message, "Task timed out after 0.30 seconds") {
		t.Errorf("Message = %q", fe.Message)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the timeout took %v", d)
	}
	if r := f.Restarts(); r != 1 {
		t.Errorf("Restarts() = %d, want 1", r)
	}
	echo(t, f, `"fresh environment"`)
}

func TestFunctionSerializesConcurrentInvokes(t *testing.T) {
	t.Parallel()
	f := startEcho(t, Options{})
	const n, ms = 6, 30
	var wg sync.WaitGroup
	results := make([]string, n)
	errs := make([]error, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := f.Invoke(t.Context(), []byte(fmt.Sprintf(`{"op":"sleep","ms":%d}`, ms+i)))
			results[i], errs[i] = string(out), err
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for i := range n {
		if errs[i] != nil {
			t.Errorf("invoke %d: %v", i, errs[i])
		} else if want := fmt.Sprintf(`{"slept":%d}`, ms+i); results[i] != want {
			t.Errorf("invoke %d returned %s, want %s", i, results[i], want)
		}
	}
	if floor := time.Duration(n*ms) * time.Millisecond; elapsed < floor {
		t.Errorf("%d invocations of >= %dms took %v; they were not serialized", n, ms, elapsed)
	}
	if got := f.Invocations(); got != n {
		t.Errorf("Invocations() = %d, want %d", got, n)
	}
}

func TestFunctionInvokeContextCanceled(t *testing.T) {
	t.Parallel()
	f := startEcho(t, Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := f.Invoke(ctx, []byte(`{"op":"sleep","ms":400}`))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Invoke with an expiring context: %v, want DeadlineExceeded", err)
	}
	// The abandoned invocation keeps the environment busy; the next one
	// waits for it rather than failing.
	echo(t, f, `"queued"`)
	if r := f.Restarts(); r != 0 {
		t.Errorf("Restarts() = %d, want 0", r)
	}
}

func TestFunctionInitError(t *testing.T) {
	t.Parallel()
	f := startEcho(t, Options{Env: []string{"ECHOFN_INIT_ERROR=config missing"}})
	ie := f.InitError()
	if ie == nil || !strings.Contains(ie.Error(), "config missing") {
		t.Fatalf("InitError() = %v, want the reported init error", ie)
	}
	_, err := f.Invoke(t.Context(), []byte(`{"op":"echo","data":1}`))
	fe := mustFunctionError(t, err, "EchofnInitError")
	if fe.Message != "config missing" {
		t.Errorf("Message = %q", fe.Message)
	}
	if f.Restarts() < 1 {
		t.Errorf("Restarts() = %d: the invoke should have retried init in a fresh process", f.Restarts())
	}
}

func TestRuntimeAPIRejectsUnknownRequestID(t *testing.T) {
	t.Parallel()
	f := startEcho(t, Options{})
	for _, kind := range []string{"response", "error"} {
		url := "http://" + f.RuntimeAPI() + "/2018-06-01/runtime/invocation/not-a-request/" + kind
		resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			ErrorType    string `json:"errorType"`
			ErrorMessage string `json:"errorMessage"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || err != nil || body.ErrorType != "InvalidRequestID" {
			t.Errorf("POST %s: status %d, body %+v (%v); want 400 InvalidRequestID", kind, resp.StatusCode, body, err)
		}
	}
	echo(t, f, `true`)
}

func TestFunctionRejectsInvalidPayload(t *testing.T) {
	t.Parallel()
	f := startEcho(t, Options{})
	if _, err := f.Invoke(t.Context(), []byte(`{not json`)); err == nil || !strings.Contains(err.Error(), "InvalidRequestContent") {
		t.Errorf("invalid JSON payload: err = %v", err)
	}
	if got := f.Invocations(); got != 0 {
		t.Errorf("Invocations() = %d, want 0", got)
	}
}

func TestBuildAll(t *testing.T) {
	t.Parallel()
	paths := BuildAll(t, []string{echoPkg})
	if paths[echoPkg] != Build(t, echoPkg) {
		t.Errorf("BuildAll and Build disagree: %q vs %q", paths[echoPkg], Build(t, echoPkg))
	}
	if filepath.Base(paths[echoPkg]) != "bootstrap" {
		t.Errorf("binary %q is not named bootstrap", paths[echoPkg])
	}
	for pkg, want := range map[string]string{
		"example.com/m/cmd/api":    "api",
		"./functions/worker":       "worker",
		"example.com/m/v2":         "m",
		"example.com/m/tools/v3x":  "v3x",
		".":                        "",
		"example.com/m/cmd/...":    "",
		"example.com/m/cmd/api/v2": "api",
	} {
		if got := binaryName(pkg); got != want {
			t.Errorf("binaryName(%q) = %q, want %q", pkg, got, want)
		}
	}
}
