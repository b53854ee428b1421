package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/acs-project/acs/sandbox/telemetry"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestSetupWithoutEndpointIsNoop(t *testing.T) {
	tp, shutdown, err := telemetry.Setup(context.Background(), env(nil), "svc")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tp.(noop.TracerProvider); !ok {
		t.Fatalf("provider %T, want no-op", tp)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestSetupRefusesBadConfig(t *testing.T) {
	cases := map[string]map[string]string{
		"grpc":       {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		"not a url":  {"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318"},
		"traces url": {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "collector:4318"},
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, err := telemetry.Setup(context.Background(), env(m), "svc"); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

// TestSetupExportsOverOTLP exports a span to a local OTLP/HTTP receiver.
func TestSetupExportsOverOTLP(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	var bodies []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths = append(paths, r.URL.Path+" "+r.Header.Get("Content-Type"))
		bodies = append(bodies, b...)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	tp, shutdown, err := telemetry.Setup(context.Background(), env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_SERVICE_NAME": "acs-test"}), "svc")
	if err != nil {
		t.Fatal(err)
	}
	var id trace.TraceID
	copy(id[:], "0123456789abcdef")
	ctx := telemetry.WithTraceID(context.Background(), id)
	_, span := tp.Tracer("t").Start(ctx, "conversation")
	if span.SpanContext().TraceID() != id {
		t.Fatalf("trace id %s, want %s", span.SpanContext().TraceID(), id)
	}
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) == 0 || !strings.HasPrefix(paths[0], "/v1/traces application/x-protobuf") {
		t.Fatalf("exports: %v", paths)
	}
	for _, want := range []string{"conversation", "acs-test", "0123456789abcdef"} {
		if !strings.Contains(string(bodies), want) {
			t.Errorf("export lacks %q", want)
		}
	}
}
