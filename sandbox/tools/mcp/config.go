// Package mcp connects the agent to MCP (Model Context Protocol) tool
// servers: local servers started as processes that speak MCP over
// stdin/stdout, and remote servers reached over streamable HTTP or SSE.
//
// The configuration is the `.mcp.json` shape shared by OpenHands and Claude
// ({"mcpServers": {name: {...}}}); string values may hold ${NAME} and
// ${NAME:-default} placeholders that are filled from the conversation's
// secrets when connecting (see Expand and Options.Lookup).
//
// Secrets guarantees: the expanded configuration is used only to start the
// process (its env, arguments and working directory) and to build the HTTP
// requests (its URL and headers). It is never logged, never part of an
// error and never kept in a form this package exposes. Errors describe a
// server by its unexpanded configuration (the command name or the URL with
// its placeholders); any text that reaches an error, a log line or an
// observation passes through Options.Mask, and error text additionally has
// every substituted value of at least four bytes replaced by its ${NAME}
// placeholder. A stdio server gets only Options.Env plus its configured env,
// never the rest of this process's environment.
package mcp

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/acs-project/acs/events/strictjson"
)

// Transport kinds, as normalised by ServerConfig.TransportKind.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// transportValues are the accepted values of "transport" (and "type").
var transportValues = []string{"stdio", "http", "streamable-http", "sse"}

// DefaultCallTimeout is the per-call timeout in seconds when a server sets
// none.
const DefaultCallTimeout = 300

// ServerConfig is one MCP tool server (the OpenHands/Claude `.mcp.json`
// shape).
//
// A stdio server has Command (and optionally Args, Env, Cwd); a remote
// server has URL (and optionally Transport, Headers, Auth). Transport is
// "http" or "streamable-http" (the default for URLs) or "sse"; "stdio" is
// accepted for command servers. The Claude key "type" is an alias of
// "transport". Timeout is the per-call timeout in seconds (default 300);
// Enabled defaults to true.
//
// Decoding with ParseConfig is strict: unknown keys, wrong types and
// fields that do not apply to the server's kind are errors.
type ServerConfig struct {
	Command   *string           `json:"command"`
	Args      []string          `json:"args"`
	Env       map[string]string `json:"env" acs:"nullable"`
	Cwd       *string           `json:"cwd"`
	URL       *string           `json:"url"`
	Transport *string           `json:"transport"`
	Type      *string           `json:"type"`
	Headers   map[string]string `json:"headers" acs:"nullable"`
	Auth      *Auth             `json:"auth"`
	Timeout   *float64          `json:"timeout" acs:"gt=0"`
	Enabled   *bool             `json:"enabled"`
}

// AuthStrategy is how a remote server authenticates requests.
type AuthStrategy string

// The authentication strategies.
const (
	AuthNone   AuthStrategy = "none"
	AuthAPIKey AuthStrategy = "api_key"
	AuthBearer AuthStrategy = "bearer"
	AuthBasic  AuthStrategy = "basic"
	AuthHeader AuthStrategy = "header"
)

// EnumValues implements strictjson.Enum.
func (AuthStrategy) EnumValues() []string {
	return []string{"none", "api_key", "bearer", "basic", "header"}
}

// Auth is the authentication of a remote server:
//
//	none     nothing is added
//	api_key  header header_name (default X-API-Key) set to token
//	bearer   Authorization: Bearer token
//	basic    Authorization: Basic base64(username:password)
//	header   header header_name set to header_value
//
// A field the strategy does not use is an error. Auth takes precedence
// over a header of the same name in Headers.
type Auth struct {
	Strategy    AuthStrategy `json:"strategy" acs:"required"`
	Token       *string      `json:"token"`
	Username    *string      `json:"username"`
	Password    *string      `json:"password"`
	HeaderName  *string      `json:"header_name"`
	HeaderValue *string      `json:"header_value"`
}

