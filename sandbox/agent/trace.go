package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/telemetry"
)

// Tracing: each conversation has a root span named "conversation" (trace id
// = conversation id), open while the conversation is loaded; under it a span
// named observability_span_name when given; under that one span per LLM call
// ("chat <model>") and per tool call ("execute_tool <name>"). Every one of
// these spans carries the observability tags and metadata, so a span exported
// before the conversation closes (or by a process that is killed, whose root
// span never ends) still has them. Text that can come from observations,
// errors or other outside sources (status descriptions, recorded errors,
// attributes set after the start, event attributes) passes through the
// secret masker before it reaches the span.

// startTrace opens the conversation's spans.
func (c *Conversation) startTrace(ctx context.Context) {
	tp := c.opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	req := c.meta.Request
	var attrs []attribute.KeyValue
	if len(req.ObservabilityTags) > 0 {
		attrs = append(attrs, attribute.StringSlice("tags", req.ObservabilityTags))
	}
	attrs = append(attrs, metadataAttributes(req.ObservabilityMetadata)...)
	c.tracer = &convTracer{Tracer: tp.Tracer(telemetry.InstrumentationName), attrs: attrs, mask: c.masker.Mask}
	root := context.WithoutCancel(ctx)
	root = trace.ContextWithSpan(root, nil)
	root = telemetry.WithTraceID(root, trace.TraceID(c.id))
	rctx, rspan := c.tracer.Start(root, "conversation", trace.WithNewRoot(),
		trace.WithAttributes(attribute.String("conversation.id", c.id.String())))
	c.spans = []trace.Span{rspan}
	c.spanCtx = rctx
	if req.ObservabilitySpanName != nil && *req.ObservabilitySpanName != "" {
		sctx, span := c.tracer.Start(rctx, *req.ObservabilitySpanName, trace.WithAttributes(attribute.String("conversation.id", c.id.String())))
		c.spans = append(c.spans, span)
		c.spanCtx = sctx
	}
}

// convTracer starts the conversation's spans: each gets the observability
// tags and metadata (masked, in case one holds a secret) and is wrapped in a
// maskedSpan, also in the returned context.
type convTracer struct {
	trace.Tracer
	attrs []attribute.KeyValue
	mask  func(string) string
}

func (t *convTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if len(t.attrs) > 0 {
		opts = append(opts, trace.WithAttributes(maskAttributes(t.mask, t.attrs)...))
	}
	if parent, ok := trace.SpanFromContext(ctx).(*maskedSpan); ok {
		// The SDK counts a parent's children only on its own span type.
		ctx = trace.ContextWithSpan(ctx, parent.Span)
	}
	ctx, span := t.Tracer.Start(ctx, name, opts...)
	ms := &maskedSpan{Span: span, mask: t.mask}
	return trace.ContextWithSpan(ctx, ms), ms
}

// maskedSpan masks the text given to a span after it started.
type maskedSpan struct {
	trace.Span
	mask func(string) string
}

func (s *maskedSpan) SetStatus(code codes.Code, description string) {
	s.Span.SetStatus(code, s.mask(description))
}

func (s *maskedSpan) SetName(name string) { s.Span.SetName(s.mask(name)) }

func (s *maskedSpan) SetAttributes(kv ...attribute.KeyValue) {
	s.Span.SetAttributes(maskAttributes(s.mask, kv)...)
}

func (s *maskedSpan) AddEvent(name string, opts ...trace.EventOption) {
	s.Span.AddEvent(s.mask(name), maskEventOptions(s.mask, opts)...)
}

// RecordError records the "exception" event the SDK would, with the error's
// message masked (a stack trace, when asked for, is left out).
func (s *maskedSpan) RecordError(err error, opts ...trace.EventOption) {
	if err == nil || !s.IsRecording() {
		return
	}
	opts = append(maskEventOptions(s.mask, opts), trace.WithAttributes(
		attribute.String("exception.type", errorType(err)),
		attribute.String("exception.message", s.mask(err.Error())),
	))
	s.Span.AddEvent("exception", opts...)
}

// maskEventOptions returns opts with their attributes masked (and the
// timestamp kept).
func maskEventOptions(mask func(string) string, opts []trace.EventOption) []trace.EventOption {
	if len(opts) == 0 {
		return nil
	}
	cfg := trace.NewEventConfig(opts...)
	out := []trace.EventOption{trace.WithTimestamp(cfg.Timestamp())}
	if a := cfg.Attributes(); len(a) > 0 {
		out = append(out, trace.WithAttributes(maskAttributes(mask, a)...))
	}
	return out
}

