package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/acs-project/acs/sandbox/agentwire"
)

// ServiceTimeout bounds each request of an Agent from NewServiceAgent.
const ServiceTimeout = 30 * time.Second

// NewServiceAgent returns a client of the agent server at baseURL for a
// service that calls agent servers on behalf of its own callers, such as
// the control plane: every request is sent once and bounded by
// ServiceTimeout, an error answer is an *HTTPError, and the other errors
// read "agent server ...". opts apply after these settings.
func NewServiceAgent(baseURL, sessionKey string, opts ...Option) *Agent {
	opts = append([]Option{WithHTTPClient(&http.Client{Timeout: ServiceTimeout}), WithRetry(Retry{Attempts: 1})}, opts...)
	a := NewAgent(baseURL, sessionKey, opts...)
	a.t.raw = true
	return a
}

// BaseURL is the agent server's address, without a trailing slash.
func (a *Agent) BaseURL() string { return a.t.base }

// SessionKey is the session key the client presents.
func (a *Agent) SessionKey() string { return a.key }

// ErrTooLarge is returned by DownloadAtMost for a file over the limit.
var ErrTooLarge = errors.New("file too large")

// Alive checks that the agent server answers (GET /alive).
func (a *Agent) Alive(ctx context.Context) error {
	return a.get(ctx, "/alive", nil, nil)
}

// DeleteConversation deletes a conversation; one that is already gone is
// no error.
func (a *Agent) DeleteConversation(ctx context.Context, id string) error {
	err := a.t.call(ctx, request{method: http.MethodDelete, path: "/api/conversations/" + escape(id), idempotent: true}, nil)
	if StatusOf(err) == http.StatusNotFound {
		return nil
	}
	return err
}

// SetTitle renames a conversation.
func (a *Agent) SetTitle(ctx context.Context, id, title string) error {
	return a.t.call(ctx, request{method: http.MethodPatch, path: "/api/conversations/" + escape(id),
		body: map[string]string{"title": title}, idempotent: true}, nil)
}

// StartBash starts a command in the sandbox and returns its id at once. It
// is never retried.
func (a *Agent) StartBash(ctx context.Context, req *agentwire.ExecuteBashRequest) (string, error) {
	var cmd agentwire.BashCommand
	if err := a.t.call(ctx, request{method: http.MethodPost, path: "/api/bash/start_bash_command", body: req}, &cmd); err != nil {
		return "", err
	}
	return cmd.ID, nil
}

// BashResult returns a command's joined output and its exit code once it
// finished; done is false while it runs.
func (a *Agent) BashResult(ctx context.Context, commandID string) (stdout, stderr string, exitCode int, done bool, err error) {
	var out, errOut strings.Builder
	q := url.Values{"command_id__eq": {commandID}, "kind__eq": {agentwire.KindBashOutput}, "limit": {"100"}}
	for {
		var p struct {
			Items      []agentwire.BashOutput `json:"items"`
			NextPageID *string                `json:"next_page_id"`
		}
		if err := a.get(ctx, "/api/bash/bash_events/search", q, &p); err != nil {
			return "", "", 0, false, err
		}
		for _, o := range p.Items {
			if o.Stdout != nil {
				out.WriteString(*o.Stdout)
			}
			if o.Stderr != nil {
				errOut.WriteString(*o.Stderr)
			}
			if o.ExitCode != nil {
				exitCode, done = *o.ExitCode, true
			}
		}
		if p.NextPageID == nil {
			break
		}
		q.Set("page_id", *p.NextPageID)
	}
	return out.String(), errOut.String(), exitCode, done, nil
}

// DownloadAtMost reads a file of the sandbox, at most max bytes: a larger
// file is ErrTooLarge, refused from the answer's Content-Length or
// X-File-Size before its body is read.
func (a *Agent) DownloadAtMost(ctx context.Context, path string, max int64) ([]byte, error) {
	r := request{method: http.MethodGet, path: "/api/file/download", query: url.Values{"path": {path}}, idempotent: true}
	res, err := a.t.send(ctx, r)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	// The agent server's secret masking drops Content-Length; it keeps
	// X-File-Size.
	size, err := strconv.ParseInt(res.Header.Get("X-File-Size"), 10, 64)
	if res.ContentLength > max || (err == nil && size > max) {
		return nil, ErrTooLarge
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, max+1))
	if err != nil {
		return nil, a.t.errorf("%s %s: read the answer: %w", r.method, r.path, err)
	}
	if int64(len(b)) > max {
		return nil, ErrTooLarge
	}
	return b, nil
}

// WorkspaceArchive streams the workspace archive (GET
// /api/workspace/archive: a gzip-compressed tar of the workspace, without
// the agent's own state) to w. An error answer writes nothing to w. A
// transfer that breaks off is an error wrapping io.ErrUnexpectedEOF or the
// transport's error, and w may then hold part of the archive; checking the
// gzip and tar data is the caller's business. The HTTP client's timeout
// bounds only the wait for the answer's headers: the transfer takes as long
// as it takes, within ctx.
func (a *Agent) WorkspaceArchive(ctx context.Context, w io.Writer) error {
	const path = "/api/workspace/archive"
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := a.t
	hc := *t.http
	t.http = &hc
	stop := func() bool { return true }
	timeout := hc.Timeout
	if timeout > 0 {
		hc.Timeout = 0
		stop = time.AfterFunc(timeout, cancel).Stop
	}
	res, err := t.send(ctx, request{method: http.MethodGet, path: path, idempotent: true})
	if !stop() { // the timer fired: the request is canceled
		if err == nil {
			res.Body.Close()
		}
		return t.errorf("GET %s: no answer within %v: %w", path, timeout, context.DeadlineExceeded)
	}
	if err != nil {
		return err
	}
	defer res.Body.Close()
	n, err := io.Copy(w, res.Body)
	if err != nil {
		return t.errorf("GET %s: after %d bytes: %w", path, n, err)
	}
	return nil
}

// Get fetches path, which may hold a query, and decodes the JSON answer
// into out (nil: ignored).
func (a *Agent) Get(ctx context.Context, path string, out any) error {
	return a.t.call(ctx, request{method: http.MethodGet, path: path, idempotent: true}, out)
}

// Post sends body to path and decodes the JSON answer into out (nil:
// ignored). It is never retried.
func (a *Agent) Post(ctx context.Context, path string, body, out any) error {
	return a.t.call(ctx, request{method: http.MethodPost, path: path, body: body}, out)
}

// Raw calls path with body (nil: none) and returns the JSON answer as is.
func (a *Agent) Raw(ctx context.Context, method, path string, body any) (json.RawMessage, error) {
	var out json.RawMessage
	err := a.t.call(ctx, request{method: method, path: path, body: body, idempotent: method == http.MethodGet}, &out)
	return out, err
}
