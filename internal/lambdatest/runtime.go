package lambdatest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// DefaultTimeout is the per-invocation timeout used when [Options.Timeout]
// is zero.
const DefaultTimeout = 30 * time.Second

const (
	// initTimeout bounds the time from exec to the first GET .../next.
	initTimeout = 30 * time.Second
	// stopGrace is how long a process gets between SIGTERM and SIGKILL.
	stopGrace = 2 * time.Second
	// maxPayload is Lambda's synchronous invocation limit for both the
	// request and the response payload (6 MB).
	maxPayload = 6 * 1024 * 1024

	hdrRequestID     = "Lambda-Runtime-Aws-Request-Id"
	hdrDeadline      = "Lambda-Runtime-Deadline-Ms"
	hdrFunctionARN   = "Lambda-Runtime-Invoked-Function-Arn"
	hdrTraceID       = "Lambda-Runtime-Trace-Id"
	hdrErrorType     = "Lambda-Runtime-Function-Error-Type"
	hdrErrorBody     = "Lambda-Runtime-Function-Error-Body"
	hdrExtensionID   = "Lambda-Extension-Identifier"
	runtimeAPIBase   = "/2018-06-01/runtime"
	extensionAPIBase = "/2020-01-01/extension"
)

// Options configures [Start].
type Options struct {
	// Name is the function name (AWS_LAMBDA_FUNCTION_NAME and the last part
	// of the function ARN). Default "function".
	Name string
	// Binary is the path of the built bootstrap executable (see [Build]).
	Binary string
	// Env holds extra KEY=VALUE entries; they are applied after the
	// variables the harness sets, and later entries win.
	Env []string
	// Timeout is the per-invocation timeout. Default [DefaultTimeout].
	Timeout time.Duration
	// Stderr, when set, also receives everything the process writes to its
	// stdout and stderr. The output is captured either way (see
	// [Function.Stderr]).
	Stderr io.Writer
}

// FunctionError is an invocation that ended in an error: one the function
// reported through the Runtime API (a returned error or a recovered panic),
// or one Lambda itself reports: "Runtime.ExitError" when the process exited
// during the invocation or its init, "Sandbox.Timedout" when it ran past its
// timeout, "Function.ResponseSizeTooLarge" for an oversized response.
type FunctionError struct {
	// Type is the errorType, e.g. "errorString" for errors.New errors from
	// aws-lambda-go, or "Runtime.ExitError".
	Type string
	// Message is the errorMessage.
	Message string
	// Payload is the raw error document as Lambda would return it.
	Payload []byte
}

// Error returns "Type: Message".
func (e *FunctionError) Error() string {
	return e.Type + ": " + e.Message
}

func newFunctionError(typ, msg string) *FunctionError {
	payload, _ := json.Marshal(map[string]string{"errorType": typ, "errorMessage": msg})
	return &FunctionError{Type: typ, Message: msg, Payload: payload}
}

// Function is one Lambda function backed by a real bootstrap process talking
// to an in-process Runtime API, i.e. one execution environment. Invocations
// are serialized. Create it with [Start]; it is shut down by the test's
// cleanup.
type Function struct {
	name    string
	arn     string
	binary  string
	env     []string
	timeout time.Duration
	t       testing.TB

	out *outputLog
	// sem serializes invocations (capacity 1); it is held from queueing an
	// invocation until its process is done with it.
	sem chan struct{}

	mu           sync.Mutex
	proc         *process
	closed       bool
	restarts     int
	invocations  int
	initDuration time.Duration
	initErr      *FunctionError
}

