package llm

// The OpenAI-compatible Chat Completions client: the wire types of a request,
// a completion and a streamed chunk, the HTTP call, the server-sent events of
// a stream and the accumulation of its chunks into one completion. It makes
// one attempt per call; Client.Complete retries.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// defaultBaseURL is where requests go when the config has no base URL.
	defaultBaseURL = "https://api.openai.com/v1"
	// maxBodyBytes bounds a completion's body and each line of a stream.
	maxBodyBytes = 32 << 20
	// maxErrorBodyBytes bounds how much of an error answer's body is read.
	maxErrorBodyBytes = 1 << 20
	// responseHeaderTimeout bounds the wait for an answer's headers once the
	// request is sent. The body, a long stream, is not bounded by it.
	responseHeaderTimeout = 10 * time.Minute
	// maxChoiceIndex is the largest choice index a stream may use.
	maxChoiceIndex = 127
	// maxToolCallGrowth bounds how many tool calls one tool call index of a
	// chunk may add to its choice.
	maxToolCallGrowth = 128
)

// chatRequest is the body of POST chat/completions, in wire order.
type chatRequest struct {
	Messages            []chatMessage  `json:"messages"`
	Model               string         `json:"model"`
	MaxCompletionTokens *int64         `json:"max_completion_tokens,omitempty"`
	Seed                *int64         `json:"seed,omitempty"`
	Temperature         *float64       `json:"temperature,omitempty"`
	TopP                *float64       `json:"top_p,omitempty"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
	StreamOptions       *streamOptions `json:"stream_options,omitempty"`
	Tools               []chatTool     `json:"tools,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatMessage is one message of a request. Content is a string or a
// []contentPart; it is nil only for an assistant turn with tool calls and
// no text, and is then left out.
type chatMessage struct {
	Content        any             `json:"content,omitempty"`
	ToolCalls      []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID     *string         `json:"tool_call_id,omitempty"`
	Role           string          `json:"role"`
	ThinkingBlocks json.RawMessage `json:"thinking_blocks,omitempty"`
}

// contentPart is a text part (Text set) or an image part (ImageURL set).
type contentPart struct {
	Text     *string   `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
	Type     string    `json:"type"`
}

type imageURL struct {
	URL string `json:"url"`
}

type chatToolCall struct {
	ID       string           `json:"id"`
	Function chatFunctionCall `json:"function"`
	Type     string           `json:"type"`
}

type chatFunctionCall struct {
	Arguments string `json:"arguments"`
	Name      string `json:"name"`
}

type chatTool struct {
	Function chatFunction `json:"function"`
	Type     string       `json:"type"`
}

type chatFunction struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters,omitzero"`
}

// looseString is a string of an answer. It takes any JSON value, so that a
// provider's odd types do not fail a call: a string as is, null as "", and
// any other value as its JSON text.
type looseString string

func (s *looseString) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*s = ""
	case len(b) > 0 && b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = looseString(v)
	default:
		*s = looseString(b)
	}
	return nil
}

// looseInt is a count of an answer. It takes a number, which is truncated,
// or a string holding one; any other value is 0.
type looseInt int64

func (n *looseInt) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	*n = 0
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		*n = looseInt(i)
	} else if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		*n = looseInt(f)
	}
	return nil
}

// chatCompletion is a completion: the answer to a request without stream,
// or the accumulated chunks of a stream. Fields of other types than these
// are left at their zero value, not failed on.
type chatCompletion struct {
	ID             looseString     `json:"id"`
	Object         looseString     `json:"object,omitempty"`
	Created        looseInt        `json:"created,omitempty"`
	Model          looseString     `json:"model"`
	Choices        []chatChoice    `json:"choices"`
	Usage          chatUsage       `json:"usage"`
	PromptTokenIDs json.RawMessage `json:"prompt_token_ids,omitempty"`
}

type chatChoice struct {
	Index        looseInt        `json:"index"`
	Message      answerMessage   `json:"message"`
	FinishReason looseString     `json:"finish_reason"`
	TokenIDs     json.RawMessage `json:"token_ids,omitempty"`
}

// answerMessage is a choice's message, or a chunk's delta of one. Its
// reasoning_content and thinking_blocks are kept as JSON: providers shape
// them as they like.
type answerMessage struct {
	Role             looseString      `json:"role,omitempty"`
	Content          looseString      `json:"content"`
	ReasoningContent json.RawMessage  `json:"reasoning_content,omitempty"`
	ThinkingBlocks   json.RawMessage  `json:"thinking_blocks,omitempty"`
	ToolCalls        []answerToolCall `json:"tool_calls,omitempty"`
}

