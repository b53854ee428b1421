// Package mcptest provides an MCP tool server for tests, built with the
// go-sdk, reachable over stdio (run as a subprocess) or streamable HTTP.
//
// Every tool call is rejected (an isError result saying "unauthorized")
// unless the caller presented the expected token: over stdio in the
// API_TOKEN environment variable, over HTTP in an "Authorization: Bearer"
// header.
//
// Tools: echo {text}, add {a, b} (structured result {sum}), image (a PNG),
// fail (an isError result), slow {seconds} (sleeps, honouring
// cancellation), whoami (returns the token it was given, to test masking),
// getenv {name} (a variable of the server's environment).
package mcptest

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// PNG is the 1x1 image the image tool returns.
var PNG, _ = base64.StdEncoding.DecodeString(
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

// Unauthorized is the text of a rejected call.
const Unauthorized = "unauthorized: the API token is missing or wrong"

// TokenFunc returns the token the caller of a tool presented.
type TokenFunc func(req *sdk.CallToolRequest) string

// EchoIn is the input of echo.
type EchoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

// AddIn is the input of add.
type AddIn struct {
	A float64 `json:"a" jsonschema:"the first number"`
	B float64 `json:"b" jsonschema:"the second number"`
}

// AddOut is the structured result of add.
type AddOut struct {
	Sum float64 `json:"sum"`
}

// SlowIn is the input of slow.
type SlowIn struct {
	Seconds float64 `json:"seconds"`
}

// GetenvIn is the input of getenv.
type GetenvIn struct {
	Name string `json:"name"`
}

// Empty is the input of the tools without arguments.
type Empty struct{}

// NewServer builds the test server named name; calls are accepted when
// token(req) equals want (compared in constant time; want "" accepts any
// call). Tool names are prefixed with prefix.
func NewServer(name, prefix, want string, token TokenFunc) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: name, Version: "0.0.1"}, nil)
	ok := func(req *sdk.CallToolRequest) bool {
		return want == "" || subtle.ConstantTimeCompare([]byte(token(req)), []byte(want)) == 1
	}
	deny := &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: Unauthorized}}}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(s, &sdk.Tool{Name: prefix + "echo", Description: "Echo the text back."},
		func(_ context.Context, req *sdk.CallToolRequest, in EchoIn) (*sdk.CallToolResult, any, error) {
			if !ok(req) {
				return deny, nil, nil
			}
			return text("echo: " + in.Text), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: prefix + "add", Title: "Add numbers", Description: "Add a and b.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(bool)}},
		func(_ context.Context, req *sdk.CallToolRequest, in AddIn) (*sdk.CallToolResult, AddOut, error) {
			if !ok(req) {
				return deny, AddOut{}, nil
			}
			return nil, AddOut{Sum: in.A + in.B}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: prefix + "image", Description: "Return a 1x1 PNG."},
		func(_ context.Context, req *sdk.CallToolRequest, _ Empty) (*sdk.CallToolResult, any, error) {
			if !ok(req) {
				return deny, nil, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a tiny image"},
				&sdk.ImageContent{Data: PNG, MIMEType: "image/png"},
			}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: prefix + "fail", Description: "Always fail."},
		func(_ context.Context, req *sdk.CallToolRequest, _ Empty) (*sdk.CallToolResult, any, error) {
			if !ok(req) {
				return deny, nil, nil
			}
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the tool failed on purpose"}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: prefix + "slow", Description: "Sleep for seconds."},
		func(ctx context.Context, req *sdk.CallToolRequest, in SlowIn) (*sdk.CallToolResult, any, error) {
			if !ok(req) {
				return deny, nil, nil
			}
			select {
			case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
				return text("slept"), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	sdk.AddTool(s, &sdk.Tool{Name: prefix + "whoami", Description: "Show the token the call presented.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *sdk.CallToolRequest, _ Empty) (*sdk.CallToolResult, any, error) {
			if !ok(req) {
				return deny, nil, nil
			}
			return text("you are token " + token(req)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: prefix + "getenv", Description: "Show an environment variable of the server."},
		func(_ context.Context, req *sdk.CallToolRequest, in GetenvIn) (*sdk.CallToolResult, any, error) {
			if !ok(req) {
				return deny, nil, nil
			}
			v, set := os.LookupEnv(in.Name)
			if !set {
				return text(in.Name + " is unset"), nil, nil
			}
			return text(in.Name + "=" + v), nil, nil
		})
	return s
}

// EnvToken reads the token of a stdio server from API_TOKEN.
func EnvToken(*sdk.CallToolRequest) string { return os.Getenv("API_TOKEN") }

// BearerToken reads the token of an HTTP request's Authorization header.
func BearerToken(req *sdk.CallToolRequest) string {
	if req.Extra == nil || req.Extra.Header == nil {
		return ""
	}
	h := req.Extra.Header.Get("Authorization")
	if len(h) > 7 && h[:7] == "Bearer " {
		return h[7:]
	}
	return ""
}

// RunStdio serves the test server on stdin/stdout until stdin closes,
// accepting calls made with API_TOKEN equal to want.
func RunStdio(ctx context.Context, prefix, want string) error {
	return NewServer("mcptest-stdio", prefix, want, EnvToken).Run(ctx, &sdk.StdioTransport{})
}

// HTTPHandler serves the test server over streamable HTTP, accepting calls
// made with "Authorization: Bearer want".
func HTTPHandler(prefix, want string) http.Handler {
	s := NewServer("mcptest-http", prefix, want, BearerToken)
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
}

// SSEHandler serves the test server over the (older) SSE transport,
// accepting calls made with "Authorization: Bearer want".
func SSEHandler(prefix, want string) http.Handler {
	s := NewServer("mcptest-sse", prefix, want, BearerToken)
	return sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return s }, nil)
}

// RequireBearer wraps h so that every request without "Authorization:
// Bearer want" gets HTTP 401.
func RequireBearer(want string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+want)) != 1 {
			http.Error(w, fmt.Sprintf("%d unauthorized", http.StatusUnauthorized), http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
