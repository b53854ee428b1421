// Package runtimeapi carries an acs.Runtime over HTTP, in the shape of the
// OpenHands remote runtime API (POST /start, GET /sessions/{id}, POST
// /pause, /resume, /stop, with X-API-Key), so the control plane's functions
// can drive sandboxes that live in another process: `acs runtime-api`
// serves process sandboxes this way (the local stand-in for Kubernetes in
// the AWS tests), and Client is an acs.Runtime for any server speaking the
// protocol.
//
// ACS extensions to the reference protocol, all optional for a server: the
// control plane's session key in /start and /resume (`session_api_key`),
// the sandbox's `owner_id`, `spec_id`, `working_dir` and `detail` in the
// runtime object, and GET /sessions/{id}/archive (a tar.gz of the
// workspace).
package runtimeapi

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// Runtime is the runtime object of the protocol.
type Runtime struct {
	RuntimeID     string `json:"runtime_id"`
	SessionID     string `json:"session_id"`
	URL           string `json:"url"`
	SessionAPIKey string `json:"session_api_key"`
	// Status is running, paused, starting, error or stopped.
	Status     string `json:"status"`
	WorkingDir string `json:"working_dir,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

// StartBody is POST /start.
type StartBody struct {
	Image         string            `json:"image"`
	Command       []string          `json:"command,omitempty"`
	WorkingDir    string            `json:"working_dir,omitempty"`
	Environment   map[string]string `json:"environment"`
	SessionID     string            `json:"session_id"`
	SessionAPIKey string            `json:"session_api_key,omitempty"`
	OwnerID       string            `json:"owner_id,omitempty"`
}

// IDBody is POST /pause, /resume and /stop.
type IDBody struct {
	RuntimeID     string            `json:"runtime_id"`
	SessionAPIKey string            `json:"session_api_key,omitempty"`
	Environment   map[string]string `json:"environment,omitempty"`
}

// statusName and statusOf map between acs statuses and the protocol's.
func statusName(s acs.SandboxStatus) string {
	switch s {
	case acs.SandboxRunning:
		return "running"
	case acs.SandboxPaused:
		return "paused"
	case acs.SandboxStarting:
		return "starting"
	case acs.SandboxError:
		return "error"
	}
	return "stopped"
}

func statusOf(s string) acs.SandboxStatus {
	switch s {
	case "running":
		return acs.SandboxRunning
	case "paused":
		return acs.SandboxPaused
	case "starting":
		return acs.SandboxStarting
	case "error":
		return acs.SandboxError
	}
	return acs.SandboxMissing
}

// Handler serves rt with the protocol. Every request needs X-API-Key equal
// to key (compared in constant time). specs resolve /start's image to a
// sandbox spec (by id; unknown images use the image as the spec id).
func Handler(rt acs.Runtime, key string, specs func(image string) acs.SandboxSpec) http.Handler {
	mux := http.NewServeMux()
	write := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
	fail := func(w http.ResponseWriter, err error) {
		switch {
		case errors.Is(err, acs.ErrNotFound):
			write(w, http.StatusNotFound, map[string]string{"detail": err.Error()})
		case errors.Is(err, acs.ErrInvalid):
			write(w, http.StatusUnprocessableEntity, map[string]string{"detail": err.Error()})
		case errors.Is(err, acs.ErrConflict), errors.Is(err, acs.ErrSandboxFailed):
			// ErrSandboxFailed: an ERROR sandbox that cannot be resumed
			// (its workspace is gone); the status says why.
			write(w, http.StatusConflict, map[string]string{"detail": err.Error()})
		default:
			slog.Error("runtime api", "error", err)
			write(w, http.StatusInternalServerError, map[string]string{"detail": err.Error()})
		}
	}
	object := func(id string, st acs.RuntimeStatus) Runtime {
		return Runtime{RuntimeID: id, SessionID: id, URL: st.AgentURL, SessionAPIKey: st.SessionKey,
			Status: statusName(st.Status), WorkingDir: st.WorkingDir, Detail: st.Detail}
	}
	decode := func(w http.ResponseWriter, r *http.Request, v any) bool {
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(v); err != nil {
			write(w, http.StatusUnprocessableEntity, map[string]string{"detail": "invalid JSON body: " + err.Error()})
			return false
		}
		return true
	}
	mux.HandleFunc("POST /start", func(w http.ResponseWriter, r *http.Request) {
		var b StartBody
		if !decode(w, r, &b) {
			return
		}
		if b.SessionID == "" {
			write(w, http.StatusUnprocessableEntity, map[string]string{"detail": "session_id is required"})
			return
		}
		if b.SessionAPIKey == "" {
			b.SessionAPIKey = acs.NewSecret(40)
		}
		spec := specs(b.Image)
		st, err := rt.Start(r.Context(), acs.StartRequest{SandboxID: b.SessionID, OwnerID: b.OwnerID, Spec: spec,
			SessionKey: b.SessionAPIKey, Env: b.Environment})
		if err != nil {
			fail(w, err)
			return
		}
		write(w, http.StatusOK, object(b.SessionID, st))
	})
	mux.HandleFunc("GET /sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		st, err := rt.Status(r.Context(), id)
		if err != nil {
			fail(w, err)
			return
		}
		if st.Status == acs.SandboxMissing {
			write(w, http.StatusNotFound, map[string]string{"detail": "no runtime " + id})
			return
		}
		write(w, http.StatusOK, object(id, st))
	})
	mux.HandleFunc("GET /sessions/{id}/archive", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		lw := &lazyWriter{w: w}
		if err := rt.Archive(r.Context(), id, lw); err != nil {
			if !lw.started {
				fail(w, err)
				return
			}
			// Part of the archive is out: break the response so the client
			// sees a failure, not a short archive.
			panic(http.ErrAbortHandler)
		}
		if !lw.started {
			lw.start()
		}
	})
	mux.HandleFunc("POST /pause", func(w http.ResponseWriter, r *http.Request) {
		var b IDBody
		if !decode(w, r, &b) {
			return
		}
		if err := rt.Pause(r.Context(), b.RuntimeID); err != nil {
			fail(w, err)
			return
		}
		write(w, http.StatusOK, map[string]bool{"success": true})
	})
	mux.HandleFunc("POST /resume", func(w http.ResponseWriter, r *http.Request) {
		var b IDBody
		if !decode(w, r, &b) {
			return
		}
		if b.SessionAPIKey == "" {
			b.SessionAPIKey = acs.NewSecret(40)
		}
		st, err := rt.Resume(r.Context(), b.RuntimeID, b.SessionAPIKey, b.Environment)
		if err != nil {
			fail(w, err)
			return
		}
		write(w, http.StatusOK, object(b.RuntimeID, st))
	})
	mux.HandleFunc("POST /stop", func(w http.ResponseWriter, r *http.Request) {
		var b IDBody
		if !decode(w, r, &b) {
			return
		}
		if err := rt.Delete(r.Context(), b.RuntimeID); err != nil {
			fail(w, err)
			return
		}
		write(w, http.StatusOK, map[string]bool{"success": true})
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { write(w, 200, map[string]string{"status": "ok"}) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" && subtle.ConstantTimeCompare([]byte(r.Header.Get("X-API-Key")), []byte(key)) != 1 {
			write(w, http.StatusUnauthorized, map[string]string{"detail": "invalid X-API-Key"})
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// Client is an acs.Runtime for a server speaking the protocol.
type Client struct {
	BaseURL string
	Key     string
	HTTP    *http.Client
}

var _ acs.Runtime = (*Client)(nil)

// NewClient returns a client with a 60 s timeout.
func NewClient(baseURL, key string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Key: key, HTTP: &http.Client{Timeout: 60 * time.Second}}
}

// call sends a request and decodes a 2xx answer into out. A 404 is
// acs.ErrNotFound; 5xx and network failures wrap acs.ErrUnavailable.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", c.Key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("runtime api %s %s: %v: %w", method, path, err, acs.ErrUnavailable)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	switch {
	case res.StatusCode == http.StatusNotFound:
		return fmt.Errorf("runtime api %s %s: %s: %w", method, path, strings.TrimSpace(string(raw)), acs.ErrNotFound)
	case res.StatusCode == http.StatusConflict:
		return fmt.Errorf("runtime api %s %s: %s: %w", method, path, strings.TrimSpace(string(raw)), acs.ErrConflict)
	case res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500:
		return fmt.Errorf("runtime api %s %s: HTTP %d %s: %w", method, path, res.StatusCode, strings.TrimSpace(string(raw)), acs.ErrUnavailable)
	case res.StatusCode/100 != 2:
		return fmt.Errorf("runtime api %s %s: HTTP %d %s", method, path, res.StatusCode, strings.TrimSpace(string(raw)))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("runtime api %s %s: decode: %w", method, path, err)
		}
	}
	return nil
}

func (r Runtime) status() acs.RuntimeStatus {
	return acs.RuntimeStatus{Status: statusOf(r.Status), AgentURL: r.URL, SessionKey: r.SessionAPIKey,
		WorkingDir: r.WorkingDir, Detail: r.Detail}
}

// Start implements acs.Runtime.
func (c *Client) Start(ctx context.Context, req acs.StartRequest) (acs.RuntimeStatus, error) {
	env := map[string]string{}
	for k, v := range req.Spec.InitialEnv {
		env[k] = v
	}
	for k, v := range req.Env {
		env[k] = v
	}
	var rt Runtime
	err := c.call(ctx, http.MethodPost, "/start", StartBody{Image: req.Spec.ID, Command: req.Spec.Command,
		WorkingDir: req.Spec.WorkingDir, Environment: env, SessionID: req.SandboxID, SessionAPIKey: req.SessionKey,
		OwnerID: req.OwnerID}, &rt)
	return rt.status(), err
}

// Status implements acs.Runtime: an unknown sandbox is MISSING.
func (c *Client) Status(ctx context.Context, id string) (acs.RuntimeStatus, error) {
	var rt Runtime
	err := c.call(ctx, http.MethodGet, "/sessions/"+url.PathEscape(id), nil, &rt)
	if errors.Is(err, acs.ErrNotFound) {
		return acs.RuntimeStatus{Status: acs.SandboxMissing}, nil
	}
	return rt.status(), err
}

// Pause implements acs.Runtime.
func (c *Client) Pause(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodPost, "/pause", IDBody{RuntimeID: id}, nil)
}

// Resume implements acs.Runtime.
func (c *Client) Resume(ctx context.Context, id, sessionKey string, env map[string]string) (acs.RuntimeStatus, error) {
	var rt Runtime
	err := c.call(ctx, http.MethodPost, "/resume", IDBody{RuntimeID: id, SessionAPIKey: sessionKey, Environment: env}, &rt)
	return rt.status(), err
}

// Delete implements acs.Runtime (unknown sandboxes are not an error).
func (c *Client) Delete(ctx context.Context, id string) error {
	err := c.call(ctx, http.MethodPost, "/stop", IDBody{RuntimeID: id}, nil)
	if errors.Is(err, acs.ErrNotFound) {
		return nil
	}
	return err
}

// Archive implements acs.Runtime through GET /sessions/{id}/archive.
func (c *Client) Archive(ctx context.Context, id string, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+"/sessions/"+url.PathEscape(id)+"/archive", nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", c.Key)
	res, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("runtime api archive: %v: %w", err, acs.ErrUnavailable)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusNotFound {
		return fmt.Errorf("runtime api archive %s: %w", id, acs.ErrNotFound)
	}
	if res.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		return fmt.Errorf("runtime api archive %s: HTTP %d %s", id, res.StatusCode, b)
	}
	_, err = io.Copy(w, res.Body)
	return err
}

// lazyWriter sends the archive's headers with its first bytes, so an error
// before any byte can still be an error status.
type lazyWriter struct {
	w       http.ResponseWriter
	started bool
}

func (l *lazyWriter) start() {
	l.started = true
	l.w.Header().Set("Content-Type", "application/gzip")
	l.w.WriteHeader(http.StatusOK)
}

func (l *lazyWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.start()
	}
	return l.w.Write(p)
}