// ValidateStrict checks that the strategy has the fields it needs and no
// others.
func (a *Auth) ValidateStrict() []strictjson.Error {
	fields := []struct {
		name string
		v    *string
	}{{"token", a.Token}, {"username", a.Username}, {"password", a.Password},
		{"header_name", a.HeaderName}, {"header_value", a.HeaderValue}}
	need := map[AuthStrategy][]string{
		AuthAPIKey: {"token"}, AuthBearer: {"token"}, AuthBasic: {"username"},
		AuthHeader: {"header_name", "header_value"},
	}
	allowed := map[AuthStrategy][]string{
		AuthAPIKey: {"token", "header_name"}, AuthBearer: {"token"},
		AuthBasic: {"username", "password"}, AuthHeader: {"header_name", "header_value"},
	}
	var errs []strictjson.Error
	for _, f := range fields {
		has := f.v != nil
		switch {
		case !has && contains(need[a.Strategy], f.name):
			errs = append(errs, strictjson.Error{Loc: []any{f.name}, Type: "missing",
				Msg: fmt.Sprintf("Field required for strategy '%s'", a.Strategy)})
		case has && !contains(allowed[a.Strategy], f.name):
			errs = append(errs, strictjson.Error{Loc: []any{f.name}, Type: "extra_forbidden",
				Msg: fmt.Sprintf("Not used by strategy '%s'", a.Strategy)})
		}
	}
	if a.HeaderName != nil && !strings.Contains(*a.HeaderName, "${") && !validHeaderName(*a.HeaderName) {
		errs = append(errs, strictjson.Error{Loc: []any{"header_name"}, Type: "value_error",
			Msg: "Invalid HTTP header name"})
	}
	return errs
}

// ValidateStrict checks the rules across fields: exactly one of command and
// url, the transport, and fields that apply to one kind of server only.
func (c *ServerConfig) ValidateStrict() []strictjson.Error {
	var errs []strictjson.Error
	add := func(loc []any, typ, msg string) {
		errs = append(errs, strictjson.Error{Loc: loc, Msg: msg, Type: typ})
	}
	switch {
	case c.Command == nil && c.URL == nil:
		add([]any{}, "value_error", "Exactly one of 'command' (a stdio server) or 'url' (a remote server) must be set; neither is")
		return errs
	case c.Command != nil && c.URL != nil:
		add([]any{}, "value_error", "Exactly one of 'command' (a stdio server) or 'url' (a remote server) must be set, not both")
		return errs
	}
	tr := ""
	for _, f := range []struct {
		key string
		v   *string
	}{{"transport", c.Transport}, {"type", c.Type}} {
		if f.v == nil {
			continue
		}
		if !contains(transportValues, *f.v) {
			add([]any{f.key}, "enum", strictjson.EnumMessage(transportValues))
			continue
		}
		if tr != "" && normTransport(tr) != normTransport(*f.v) {
			add([]any{f.key}, "value_error", fmt.Sprintf("'type' is an alias of 'transport' and they disagree (%q and %q)", tr, *f.v))
			continue
		}
		tr = *f.v
	}
	if c.Command != nil {
		if *c.Command == "" {
			add([]any{"command"}, "string_too_short", "String should have at least 1 character")
		}
		if tr != "" && tr != "stdio" {
			add([]any{transportKey(c)}, "value_error", fmt.Sprintf("A 'command' server speaks stdio, not %q", tr))
		}
		if c.Headers != nil {
			add([]any{"headers"}, "extra_forbidden", "Only a remote ('url') server has headers")
		}
		if c.Auth != nil {
			add([]any{"auth"}, "extra_forbidden", "Only a remote ('url') server has auth")
		}
		return errs
	}
	if tr == "stdio" {
		add([]any{transportKey(c)}, "value_error", "A 'url' server cannot use the stdio transport")
	}
	if msg := checkURL(*c.URL); msg != "" {
		add([]any{"url"}, "url_parsing", msg)
	}
	for _, f := range []struct {
		key string
		set bool
	}{{"args", c.Args != nil}, {"env", c.Env != nil}, {"cwd", c.Cwd != nil}} {
		if f.set {
			add([]any{f.key}, "extra_forbidden", "Only a stdio ('command') server has "+f.key)
		}
	}
	for _, k := range sortedKeys(c.Headers) {
		if !validHeaderName(k) {
			add([]any{"headers", k}, "value_error", "Invalid HTTP header name")
		}
	}
	return errs
}

// validate applies the rules ParseConfig applies across fields, for
// configurations built in code.
func (c ServerConfig) validate() strictjson.Errors {
	errs := strictjson.Errors(c.ValidateStrict())
	if c.Auth != nil {
		errs = append(errs, strictjson.Prefix(c.Auth.ValidateStrict(), "auth")...)
	}
	return errs
}

// checkURL validates a URL without placeholders; one with placeholders is
// checked after expansion.
func checkURL(s string) string {
	if strings.Contains(s, "${") {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "Input should be an http or https URL"
	}
	return ""
}

func transportKey(c *ServerConfig) string {
	if c.Transport == nil && c.Type != nil {
		return "type"
	}
	return "transport"
}

