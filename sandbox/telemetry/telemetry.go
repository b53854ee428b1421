// Package telemetry sets up OpenTelemetry tracing for the agent server:
// spans are exported over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, and not recorded otherwise.
// A conversation's trace id is its conversation id, so one trace holds the
// whole conversation, across agent-server restarts.
package telemetry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationName names the tracer of the agent.
const InstrumentationName = "github.com/acs-project/acs/sandbox/agent"

type traceIDKey struct{}

// WithTraceID asks the IDGenerator to start a new root span in ctx with
// trace id id (instead of a random one).
func WithTraceID(ctx context.Context, id trace.TraceID) context.Context {
	return context.WithValue(ctx, traceIDKey{}, id)
}

// IDGenerator makes random ids, except that a root span started in a
// context from WithTraceID gets that trace id.
type IDGenerator struct{}

// NewIDs implements sdktrace.IDGenerator.
func (IDGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	tid, ok := ctx.Value(traceIDKey{}).(trace.TraceID)
	if !ok || !tid.IsValid() {
		_, _ = rand.Read(tid[:])
	}
	return tid, newSpanID()
}

// NewSpanID implements sdktrace.IDGenerator.
func (IDGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

func newSpanID() trace.SpanID {
	var s trace.SpanID
	for !s.IsValid() {
		_, _ = rand.Read(s[:])
	}
	return s
}

// NewProvider returns a tracer provider using IDGenerator, with the given
// options (exporters, processors).
func NewProvider(service string, opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(service))
	all := append([]sdktrace.TracerProviderOption{sdktrace.WithIDGenerator(IDGenerator{}), sdktrace.WithResource(res)}, opts...)
	return sdktrace.NewTracerProvider(all...)
}

// Setup returns the tracer provider the agent server uses and a shutdown
// function that flushes it (bounded by ctx). With no OTLP endpoint in the
// environment it returns a no-op provider. The exporter reads the standard
// OTEL_EXPORTER_OTLP_* variables of the process (headers, timeout,
// certificates); the endpoint is taken from getenv. Only the
// http/protobuf protocol is supported, and OTEL_EXPORTER_OTLP_PROTOCOL=grpc
// is an error. OTEL_SERVICE_NAME names the service (default service).
func Setup(ctx context.Context, getenv func(string) string, service string) (trace.TracerProvider, func(context.Context) error, error) {
	endpoint, url := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), ""
	if endpoint != "" {
		url = endpoint // used as is
	} else if endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); endpoint != "" {
		url = strings.TrimRight(endpoint, "/") + "/v1/traces"
	}
	nop := func(context.Context) error { return nil }
	if endpoint == "" || strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return noop.NewTracerProvider(), nop, nil
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := getenv(k); p != "" && p != "http/protobuf" {
			return nil, nop, fmt.Errorf("telemetry: %s=%s is not supported (use http/protobuf)", k, p)
		}
	}
	if !strings.HasPrefix(endpoint, "http://") && !strings.HasPrefix(endpoint, "https://") {
		return nil, nop, fmt.Errorf("telemetry: OTLP endpoint %q must be an http(s) URL", endpoint)
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(url))
	if err != nil {
		return nil, nop, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	if s := getenv("OTEL_SERVICE_NAME"); s != "" {
		service = s
	}
	tp := NewProvider(service, sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(2*time.Second)))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		slog.Warn("telemetry: export failed", "error", err)
	}))
	slog.Info("telemetry: exporting traces over OTLP/HTTP", "endpoint", endpoint, "service", service)
	return tp, func(ctx context.Context) error {
		return errors.Join(tp.ForceFlush(ctx), tp.Shutdown(ctx))
	}, nil
}