// Start launches opts.Binary against a new Runtime API server and waits (up
// to 30s, or until ctx ends) for the process to finish its init phase, i.e.
// to make its first GET .../invocation/next. If the process exits or times
// out before that, the test fails with the captured output. If instead the
// runtime reports an init error (POST .../init/error), Start returns
// normally: [Function.InitError] reports it, and [Function.Invoke] retries
// init in a fresh process the way Lambda does, returning the error if init
// fails again.
//
// The process is stopped (SIGTERM, then SIGKILL after 2s) and the server
// closed by t.Cleanup; when the test failed, the captured output is written
// to the test log.
func Start(ctx context.Context, t testing.TB, opts Options) *Function {
	t.Helper()
	if opts.Binary == "" {
		t.Fatalf("lambdatest.Start: Options.Binary is empty")
	}
	bin, err := filepath.Abs(opts.Binary)
	if err != nil {
		t.Fatalf("lambdatest.Start: resolve binary %q: %v", opts.Binary, err)
	}
	if opts.Name == "" {
		opts.Name = "function"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	f := &Function{
		name:    opts.Name,
		arn:     fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", Region, AccountID, opts.Name),
		binary:  bin,
		env:     append([]string(nil), opts.Env...),
		timeout: opts.Timeout,
		t:       t,
		out:     &outputLog{tee: opts.Stderr},
		sem:     make(chan struct{}, 1),
	}
	t.Cleanup(func() {
		f.close()
		if t.Failed() {
			f.logOutput()
		}
	})
	if _, err := f.ready(ctx); err != nil && f.InitError() == nil {
		t.Fatalf("lambdatest: function %s did not initialize: %v\n--- output ---\n%s", f.name, err, f.Stderr())
	}
	return f
}

// Name returns the function name.
func (f *Function) Name() string { return f.name }

// ARN returns the function ARN,
// arn:aws:lambda:us-east-1:000000000000:function:<Name>.
func (f *Function) ARN() string { return f.arn }

// InitDuration returns the cold-start init time of the most recent execution
// environment that finished init: the time from exec to the binary's first
// GET .../invocation/next. It is non-zero once Start has returned, unless
// init failed.
func (f *Function) InitDuration() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.initDuration
}

// InitError returns the error the runtime reported through
// POST .../init/error in its most recent init, or nil.
func (f *Function) InitError() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.initErr == nil {
		return nil
	}
	return f.initErr
}

// Restarts returns how many times the harness replaced the process with a
// fresh one (after a crash, a timeout or a failed init).
func (f *Function) Restarts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.restarts
}

// Invocations returns how many invocations were delivered to the function
// (handed out by GET .../invocation/next).
func (f *Function) Invocations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.invocations
}

// RuntimeAPI returns the host:port of the current process's Runtime API
// (its AWS_LAMBDA_RUNTIME_API), or "" when no process is running.
func (f *Function) RuntimeAPI() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.proc == nil {
		return ""
	}
	return f.proc.addr
}

// Stderr returns everything the function's processes wrote to stdout and
// stderr so far. It is safe for concurrent use.
func (f *Function) Stderr() string { return f.out.String() }

// Invoke runs one invocation with the given JSON payload (an empty payload
// is sent as {}) and returns the function's response payload. Invocations
// are serialized: concurrent calls queue, and each waits for the previous
// one to finish.
//
// A function error, a crash during the invocation (reported like Lambda's
// "Runtime.ExitError") and a timeout ("Sandbox.Timedout") are returned as a
// *FunctionError. After a crash or a timeout the harness starts a fresh
// process, so later invocations work. If ctx ends first, Invoke returns
// ctx's error, but the invocation keeps running in the function (as it would
// in Lambda) and the next invocation waits for it.
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if len(bytes.TrimSpace(payload)) == 0 {
		payload = []byte("{}")
	}
	if len(payload) > maxPayload {
		return nil, fmt.Errorf("invoke %s: RequestEntityTooLargeException: request must be smaller than %d bytes for the InvokeFunction operation", f.name, maxPayload)
	}
	if !json.Valid(payload) {
		return nil, fmt.Errorf("invoke %s: InvalidRequestContentException: could not parse request body into json", f.name)
	}
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("invoke %s: waiting for the previous invocation: %w", f.name, ctx.Err())
	}
	type result struct {
		body []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-f.sem }()
		body, err := f.invoke(payload)
		done <- result{body, err}
	}()
	select {
	case r := <-done:
		return r.body, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("invoke %s: %w", f.name, ctx.Err())
	}
}