// answerToolCall is a tool call of a message, or a delta of one. Index is
// set in deltas only: it says which tool call a delta continues.
type answerToolCall struct {
	Index    looseInt    `json:"index,omitempty"`
	ID       looseString `json:"id"`
	Type     looseString `json:"type,omitempty"`
	Function struct {
		Name      looseString `json:"name"`
		Arguments looseString `json:"arguments"`
	} `json:"function"`
}

type chatUsage struct {
	PromptTokens        looseInt `json:"prompt_tokens"`
	CompletionTokens    looseInt `json:"completion_tokens"`
	TotalTokens         looseInt `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens looseInt `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens looseInt `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u *chatUsage) add(v chatUsage) {
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
	u.TotalTokens += v.TotalTokens
	u.PromptTokensDetails.CachedTokens += v.PromptTokensDetails.CachedTokens
	u.CompletionTokensDetails.ReasoningTokens += v.CompletionTokensDetails.ReasoningTokens
}

// chatChunk is one event of a stream. Error is set when the event reports
// a failure instead.
type chatChunk struct {
	ID      looseString     `json:"id"`
	Created looseInt        `json:"created"`
	Model   looseString     `json:"model"`
	Choices []chunkChoice   `json:"choices"`
	Usage   chatUsage       `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type chunkChoice struct {
	Index        looseInt      `json:"index"`
	Delta        answerMessage `json:"delta"`
	FinishReason looseString   `json:"finish_reason"`
}

// decodeAnswer decodes the JSON object data into v. A field whose value has
// another type than v's field is skipped, not failed on; data that is not
// JSON, or not an object, is an error.
func decodeAnswer(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return nil
	}
	return err
}

// apiError is an answer of HTTP status 400 or more: its status and headers,
// the fields of its JSON error body {"error":{"message","type","code",
// "param"}}, the JSON of that "error" value as sent (Raw, "" when the body
// has none) and the body itself, of which at most maxErrorBodyBytes are
// read. An "error" that is a string is taken as the message.
type apiError struct {
	StatusCode int
	Header     http.Header
	Message    string
	Type       string
	Code       string
	Param      string
	Raw        string
	Body       []byte
}

