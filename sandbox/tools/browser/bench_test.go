package browser_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/browser"
)

func benchSite(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<html><head><title>Bench</title></head><body><a href="/x">x</a><input name=q></body></html>`))
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkFirstAction is the browser's start-up cost: from New to the end
// of the first navigation (Chromium start included), then Close (untimed).
func BenchmarkFirstAction(b *testing.B) {
	srv := benchSite(b)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		br := browser.New(browser.Options{SaveDir: b.TempDir()})
		obs, err := br.Execute(ctx, &events.BrowserNavigateAction{URL: srv.URL})
		if err != nil || obs.IsError {
			b.Fatalf("navigate: %v %v", err, obs)
		}
		b.StopTimer()
		br.Close()
		b.StartTimer()
	}
}

// BenchmarkNavigate is a navigation on a warm browser.
func BenchmarkNavigate(b *testing.B) {
	srv := benchSite(b)
	ctx := context.Background()
	br := browser.New(browser.Options{SaveDir: b.TempDir()})
	defer br.Close()
	if _, err := br.Execute(ctx, &events.BrowserNavigateAction{URL: srv.URL}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		obs, err := br.Execute(ctx, &events.BrowserNavigateAction{URL: srv.URL + "/?n=1"})
		if err != nil || obs.IsError {
			b.Fatalf("navigate: %v %v", err, obs)
		}
	}
}