// InvokeJSON marshals in (used as is when it is a []byte or
// json.RawMessage), invokes the function and, when out is non-nil,
// unmarshals the response into out.
func (f *Function) InvokeJSON(ctx context.Context, in, out any) error {
	var payload []byte
	switch v := in.(type) {
	case []byte:
		payload = v
	case json.RawMessage:
		payload = v
	default:
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("invoke %s: marshal payload: %w", f.name, err)
		}
		payload = b
	}
	resp, err := f.Invoke(ctx, payload)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(resp, out); err != nil {
		return fmt.Errorf("invoke %s: unmarshal response %q: %w", f.name, truncate(resp, 200), err)
	}
	return nil
}

// invoke runs one invocation; the caller holds f.sem.
func (f *Function) invoke(payload []byte) ([]byte, error) {
	// An invocation that was never handed to a process (it exited between
	// invocations) is retried on a fresh one, as Lambda would route it to a
	// new execution environment.
	for attempt := 0; attempt < 3; attempt++ {
		p, err := f.ready(context.Background())
		if err != nil {
			return nil, err
		}
		inv := &invocation{
			id:       uuid.NewString(),
			payload:  payload,
			deadline: time.Now().Add(f.timeout),
			traceID:  newTraceID(),
			done:     make(chan invocationResult, 1),
		}
		timer := time.NewTimer(f.timeout)
		select {
		case p.next <- inv:
		case <-p.exited:
			timer.Stop()
			continue
		case <-timer.C:
			p.kill()
			return nil, f.timedOut(inv)
		}
		f.mu.Lock()
		f.invocations++
		f.mu.Unlock()
		select {
		case r := <-inv.done:
			timer.Stop()
			return r.body, r.err
		case <-p.exited:
			timer.Stop()
			select {
			case r := <-inv.done:
				return r.body, r.err
			default:
			}
			return nil, exitError(inv.id, p.waitErr)
		case <-timer.C:
			p.kill()
			select {
			case r := <-inv.done:
				return r.body, r.err
			default:
			}
			return nil, f.timedOut(inv)
		}
	}
	return nil, fmt.Errorf("invoke %s: the process exited before it took the invocation, three times in a row", f.name)
}

func (f *Function) timedOut(inv *invocation) error {
	return newFunctionError("Sandbox.Timedout",
		fmt.Sprintf("RequestId: %s Error: Task timed out after %.2f seconds", inv.id, f.timeout.Seconds()))
}

func exitError(requestID string, waitErr error) error {
	reason := "Runtime exited without providing a reason"
	if waitErr != nil {
		reason = "Runtime exited with error: " + waitErr.Error()
	}
	if requestID != "" {
		reason = "RequestId: " + requestID + " Error: " + reason
	}
	return newFunctionError("Runtime.ExitError", reason)
}

// ready returns a process that finished init, starting one if there is none
// or the current one exited. It returns the init error when the runtime
// reported one, and a Runtime.ExitError or Sandbox.Timedout error when the
// process exited or hung during init.
func (f *Function) ready(ctx context.Context) (*process, error) {
	for attempt := 0; attempt < 3; attempt++ {
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return nil, fmt.Errorf("function %s: already shut down", f.name)
		}
		p := f.proc
		if p == nil || isClosed(p.exited) {
			np, err := f.spawnLocked()
			if err != nil {
				f.mu.Unlock()
				return nil, err
			}
			if p != nil {
				f.restarts++
			}
			f.proc = np
			p = np
		}
		f.mu.Unlock()

		timer := time.NewTimer(initTimeout)
		select {
		case <-p.ready:
		case <-p.initFailed:
		case <-p.exited:
		case <-timer.C:
			p.kill()
			return nil, newFunctionError("Sandbox.Timedout",
				fmt.Sprintf("init of function %s did not finish within %v (no GET /next)", f.name, initTimeout))
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("function %s: waiting for init: %w", f.name, ctx.Err())
		}
		timer.Stop()
		if isClosed(p.initFailed) {
			p.kill()
			f.mu.Lock()
			ie := f.initErr
			f.mu.Unlock()
			if ie == nil {
				return nil, fmt.Errorf("function %s: init failed", f.name)
			}
			return nil, ie
		}
		if isClosed(p.exited) {
			if isClosed(p.ready) {
				continue // died right after init; try a fresh process
			}
			return nil, exitError("", p.waitErr)
		}
		return p, nil
	}
	return nil, fmt.Errorf("function %s: process keeps exiting right after init", f.name)
}