func (e *apiError) Error() string {
	return fmt.Sprintf("LLM API error: HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
}

// newAPIError reads the error answer's body, bounded, and parses it. It
// returns the read's failure, if any, instead.
func newAPIError(resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
	if err != nil {
		return err
	}
	e := &apiError{StatusCode: resp.StatusCode, Header: resp.Header, Body: body}
	var envelope struct {
		Error json.RawMessage `json:"error"`
	}
	// The body's first JSON value counts; what follows it is ignored.
	if json.NewDecoder(bytes.NewReader(body)).Decode(&envelope) != nil || envelope.Error == nil {
		return e
	}
	e.Raw = string(envelope.Error)
	var fields struct {
		Message looseString `json:"message"`
		Type    looseString `json:"type"`
		Code    looseString `json:"code"`
		Param   looseString `json:"param"`
	}
	var text string
	switch {
	case json.Unmarshal(envelope.Error, &text) == nil:
		e.Message = text
	case decodeAnswer(envelope.Error, &fields) == nil:
		e.Message, e.Type, e.Code, e.Param = string(fields.Message), string(fields.Type), string(fields.Code), string(fields.Param)
	}
	return e
}

// chatAPI sends Chat Completions requests to one endpoint. It is safe for
// concurrent use.
type chatAPI struct {
	url     string      // the endpoint's chat/completions URL
	urlErr  error       // why the base URL does not parse, if it does not
	header  http.Header // the headers of every request
	extra   []bodyField // the config's litellm_extra_body fields, by name
	timeout time.Duration
}

// bodyField is a top-level field of a request body.
type bodyField struct {
	name  string
	value json.RawMessage
}

// newChatAPI prepares the endpoint of cfg: the base URL (the OpenAI API when
// unset) with one trailing slash, then chat/completions; the API key as a
// bearer token ("not-needed" when unset), which an extra header named
// Authorization replaces; the config's extra headers and extra body fields
// (each ignored whole when it is not a JSON object of that shape), and its
// timeout. A base URL that does not parse fails each request.
func newChatAPI(cfg Config) *chatAPI {
	a := &chatAPI{header: http.Header{}}
	base := defaultBaseURL
	if cfg.BaseURL != nil && *cfg.BaseURL != "" {
		base = *cfg.BaseURL
	}
	base = strings.TrimRight(base, "/") + "/"
	if u, err := url.Parse(base); err != nil {
		a.urlErr = fmt.Errorf("parse the LLM base URL: %w", err)
	} else {
		if u.Path != "" && !strings.HasSuffix(u.Path, "/") {
			// A query ends the URL: the slash goes before it.
			u.Path += "/"
		}
		// Resolving drops the base URL's query, as it drops a file name.
		a.url = u.ResolveReference(&url.URL{Path: "chat/completions"}).String()
	}
	key := "not-needed"
	if cfg.APIKey != nil && *cfg.APIKey != "" {
		key = *cfg.APIKey
	}
	a.header.Set("Content-Type", "application/json")
	a.header.Set("Accept", "application/json")
	a.header.Set("User-Agent", "acs")
	a.header.Set("Authorization", "Bearer "+key)
	if len(cfg.ExtraHeaders) > 0 {
		var h map[string]string
		if json.Unmarshal(cfg.ExtraHeaders, &h) == nil {
			for k, v := range h {
				a.header.Set(k, v)
			}
		}
	}
	if len(cfg.LiteLLMExtraBody) > 0 {
		var extra map[string]json.RawMessage
		if json.Unmarshal(cfg.LiteLLMExtraBody, &extra) == nil {
			for name, v := range extra {
				var b bytes.Buffer
				if json.Compact(&b, v) == nil {
					a.extra = append(a.extra, bodyField{name, b.Bytes()})
				}
			}
			slices.SortFunc(a.extra, func(x, y bodyField) int { return strings.Compare(x.name, y.name) })
		}
	}
	if cfg.Timeout != nil && *cfg.Timeout > 0 {
		a.timeout = time.Duration(*cfg.Timeout * float64(time.Second))
	}
	return a
}

// body is the request body sent for req: req's JSON without HTML escaping,
// the extra body fields, then "stream":true when stream is set. A field so
// set replaces req's field of that name in place, or is added at the end.
// It fails only when req does not encode (a tool's parameters that JSON
// cannot hold).
func (a *chatAPI) body(req *chatRequest, stream bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(req); err != nil {
		return nil, err
	}
	set := a.extra
	if stream {
		set = append(slices.Clip(set), bodyField{"stream", json.RawMessage("true")})
	}
	if len(set) == 0 {
		return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
	}
	fields, err := objectFields(b.Bytes())
	if err != nil {
		return nil, err
	}
	for _, f := range set {
		i := slices.IndexFunc(fields, func(g bodyField) bool { return g.name == f.name })
		if i < 0 {
			fields = append(fields, f)
		} else {
			fields[i].value = f.value
		}
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			out.WriteByte(',')
		}
		name, err := json.Marshal(f.name)
		if err != nil {
			return nil, err
		}
		out.Write(name)
		out.WriteByte(':')
		out.Write(f.value)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// objectFields splits the JSON object data into its fields, in order.
func objectFields(data []byte) ([]bodyField, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var fields []bodyField
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		fields = append(fields, bodyField{name, v})
	}
	return fields, nil
}

// httpClient is the one HTTP client of every chatAPI: the default
// transport with responseHeaderTimeout (unless the default transport was
// replaced by another kind), following redirects only within the origin of
// the request's URL, where the key may go.
var httpClient = sync.OnceValue(func() *http.Client {
	transport := http.DefaultTransport
	if t, ok := transport.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = responseHeaderTimeout
		// Conversations share the pool: keep a connection for each.
		t.MaxIdleConnsPerHost = t.MaxIdleConns
		transport = t
	}
	return &http.Client{Transport: transport, CheckRedirect: sameOriginRedirect}
})

// errOtherOrigin refuses a redirect to another origin than the request's.
var errOtherOrigin = errors.New("llm: request URL origin must match the configured base URL")

// sameOriginRedirect allows at most 10 redirects, each to the scheme, host
// and port of the first request.
func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	first := via[0].URL
	if !strings.EqualFold(req.URL.Scheme, first.Scheme) || !strings.EqualFold(req.URL.Hostname(), first.Hostname()) ||
		effectivePort(req.URL) != effectivePort(first) {
		return errOtherOrigin
	}
	return nil
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

