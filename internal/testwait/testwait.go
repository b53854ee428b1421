// Package testwait is the one way tests wait for a condition: poll it with
// a deadline instead of sleeping for a guessed time.
package testwait

import (
	"testing"
	"time"
)

// Interval is how often For and Until evaluate the condition.
const Interval = 10 * time.Millisecond

// For polls ok every Interval until it returns true. If timeout passes
// first, it fails tb (Fatalf) with "timed out after <timeout> waiting for
// <what>". ok runs on the calling goroutine; it is evaluated once more at the
// deadline, so a condition that holds then still passes.
func For(tb testing.TB, timeout time.Duration, what string, ok func() bool) {
	tb.Helper()
	if !Until(timeout, ok) {
		tb.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Until polls ok every Interval until it returns true or timeout passes,
// and reports whether ok held. Use it where the caller reports the failure
// itself (with the last state it saw, or with Errorf) or where a timeout is
// not a failure.
func Until(timeout time.Duration, ok func() bool) bool {
	return UntilEvery(timeout, Interval, ok)
}

// UntilEvery is Until with its own poll interval, for benchmarks that time
// what they wait for and need a finer resolution than Interval.
func UntilEvery(timeout, interval time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !ok() {
		left := time.Until(deadline)
		if left <= 0 {
			return ok()
		}
		<-time.After(min(interval, left))
	}
	return true
}