// spawnLocked starts a new process with its own Runtime API server. f.mu is
// held.
func (f *Function) spawnLocked() (*process, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("function %s: listen for the runtime API: %w", f.name, err)
	}
	p := &process{
		f:          f,
		addr:       ln.Addr().String(),
		next:       make(chan *invocation),
		ready:      make(chan struct{}),
		initFailed: make(chan struct{}),
		gone:       make(chan struct{}),
		exited:     make(chan struct{}),
		invs:       map[string]*invocation{},
	}
	cmd := exec.Command(f.binary)
	cmd.Dir = filepath.Dir(f.binary)
	cmd.Env = f.environ(p.addr)
	cmd.Stdout = f.out
	cmd.Stderr = f.out
	cmd.WaitDelay = time.Second
	p.cmd = cmd
	// Everything the handlers read is set before the server starts.
	p.srv = &http.Server{Handler: p.handler(), ReadHeaderTimeout: 10 * time.Second}
	p.started = time.Now()
	go p.srv.Serve(ln)
	if err := cmd.Start(); err != nil {
		p.srv.Close()
		return nil, fmt.Errorf("function %s: start %s: %w", f.name, f.binary, err)
	}
	go p.monitor()
	return p, nil
}

// environ returns the process environment: what provided.al2023 sets, PATH
// and HOME from the test process, then Options.Env.
func (f *Function) environ(runtimeAPI string) []string {
	env := []string{
		"AWS_LAMBDA_RUNTIME_API=" + runtimeAPI,
		"AWS_LAMBDA_FUNCTION_NAME=" + f.name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512",
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/" + f.name,
		"AWS_LAMBDA_LOG_STREAM_NAME=" + time.Now().UTC().Format("2006/01/02") + "/[$LATEST]" + strings.ReplaceAll(uuid.NewString(), "-", ""),
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"AWS_REGION=" + Region,
		"AWS_DEFAULT_REGION=" + Region,
		"_HANDLER=bootstrap",
		"LAMBDA_TASK_ROOT=" + filepath.Dir(f.binary),
		"LANG=en_US.UTF-8",
		"TZ=:UTC",
	}
	for _, k := range []string{"PATH", "HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	// os/exec uses the last value of a duplicated key, so Options.Env wins.
	return append(env, f.env...)
}

// close stops the current process for good.
func (f *Function) close() {
	f.mu.Lock()
	f.closed = true
	p := f.proc
	f.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

func (f *Function) logOutput() {
	out := strings.TrimRight(f.Stderr(), "\n")
	if out == "" {
		f.t.Logf("lambdatest: function %s wrote no output", f.name)
		return
	}
	f.t.Logf("lambdatest: output of function %s:", f.name)
	for _, line := range strings.Split(out, "\n") {
		f.t.Logf("  %s | %s", f.name, line)
	}
}

// invocation is one queued or in-flight invocation.
type invocation struct {
	id       string
	payload  []byte
	deadline time.Time
	traceID  string
	done     chan invocationResult // buffered; receives exactly one result
}

type invocationResult struct {
	body []byte
	err  error
}

// process is one execution environment: a bootstrap process and the Runtime
// API server it talks to. Each process has its own server and queue, so a
// request from a dying process can never take another process's invocation.
type process struct {
	f       *Function
	cmd     *exec.Cmd
	srv     *http.Server
	addr    string
	started time.Time
	next    chan *invocation // unbuffered: a send completes on delivery

	ready      chan struct{} // closed on the first GET /next
	initFailed chan struct{} // closed on POST /init/error
	gone       chan struct{} // closed when the process has exited
	exited     chan struct{} // closed after gone, once a replacement (if any) is running
	waitErr    error         // set before gone is closed

	mu   sync.Mutex
	invs map[string]*invocation // delivered, not yet answered
}

// monitor waits for the process to exit, replaces a process that exited
// after init (unless the function is shutting down), and then closes exited,
// so that anyone who sees exited also sees the restart.
func (p *process) monitor() {
	p.waitErr = p.cmd.Wait()
	close(p.gone)
	p.srv.Close()
	f := p.f
	f.mu.Lock()
	if f.proc == p && !f.closed && isClosed(p.ready) {
		if np, err := f.spawnLocked(); err == nil {
			f.proc = np
			f.restarts++
		} else {
			fmt.Fprintf(f.out, "lambdatest: restart function %s: %v\n", f.name, err)
		}
	}
	f.mu.Unlock()
	close(p.exited)
}

// kill sends SIGKILL and waits until the process has exited.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// stop sends SIGTERM, then SIGKILL after the grace period, and waits until
// the process has exited.
func (p *process) stop() {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = p.cmd.Process.Kill()
	}
	select {
	case <-p.exited:
		return
	case <-time.After(stopGrace):
	}
	p.kill()
}

func (p *process) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+runtimeAPIBase+"/invocation/next", p.handleNext)
	mux.HandleFunc("POST "+runtimeAPIBase+"/invocation/{id}/response", p.handleResponse)
	mux.HandleFunc("POST "+runtimeAPIBase+"/invocation/{id}/error", p.handleError)
	mux.HandleFunc("POST "+runtimeAPIBase+"/init/error", p.handleInitError)
	// aws-lambda-go registers an internal extension when SIGTERM handlers
	// are configured; accept it and never send it events.
	mux.HandleFunc("POST "+extensionAPIBase+"/register", p.handleExtensionRegister)
	mux.HandleFunc("GET "+extensionAPIBase+"/event/next", p.handleExtensionNext)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeRuntimeError(w, http.StatusNotFound, "InvalidRequest", "unknown runtime API path "+r.Method+" "+r.URL.Path)
	})
	return mux
}