func normTransport(s string) string {
	switch s {
	case "", "http", "streamable-http":
		return TransportStreamableHTTP
	}
	return s
}

// TransportKind is the normalised transport: "stdio" for command servers,
// "streamable-http" or "sse" for URL servers.
func (c ServerConfig) TransportKind() string {
	if c.Command != nil {
		return TransportStdio
	}
	tr := ""
	if c.Type != nil {
		tr = *c.Type
	}
	if c.Transport != nil {
		tr = *c.Transport
	}
	return normTransport(tr)
}

// IsEnabled reports Enabled, defaulting to true.
func (c ServerConfig) IsEnabled() bool { return c.Enabled == nil || *c.Enabled }

// CallTimeout is Timeout in seconds, defaulting to DefaultCallTimeout (also
// for a Timeout that is not positive).
func (c ServerConfig) CallTimeout() float64 {
	if c.Timeout == nil || !(*c.Timeout > 0) {
		return DefaultCallTimeout
	}
	return *c.Timeout
}

// describe names the server's endpoint for errors and logs: the command or
// the URL as configured.
func (c ServerConfig) describe() string {
	if c.Command != nil {
		return fmt.Sprintf("command %q", *c.Command)
	}
	if c.URL != nil {
		return fmt.Sprintf("url %q", *c.URL)
	}
	return "no command or url"
}

// String describes the server without the values that are commonly secret
// (env and header values, auth fields), so that printing a ServerConfig
// with %v or logging it cannot show them. It shows the command or URL as
// they are: print only unexpanded configurations.
func (c ServerConfig) String() string {
	parts := []string{c.describe()}
	if len(c.Env) > 0 {
		parts = append(parts, "env keys "+strings.Join(sortedKeys(c.Env), ","))
	}
	if len(c.Headers) > 0 {
		parts = append(parts, "header keys "+strings.Join(sortedKeys(c.Headers), ","))
	}
	if c.Auth != nil {
		parts = append(parts, "auth "+string(c.Auth.Strategy))
	}
	return "{" + strings.Join(parts, "; ") + "}"
}

// ParseConfig decodes an MCP configuration: either {"mcpServers": {name:
// ServerConfig}} or the bare {name: ServerConfig}. It returns the servers by
// name (empty, not nil, when there are none) or strictjson.Errors whose
// locations name the server and the field, such as
// ["mcpServers", "github", "comand"], or just the server for rules across
// fields (exactly one of command and url).
func ParseConfig(raw []byte) (map[string]ServerConfig, error) {
	root, err := strictjson.Parse(raw)
	if err != nil {
		msg := "Invalid JSON"
		if se, ok := err.(*strictjson.SyntaxError); ok {
			msg = fmt.Sprintf("Invalid JSON: %s at offset %d", se.Msg, se.Offset)
		}
		return nil, strictjson.Errors{{Loc: []any{}, Msg: msg, Type: "json_invalid"}}
	}
	if root.Kind != strictjson.Object {
		return nil, strictjson.Errors{{Loc: []any{}, Msg: "Input should be a valid dictionary", Type: "dict_type"}}
	}
	servers := root
	var loc []any
	var errs strictjson.Errors
	if v, ok := root.Get("mcpServers"); ok {
		servers, loc = v, []any{"mcpServers"}
		for _, m := range root.Members {
			if m.Key != "mcpServers" {
				errs = append(errs, strictjson.Error{Loc: []any{m.Key}, Type: "extra_forbidden",
					Msg: "Extra inputs are not permitted (the configuration holds only 'mcpServers')"})
			}
		}
		if servers.Kind != strictjson.Object {
			return nil, append(errs, strictjson.Error{Loc: loc, Msg: "Input should be a valid dictionary", Type: "dict_type"})
		}
	}
	out := make(map[string]ServerConfig, len(servers.Members))
	for _, m := range servers.Members {
		sloc := append(append([]any{}, loc...), m.Key)
		if m.Key == "" {
			errs = append(errs, strictjson.Error{Loc: sloc, Msg: "A server name must not be empty", Type: "value_error"})
			continue
		}
		if _, dup := out[m.Key]; dup {
			errs = append(errs, strictjson.Error{Loc: sloc, Msg: "Duplicate server name", Type: "value_error"})
			continue
		}
		var sc ServerConfig
		if err := strictjson.DecodeValue(m.Value, &sc, sloc...); err != nil {
			es, ok := err.(strictjson.Errors)
			if !ok {
				return nil, err
			}
			errs = append(errs, es...)
			continue
		}
		out[m.Key] = sc
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