// maskAttributes returns a copy of kv with string values masked.
func maskAttributes(mask func(string) string, kv []attribute.KeyValue) []attribute.KeyValue {
	out := make([]attribute.KeyValue, len(kv))
	for i, a := range kv {
		switch a.Value.Type() {
		case attribute.STRING:
			a = attribute.String(string(a.Key), mask(a.Value.AsString()))
		case attribute.STRINGSLICE:
			ss := a.Value.AsStringSlice()
			for j := range ss {
				ss[j] = mask(ss[j])
			}
			a = attribute.StringSlice(string(a.Key), ss)
		}
		out[i] = a
	}
	return out
}

// errorType names err's type as the SDK's exception.type does.
func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.PkgPath() == "" && t.Name() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// spanMask is the masker of a span the conversation started (identity for
// any other span).
func spanMask(span trace.Span) func(string) string {
	if ms, ok := span.(*maskedSpan); ok {
		return ms.mask
	}
	return func(s string) string { return s }
}

// endTrace closes the conversation's spans (innermost first).
func (c *Conversation) endTrace() {
	for i := len(c.spans) - 1; i >= 0; i-- {
		c.spans[i].End()
	}
}

// metadataAttributes turns observability_metadata (validated at the API:
// scalars or homogeneous scalar arrays) into "metadata.<key>" attributes.
func metadataAttributes(raw json.RawMessage) []attribute.KeyValue {
	if len(raw) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil
	}
	var out []attribute.KeyValue
	for k, v := range m {
		key := "metadata." + k
		switch x := v.(type) {
		case string:
			out = append(out, attribute.String(key, x))
		case bool:
			out = append(out, attribute.Bool(key, x))
		case float64:
			if x == float64(int64(x)) {
				out = append(out, attribute.Int64(key, int64(x)))
			} else {
				out = append(out, attribute.Float64(key, x))
			}
		case []any:
			out = append(out, sliceAttribute(key, x))
		}
	}
	return out
}

func sliceAttribute(key string, xs []any) attribute.KeyValue {
	if len(xs) == 0 {
		return attribute.StringSlice(key, []string{})
	}
	switch xs[0].(type) {
	case bool:
		b := make([]bool, len(xs))
		for i, x := range xs {
			b[i], _ = x.(bool)
		}
		return attribute.BoolSlice(key, b)
	case float64:
		f := make([]float64, len(xs))
		for i, x := range xs {
			f[i], _ = x.(float64)
		}
		return attribute.Float64Slice(key, f)
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return attribute.StringSlice(key, s)
}

// llmSpan starts the span of an LLM call, as a child of the conversation's
// span but cancelled with ctx.
func (c *Conversation) llmSpan(ctx context.Context, cfg llm.Config, purpose string) (context.Context, trace.Span) {
	ctx = trace.ContextWithSpan(ctx, trace.SpanFromContext(c.spanCtx))
	return c.tracer.Start(ctx, "chat "+cfg.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.request.model", cfg.Model),
		attribute.String("gen_ai.usage_id", cfg.UsageID),
		attribute.String("acs.llm.purpose", purpose),
	))
}

// endLLMSpan records the outcome of an LLM call.
func endLLMSpan(span trace.Span, resp *llm.Response, err error) {
	if resp != nil {
		span.SetAttributes(
			attribute.String("gen_ai.response.id", resp.ID),
			attribute.Int64("gen_ai.usage.input_tokens", resp.Usage.PromptTokens),
			attribute.Int64("gen_ai.usage.output_tokens", resp.Usage.CompletionTokens),
			attribute.Float64("acs.llm.cost", resp.Cost),
			attribute.Int("acs.llm.tool_calls", len(resp.ToolCalls)),
		)
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// toolSpan starts the span of a tool call.
func (c *Conversation) toolSpan(ctx context.Context, ae *events.ActionEvent) (context.Context, trace.Span) {
	ctx = trace.ContextWithSpan(ctx, trace.SpanFromContext(c.spanCtx))
	kind := ""
	if ae.Action != nil {
		kind = ae.Action.Kind()
	}
	return c.tracer.Start(ctx, "execute_tool "+ae.ToolName, trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", ae.ToolName),
		attribute.String("gen_ai.tool.call.id", ae.ToolCallID),
		attribute.String("acs.action.kind", kind),
		attribute.String("acs.action.id", ae.ID),
	))
}

// endToolSpan records a tool call's outcome: an infrastructure error, or an
// observation the model can act on (is_error).
func endToolSpan(span trace.Span, obs events.Observation, err error) {
	switch {
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	case obs != nil && obs.Common().IsError:
		span.SetAttributes(attribute.Bool("acs.observation.is_error", true))
		// Masked before it is cut, so no part of a secret is left.
		span.SetStatus(codes.Error, statusLine(spanMask(span)(obs.Common().Text())))
	}
	span.End()
}

// statusLine is the first line of s, at most 200 bytes.
func statusLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