func (p *process) handleNext(w http.ResponseWriter, r *http.Request) {
	if isClosed(p.initFailed) {
		writeRuntimeError(w, http.StatusForbidden, "InvalidStateTransition", "init already failed")
		return
	}
	p.markReady()
	select {
	case inv := <-p.next:
		p.mu.Lock()
		p.invs[inv.id] = inv
		p.mu.Unlock()
		h := w.Header()
		h.Set(hdrRequestID, inv.id)
		h.Set(hdrDeadline, strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		h.Set(hdrFunctionARN, p.f.arn)
		h.Set(hdrTraceID, inv.traceID)
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(inv.payload)
	case <-r.Context().Done():
	case <-p.gone:
	}
}

func (p *process) markReady() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if isClosed(p.ready) {
		return
	}
	// Record the init before announcing it: Start returns on p.ready.
	f := p.f
	f.mu.Lock()
	f.initDuration = time.Since(p.started)
	f.initErr = nil
	f.mu.Unlock()
	close(p.ready)
}

// take removes and returns the delivered invocation id, or nil.
func (p *process) take(id string) *invocation {
	p.mu.Lock()
	defer p.mu.Unlock()
	inv := p.invs[id]
	delete(p.invs, id)
	return inv
}

func (p *process) handleResponse(w http.ResponseWriter, r *http.Request) {
	inv := p.take(r.PathValue("id"))
	if inv == nil {
		writeRuntimeError(w, http.StatusBadRequest, "InvalidRequestID", "Invalid request ID")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
	if err != nil {
		inv.done <- invocationResult{err: fmt.Errorf("function %s: read response of %s: %w", p.f.name, inv.id, err)}
		writeRuntimeError(w, http.StatusBadRequest, "InvalidRequest", err.Error())
		return
	}
	// A streamed response that failed mid-way carries the error in trailers.
	if typ := r.Trailer.Get(hdrErrorType); typ != "" {
		fe := &FunctionError{Type: typ}
		if raw, err := base64.StdEncoding.DecodeString(r.Trailer.Get(hdrErrorBody)); err == nil {
			fe = parseFunctionError(raw, typ)
		}
		inv.done <- invocationResult{err: fe}
		writeAccepted(w)
		return
	}
	if len(body) > maxPayload {
		writeRuntimeError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge",
			fmt.Sprintf("Exceeded maximum allowed payload size (%d bytes).", maxPayload))
		inv.done <- invocationResult{err: newFunctionError("Function.ResponseSizeTooLarge",
			fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", maxPayload))}
		return
	}
	writeAccepted(w)
	inv.done <- invocationResult{body: body}
}

func (p *process) handleError(w http.ResponseWriter, r *http.Request) {
	inv := p.take(r.PathValue("id"))
	if inv == nil {
		writeRuntimeError(w, http.StatusBadRequest, "InvalidRequestID", "Invalid request ID")
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxPayload))
	writeAccepted(w)
	inv.done <- invocationResult{err: parseFunctionError(body, r.Header.Get(hdrErrorType))}
}

func (p *process) handleInitError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxPayload))
	p.mu.Lock()
	defer p.mu.Unlock()
	if isClosed(p.ready) || isClosed(p.initFailed) {
		writeRuntimeError(w, http.StatusForbidden, "InvalidStateTransition", "init error reported after init completed")
		return
	}
	fe := parseFunctionError(body, r.Header.Get(hdrErrorType))
	f := p.f
	f.mu.Lock()
	f.initErr = fe
	f.mu.Unlock()
	close(p.initFailed)
	writeAccepted(w)
}

