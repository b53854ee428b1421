package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/shared/acs"
)

// faults answers the first n requests with status and Retry-After (a
// fault a real server does not produce on demand), then passes requests
// on to the real API; it counts the requests it saw.
type faults struct {
	status     int
	retryAfter string
	n          int32
	seen       atomic.Int32
	next       http.Handler
}

func (f *faults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.seen.Add(1) <= f.n {
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		w.Write([]byte(`{"detail":"try later"}`))
		return
	}
	f.next.ServeHTTP(w, r)
}

// TestRetries: requests safe to repeat are retried on 429 and 503 after
// Retry-After, a bounded number of times, never beyond MaxWait nor past
// the context; other requests are not retried.
func TestRetries(t *testing.T) {
	e := newEnv(t)
	target, _ := url.Parse(e.url)
	real := httputil.NewSingleHostReverseProxy(target)
	policy := client.Retry{Attempts: 4, MaxWait: 5 * time.Second, Wait: 10 * time.Millisecond}
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		n          int32
		call       func(context.Context, *client.Client) error
		wantErr    error // nil: success
		wantSeen   int32
		minElapsed time.Duration
	}{
		{name: "429 twice then success, after Retry-After each time", status: 429, retryAfter: "1", n: 2,
			call: me, wantSeen: 3, minElapsed: 2 * time.Second},
		{name: "503 with Retry-After once", status: 503, retryAfter: "0", n: 1, call: me, wantSeen: 2},
		{name: "429 without Retry-After waits the policy's delay", status: 429, n: 1, call: me, wantSeen: 2},
		{name: "bounded: Attempts requests at most", status: 429, retryAfter: "0", n: 100, call: me,
			wantErr: acs.ErrCapacity, wantSeen: 4},
		{name: "a Retry-After beyond MaxWait is not waited for", status: 429, retryAfter: "120", n: 1, call: me,
			wantErr: acs.ErrCapacity, wantSeen: 1},
		{name: "503 without Retry-After (a failed sandbox) is not retried", status: 503, n: 1, call: me,
			wantErr: acs.ErrSandboxFailed, wantSeen: 1},
		{name: "a POST that is not safe to repeat is not retried", status: 429, retryAfter: "0", n: 1,
			call:    func(ctx context.Context, c *client.Client) error { _, err := c.CreateKey(ctx, "k"); return err },
			wantErr: acs.ErrCapacity, wantSeen: 1},
		{name: "the context ends the wait", status: 429, retryAfter: "5", n: 1,
			call: func(ctx context.Context, c *client.Client) error {
				ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
				return me(ctx, c)
			},
			wantErr: context.DeadlineExceeded, wantSeen: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &faults{status: tc.status, retryAfter: tc.retryAfter, n: tc.n, next: real}
			srv := httptest.NewServer(f)
			defer srv.Close()
			c := client.New(srv.URL, adminKey, client.WithRetry(policy))
			start := time.Now()
			err := tc.call(ctxFor(t, time.Minute), c)
			elapsed := time.Since(start)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if got := f.seen.Load(); got != tc.wantSeen {
				t.Fatalf("%d requests, want %d", got, tc.wantSeen)
			}
			if elapsed < tc.minElapsed {
				t.Fatalf("done after %v: Retry-After asked for %v in all", elapsed, tc.minElapsed)
			}
			if errors.Is(tc.wantErr, context.DeadlineExceeded) && elapsed > 4*time.Second {
				t.Fatalf("the cancelled wait lasted %v", elapsed)
			}
		})
	}
}

func me(ctx context.Context, c *client.Client) error {
	u, err := c.Me(ctx)
	if err == nil && u.ID != "admin" {
		return errors.New("wrong user " + u.ID)
	}
	return err
}