// post sends body and returns the answer when its status is below 400; the
// caller closes its body. An answer of 400 or more is returned as *apiError
// with its body read and closed. When ctx ends before the answer arrives,
// ctx.Err() itself is returned; other failures are http.Client.Do's, or the
// base URL's parse error.
func (a *chatAPI) post(ctx context.Context, body []byte) (*http.Response, error) {
	if a.urlErr != nil {
		return nil, a.urlErr
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build the LLM request: %w", err)
	}
	req.Header = a.header.Clone()
	resp, err := httpClient().Do(req)
	if ctx.Err() != nil {
		if resp != nil {
			resp.Body.Close()
		}
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		return nil, newAPIError(resp)
	}
	return resp, nil
}

// complete sends a request without stream and returns the completion, its
// JSON as received and the answer, whose body is closed. Besides post's
// failures it fails when the body cannot be read, is larger than
// maxBodyBytes, is not of a JSON content type, or is not a JSON object.
func (a *chatAPI) complete(ctx context.Context, body []byte) (*chatCompletion, json.RawMessage, *http.Response, error) {
	resp, err := a.post(ctx, body)
	if err != nil {
		return nil, nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("error reading response body: %w", err)
	}
	if len(data) > maxBodyBytes {
		return nil, nil, nil, fmt.Errorf("error reading response body: longer than %d bytes", maxBodyBytes)
	}
	contentType := resp.Header.Get("Content-Type")
	if mediaType, _, _ := mime.ParseMediaType(contentType); !strings.Contains(mediaType, "application/json") && !strings.HasSuffix(mediaType, "+json") {
		return nil, nil, nil, fmt.Errorf("the response's content type is %q, not application/json", contentType)
	}
	// The body's first JSON value counts; what follows it is ignored.
	var raw json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&raw); err != nil {
		return nil, nil, nil, fmt.Errorf("error parsing response json: %w", err)
	}
	cc := &chatCompletion{}
	if err := decodeAnswer(raw, cc); err != nil {
		return nil, nil, nil, fmt.Errorf("error parsing response json: %w", err)
	}
	return cc, raw, resp, nil
}

// stream sends a streaming request and passes each chunk to onChunk, in
// order. It returns the answer, whose body is closed, once the stream ends:
// at an event "[DONE]" or at the end of the body. Besides post's failures
// it fails, after the chunks before, at an event with an "error" field
// ("received error while streaming: " and its value), at an event that is
// not a JSON object, at a line longer than maxBodyBytes and when a read
// fails.
func (a *chatAPI) stream(ctx context.Context, body []byte, onChunk func(*chatChunk)) (*http.Response, error) {
	resp, err := a.post(ctx, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	err = readEvents(resp.Body, func(data []byte) (bool, error) {
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			return false, nil
		}
		chunk := &chatChunk{}
		if err := decodeAnswer(data, chunk); err != nil {
			return false, err
		}
		if chunk.Error != nil {
			var msg looseString
			_ = msg.UnmarshalJSON(chunk.Error)
			return false, fmt.Errorf("received error while streaming: %s", msg)
		}
		onChunk(chunk)
		return true, nil
	})
	return resp, err
}

// readEvents reads server-sent events from r and passes the data of each
// to onData until onData returns false or an error (returned), r ends, or
// a read fails (its error is returned). An event's data is its data lines,
// each followed by "\n"; other fields and comments are skipped. An event is
// passed at the blank line ending it: an unfinished last one is dropped,
// and so is one without data. A line longer than maxBodyBytes fails with
// bufio.ErrTooLong.
func readEvents(r io.Reader, onData func(data []byte) (bool, error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxBodyBytes)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if len(data) == 0 {
				continue
			}
			if more, err := onData(data); err != nil || !more {
				return err
			}
			data = nil
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		if string(name) == "data" {
			data = append(append(data, value...), '\n')
		}
	}
	return sc.Err()
}

// streamAccumulator builds a stream's completion from its chunks. Each
// choice, by its index, gathers its content, and each of its tool calls, by
// index, its name and arguments; a choice's finish reason is the last
// chunk's, its role and a tool call's id and type the last non-empty ones.
// Usage is summed over the chunks, the model and creation time are the last
// chunk's, and the id is the first non-empty one.
type streamAccumulator struct {
	id      string
	model   string
	created int64
	choices []accumulatedChoice
	usage   chatUsage
}

