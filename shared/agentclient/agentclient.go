// Package agentclient is the control plane's client for an agent server. It
// sends strict requests (sandbox/wire) and reads responses leniently, taking
// only the fields the control plane uses, so newer agent servers stay
// compatible.
package agentclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agentwire"
)

// Client calls one agent server.
type Client struct {
	BaseURL string
	Key     string
	HTTP    *http.Client
}

// New returns a client with a 30s timeout.
func New(baseURL, key string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Key: key, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// HTTPError is a non-2xx answer.
type HTTPError struct {
	Status int
	Detail string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("agent server: HTTP %d: %s", e.Status, e.Detail)
}

// Info is what the control plane reads from ConversationInfo.
type Info struct {
	ID              string          `json:"id"`
	ExecutionStatus string          `json:"execution_status"`
	Title           *string         `json:"title"`
	Stats           json.RawMessage `json:"stats"`
	Metrics         json.RawMessage `json:"metrics"`
	Tags            map[string]string
	UpdatedAt       string `json:"updated_at"`
	CreatedAt       string `json:"created_at"`
	Agent           struct {
		LLM struct {
			Model string `json:"model"`
		} `json:"llm"`
	} `json:"agent"`
}

func (c *Client) do(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := strictjson.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Key != "" {
		req.Header.Set("X-Session-API-Key", c.Key)
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("agent server %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("agent server %s %s: read: %w", method, path, err)
	}
	if res.StatusCode/100 != 2 {
		return &HTTPError{Status: res.StatusCode, Detail: errorDetail(raw)}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("agent server %s %s: decode response: %w", method, path, err)
		}
	}
	return nil
}

// errorDetail is the detail of an error answer: its JSON "detail" (a string
// as is, anything else as JSON), else the trimmed body; at most 1000 bytes.
func errorDetail(raw []byte) string {
	detail := strings.TrimSpace(string(raw))
	var d struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(raw, &d) == nil && len(d.Detail) > 0 {
		var s string
		if json.Unmarshal(d.Detail, &s) == nil {
			detail = s
		} else {
			detail = string(d.Detail)
		}
	}
	if len(detail) > 1000 {
		detail = detail[:1000]
	}
	return detail
}

// Alive checks GET /alive.
func (c *Client) Alive(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/alive", nil, nil)
}

// CreateConversation creates (or re-attaches to) a conversation.
func (c *Client) CreateConversation(ctx context.Context, req *agentwire.StartConversationRequest) (Info, error) {
	var info Info
	err := c.do(ctx, http.MethodPost, "/api/conversations", req, &info)
	return info, err
}

// SendMessage appends a user message (and runs when req.Run is set).
func (c *Client) SendMessage(ctx context.Context, conversationID string, req *agentwire.SendMessageRequest) error {
	return c.do(ctx, http.MethodPost, "/api/conversations/"+url.PathEscape(conversationID)+"/events", req, nil)
}

// GetConversations fetches conversations by id; nil for unknown ones. No
// ids is an empty answer, without a request (the agent server requires
// ids).
func (c *Client) GetConversations(ctx context.Context, ids []string) ([]*Info, error) {
	if len(ids) == 0 {
		return []*Info{}, nil
	}
	q := url.Values{}
	for _, id := range ids {
		q.Add("ids", id)
	}
	var out []*Info
	err := c.do(ctx, http.MethodGet, "/api/conversations?"+q.Encode(), nil, &out)
	return out, err
}

// Get fetches path (with its query) and decodes the JSON answer into out.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.do(ctx, http.MethodGet, path, nil, out)
}

// Post sends body (strictly encoded) to path and decodes the JSON answer
// into out (nil: ignored).
func (c *Client) Post(ctx context.Context, path string, body, out any) error {
	return c.do(ctx, http.MethodPost, path, body, out)
}

// DeleteConversation deletes a conversation on the agent server (404 is not
// an error: it is already gone).
func (c *Client) DeleteConversation(ctx context.Context, id string) error {
	err := c.do(ctx, http.MethodDelete, "/api/conversations/"+url.PathEscape(id), nil, nil)
	var he *HTTPError
	if errors.As(err, &he) && he.Status == http.StatusNotFound {
		return nil
	}
	return err
}

// SetTitle renames a conversation on the agent server.
func (c *Client) SetTitle(ctx context.Context, id, title string) error {
	return c.do(ctx, http.MethodPatch, "/api/conversations/"+url.PathEscape(id), map[string]string{"title": title}, nil)
}

// BashRequest is a command for the agent server's bash API; Secrets are
// its own environment (never stored, masked in its output).
type BashRequest struct {
	Command string            `json:"command"`
	Cwd     *string           `json:"cwd"`
	Timeout int               `json:"timeout"`
	Secrets map[string]string `json:"secrets" acs:"nullable"`
}

// BashOutput is the part of a BashOutput event the control plane reads.
type BashOutput struct {
	ID        string  `json:"id"`
	CommandID string  `json:"command_id"`
	Order     int     `json:"order"`
	ExitCode  *int    `json:"exit_code"`
	Stdout    *string `json:"stdout"`
	Stderr    *string `json:"stderr"`
}

