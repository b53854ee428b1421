package mcp

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// remote is the HTTP side of a remote server: the round tripper that adds
// the configured headers and remembers the last HTTP error status.
type remote struct {
	base       *http.Transport
	header     http.Header
	lastStatus atomic.Int32
	// life bounds the SSE transport's stream, which is opened with the
	// context given to Connect: it must outlive connecting.
	life   context.Context
	cancel context.CancelFunc
}

// close cancels the remote's streams and drops its idle connections.
func (r *remote) close() {
	r.cancel()
	r.base.CloseIdleConnections()
}

// longLived is a transport whose connection lives until the remote is
// closed, however short the context given to Connect is.
type longLived struct {
	inner sdk.Transport
	r     *remote
}

// Connect connects inner with the remote's lifetime context, giving up
// (and cancelling it) when ctx is done first.
func (l *longLived) Connect(ctx context.Context) (sdk.Connection, error) {
	type result struct {
		c   sdk.Connection
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := l.inner.Connect(l.r.life)
		ch <- result{c, err}
	}()
	select {
	case res := <-ch:
		return res.c, res.err
	case <-ctx.Done():
		l.r.cancel()
		go func() {
			if res := <-ch; res.c != nil {
				res.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// RoundTrip implements http.RoundTripper: it adds the configured headers
// (those the MCP client did not set itself) and records error statuses.
func (r *remote) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	for k, vs := range r.header {
		if _, set := out.Header[k]; !set {
			out.Header[k] = vs
		}
	}
	resp, err := r.base.RoundTrip(out)
	if err == nil && resp.StatusCode >= 400 {
		r.lastStatus.Store(int32(resp.StatusCode))
	}
	return resp, err
}

// newRemote builds the transport of a remote server from its expanded
// configuration; raw is the configured one, for messages.
func newRemote(raw, exp ServerConfig) (*remote, sdk.Transport, error) {
	u, err := url.Parse(*exp.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, fmt.Errorf("url %q is not an http or https URL once its placeholders are filled", *raw.URL)
	}
	h := http.Header{}
	for k, v := range exp.Headers {
		h.Set(k, v)
	}
	if a := exp.Auth; a != nil {
		switch a.Strategy {
		case AuthBearer:
			h.Set("Authorization", "Bearer "+deref(a.Token))
		case AuthAPIKey:
			name := "X-API-Key"
			if a.HeaderName != nil {
				name = *a.HeaderName
			}
			h.Set(name, deref(a.Token))
		case AuthBasic:
			h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(deref(a.Username)+":"+deref(a.Password))))
		case AuthHeader:
			h.Set(deref(a.HeaderName), deref(a.HeaderValue))
		}
	}
	r := &remote{base: http.DefaultTransport.(*http.Transport).Clone(), header: h}
	r.life, r.cancel = context.WithCancel(context.Background())
	client := &http.Client{Transport: r}
	if raw.TransportKind() == TransportSSE {
		return r, &longLived{&sdk.SSEClientTransport{Endpoint: *exp.URL, HTTPClient: client}, r}, nil
	}
	return r, &sdk.StreamableClientTransport{Endpoint: *exp.URL, HTTPClient: client, DisableStandaloneSSE: true}, nil
}

// statusHint explains the last HTTP error status, or "".
func (r *remote) statusHint() string {
	code := int(r.lastStatus.Load())
	if code == 0 {
		return ""
	}
	s := fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		s += " (check the credentials in headers/auth)"
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		s += " (check the URL and its path, and the transport)"
	}
	return s
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