func (p *process) handleExtensionRegister(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set(hdrExtensionID, uuid.NewString())
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{
		"functionName":    p.f.name,
		"functionVersion": "$LATEST",
		"handler":         "bootstrap",
	})
}

func (p *process) handleExtensionNext(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-p.gone:
	}
}

// parseFunctionError reads an error document ({errorMessage, errorType,
// stackTrace}); headerType is used when the document has no errorType.
func parseFunctionError(body []byte, headerType string) *FunctionError {
	fe := &FunctionError{Payload: body}
	var doc struct {
		ErrorMessage string `json:"errorMessage"`
		ErrorType    string `json:"errorType"`
	}
	if err := json.Unmarshal(body, &doc); err == nil {
		fe.Type, fe.Message = doc.ErrorType, doc.ErrorMessage
	} else {
		fe.Message = string(body)
	}
	if fe.Type == "" {
		fe.Type = headerType
	}
	if fe.Type == "" {
		fe.Type = "Unhandled"
	}
	return fe
}

func writeAccepted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

// writeRuntimeError answers like the Runtime API does on a bad request.
func writeRuntimeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"errorMessage": msg, "errorType": typ})
}

// newTraceID returns an X-Ray trace header value.
func newTraceID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", time.Now().Unix(), h[:24], h[24:40])
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}

// outputLog captures process output; it is safe for concurrent use.
type outputLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
	tee io.Writer
}

func (o *outputLog) Write(b []byte) (int, error) {
	o.mu.Lock()
	o.buf.Write(b)
	tee := o.tee
	o.mu.Unlock()
	if tee != nil {
		_, _ = tee.Write(b)
	}
	return len(b), nil
}

func (o *outputLog) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}