// StartBash starts a command and returns its id at once.
func (c *Client) StartBash(ctx context.Context, req BashRequest) (string, error) {
	var cmd struct {
		ID string `json:"id"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/bash/start_bash_command", req, &cmd); err != nil {
		return "", err
	}
	return cmd.ID, nil
}

// BashResult returns a command's joined output and its exit code once it
// finished (done=false while it runs).
func (c *Client) BashResult(ctx context.Context, commandID string) (stdout, stderr string, exitCode int, done bool, err error) {
	page := ""
	var out, errOut strings.Builder
	for {
		q := url.Values{"command_id__eq": {commandID}, "kind__eq": {"BashOutput"}, "limit": {"100"}}
		if page != "" {
			q.Set("page_id", page)
		}
		var p struct {
			Items      []BashOutput `json:"items"`
			NextPageID *string      `json:"next_page_id"`
		}
		if err := c.do(ctx, http.MethodGet, "/api/bash/bash_events/search?"+q.Encode(), nil, &p); err != nil {
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
		page = *p.NextPageID
	}
	return out.String(), errOut.String(), exitCode, done, nil
}

// ExecBash runs a command and waits for it (bounded by its timeout).
func (c *Client) ExecBash(ctx context.Context, req BashRequest) (BashOutput, error) {
	var out BashOutput
	hc := *c.HTTP
	hc.Timeout = time.Duration(req.Timeout+30) * time.Second
	cc := *c
	cc.HTTP = &hc
	err := cc.do(ctx, http.MethodPost, "/api/bash/execute_bash_command", req, &out)
	return out, err
}

// Download reads a file of the sandbox (at most max bytes; ErrTooLarge
// beyond, refused from the answer's Content-Length or X-File-Size before
// any of the body is read). A refusal is an *HTTPError with the agent server's status and
// detail (404 for a missing file).
func (c *Client) Download(ctx context.Context, path string, max int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+"/api/file/download?path="+url.QueryEscape(path), nil)
	if err != nil {
		return nil, err
	}
	if c.Key != "" {
		req.Header.Set("X-Session-API-Key", c.Key)
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("agent server download: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode/100 == 2 {
		// The agent server's secret masking drops Content-Length; it
		// keeps X-File-Size.
		size, err := strconv.ParseInt(res.Header.Get("X-File-Size"), 10, 64)
		if res.ContentLength > max || (err == nil && size > max) {
			return nil, ErrTooLarge
		}
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("agent server download: %w", err)
	}
	if res.StatusCode/100 != 2 {
		if len(b) > 64<<10 {
			b = b[:64<<10]
		}
		return nil, &HTTPError{Status: res.StatusCode, Detail: errorDetail(b)}
	}
	if int64(len(b)) > max {
		return nil, ErrTooLarge
	}
	return b, nil
}

// WorkspaceArchive streams the agent server's workspace archive (GET
// /api/workspace/archive: a gzip-compressed tar of the workspace, without the
// agent's own state) to w. A non-200 answer is an *HTTPError, and nothing is
// written to w. A transfer that breaks off (the server aborts an archive that
// fails midway) is an error wrapping io.ErrUnexpectedEOF or the transport's
// error, and a failure of w is returned wrapped; w may then hold part of the
// archive. Checking the gzip and tar data is the caller's business. The
// client's timeout bounds only the wait for the answer's headers: the
// transfer itself takes as long as it takes, within ctx.
func (c *Client) WorkspaceArchive(ctx context.Context, w io.Writer) error {
	const path = "/api/workspace/archive"
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+path, nil)
	if err != nil {
		return err
	}
	if c.Key != "" {
		req.Header.Set("X-Session-API-Key", c.Key)
	}
	hc := http.Client{}
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	stop := func() bool { return true }
	timeout := hc.Timeout
	if timeout > 0 {
		hc.Timeout = 0
		stop = time.AfterFunc(timeout, cancel).Stop
	}
	res, err := hc.Do(req)
	if !stop() { // the timer fired: the request is canceled
		if err == nil {
			res.Body.Close()
		}
		return fmt.Errorf("agent server GET %s: no answer within %v: %w", path, timeout, context.DeadlineExceeded)
	}
	if err != nil {
		return fmt.Errorf("agent server GET %s: %w", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		return &HTTPError{Status: res.StatusCode, Detail: errorDetail(raw)}
	}
	n, err := io.Copy(w, res.Body)
	if err != nil {
		return fmt.Errorf("agent server GET %s: after %d bytes: %w", path, n, err)
	}
	return nil
}

// ErrTooLarge is returned by Download for a file over the limit.
var ErrTooLarge = errors.New("file too large")

// Raw fetches path and returns the body as is (JSON answers passed through).
func (c *Client) Raw(ctx context.Context, method, path string, body any) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.do(ctx, method, path, body, &out)
	return out, err
}
