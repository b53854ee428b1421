// Package agentclient is the control plane's client for an agent server. It
// sends strict requests (sandbox/wire) and reads responses leniently, taking
// only the fields the control plane uses, so newer agent servers stay
// compatible.
package agentclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/wire"
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
		return &HTTPError{Status: res.StatusCode, Detail: detail}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("agent server %s %s: decode response: %w", method, path, err)
		}
	}
	return nil
}

// Alive checks GET /alive.
func (c *Client) Alive(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/alive", nil, nil)
}

// CreateConversation creates (or re-attaches to) a conversation.
func (c *Client) CreateConversation(ctx context.Context, req *wire.StartConversationRequest) (Info, error) {
	var info Info
	err := c.do(ctx, http.MethodPost, "/api/conversations", req, &info)
	return info, err
}

// SendMessage appends a user message (and runs when req.Run is set).
func (c *Client) SendMessage(ctx context.Context, conversationID string, req *wire.SendMessageRequest) error {
	return c.do(ctx, http.MethodPost, "/api/conversations/"+url.PathEscape(conversationID)+"/events", req, nil)
}

// GetConversations fetches conversations by id; nil for unknown ones.
func (c *Client) GetConversations(ctx context.Context, ids []string) ([]*Info, error) {
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
