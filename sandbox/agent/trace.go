package agent

import (
	"context"
	"encoding/json"
	"fmt"
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
// = conversation id), open while the conversation is loaded, carrying the
// observability tags and metadata; under it a span named
// observability_span_name when given; under that one span per LLM call
// ("chat <model>") and per tool call ("execute_tool <name>").

// startTrace opens the conversation's spans.
func (c *Conversation) startTrace(ctx context.Context) {
	tp := c.opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	c.tracer = tp.Tracer(telemetry.InstrumentationName)
	req := c.meta.Request
	attrs := []attribute.KeyValue{attribute.String("conversation.id", c.id.String())}
	if len(req.ObservabilityTags) > 0 {
		attrs = append(attrs, attribute.StringSlice("tags", req.ObservabilityTags))
	}
	attrs = append(attrs, metadataAttributes(req.ObservabilityMetadata)...)
	root := context.WithoutCancel(ctx)
	root = trace.ContextWithSpan(root, nil)
	root = telemetry.WithTraceID(root, trace.TraceID(c.id))
	rctx, rspan := c.tracer.Start(root, "conversation", trace.WithNewRoot(), trace.WithAttributes(attrs...))
	c.spans = []trace.Span{rspan}
	c.spanCtx = rctx
	if req.ObservabilitySpanName != nil && *req.ObservabilitySpanName != "" {
		sctx, span := c.tracer.Start(rctx, *req.ObservabilitySpanName, trace.WithAttributes(attribute.String("conversation.id", c.id.String())))
		c.spans = append(c.spans, span)
		c.spanCtx = sctx
	}
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
		span.SetStatus(codes.Error, statusLine(obs.Common().Text()))
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