type accumulatedChoice struct {
	index        int64
	role         string
	finishReason string
	content      []byte
	toolCalls    []accumulatedToolCall
}

type accumulatedToolCall struct {
	id, typ         string
	name, arguments []byte
}

// add merges chunk into the completion and reports whether it did. A chunk
// is left out whole when the stream has an id and the chunk's differs, when
// a choice index is outside 0 to maxChoiceIndex, when a tool call index is
// below -1 (-1 means 0, as some providers send for a single call), or when
// its tool call indexes would add more than maxToolCallGrowth calls for one
// index, or more than maxToolCallGrowth-1 calls beyond the chunk's own
// entries in all.
func (a *streamAccumulator) add(chunk *chatChunk) bool {
	if a.id != "" && string(chunk.ID) != a.id {
		return false
	}
	if !a.indexesFit(chunk) {
		return false
	}
	if a.id == "" {
		a.id = string(chunk.ID)
	}
	for i := range chunk.Choices {
		d := &chunk.Choices[i]
		for len(a.choices) <= int(d.Index) {
			a.choices = append(a.choices, accumulatedChoice{})
		}
		c := &a.choices[d.Index]
		c.index = int64(d.Index)
		c.finishReason = string(d.FinishReason)
		if d.Delta.Role != "" {
			c.role = string(d.Delta.Role)
		}
		c.content = append(c.content, d.Delta.Content...)
		for _, tc := range d.Delta.ToolCalls {
			j := toolCallIndex(tc.Index)
			for len(c.toolCalls) <= j {
				c.toolCalls = append(c.toolCalls, accumulatedToolCall{})
			}
			call := &c.toolCalls[j]
			if tc.ID != "" {
				call.id = string(tc.ID)
			}
			if tc.Type != "" {
				call.typ = string(tc.Type)
			}
			call.name = append(call.name, tc.Function.Name...)
			call.arguments = append(call.arguments, tc.Function.Arguments...)
		}
	}
	a.usage.add(chunk.Usage)
	a.model = string(chunk.Model)
	a.created = int64(chunk.Created)
	return true
}

// toolCallIndex is a delta's tool call index, -1 read as 0.
func toolCallIndex(i looseInt) int {
	if i == -1 {
		return 0
	}
	return int(i)
}

// indexesFit reports whether chunk's choice and tool call indexes are
// within the bounds add states.
func (a *streamAccumulator) indexesFit(chunk *chatChunk) bool {
	growth := maxToolCallGrowth - 1
	for _, c := range chunk.Choices {
		growth += len(c.Delta.ToolCalls)
	}
	var calls [maxChoiceIndex + 1]int
	var counted [maxChoiceIndex + 1]bool
	for _, c := range chunk.Choices {
		if c.Index < 0 || c.Index > maxChoiceIndex {
			return false
		}
		i := int(c.Index)
		if !counted[i] {
			if i < len(a.choices) {
				calls[i] = len(a.choices[i].toolCalls)
			}
			counted[i] = true
		}
		for _, tc := range c.Delta.ToolCalls {
			if tc.Index < -1 {
				return false
			}
			j := toolCallIndex(tc.Index)
			if j < calls[i] {
				continue
			}
			if j-calls[i] >= maxToolCallGrowth || j+1-calls[i] > growth {
				return false
			}
			growth -= j + 1 - calls[i]
			calls[i] = j + 1
		}
	}
	return true
}

// completion is the accumulated completion.
func (a *streamAccumulator) completion() *chatCompletion {
	cc := &chatCompletion{ID: looseString(a.id), Object: "chat.completion", Created: looseInt(a.created),
		Model: looseString(a.model), Usage: a.usage}
	for _, c := range a.choices {
		ch := chatChoice{Index: looseInt(c.index), FinishReason: looseString(c.finishReason),
			Message: answerMessage{Role: looseString(c.role), Content: looseString(c.content)}}
		for _, t := range c.toolCalls {
			tc := answerToolCall{ID: looseString(t.id), Type: looseString(t.typ)}
			tc.Function.Name, tc.Function.Arguments = looseString(t.name), looseString(t.arguments)
			ch.Message.ToolCalls = append(ch.Message.ToolCalls, tc)
		}
		cc.Choices = append(cc.Choices, ch)
	}
	return cc
}
