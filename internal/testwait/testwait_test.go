package testwait_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testwait"
)

// recorder is a testing.TB that records a Fatalf instead of stopping the
// test, so For's failure can be asserted.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestUntil(t *testing.T) {
	var n atomic.Int32
	if !testwait.Until(5*time.Second, func() bool { return n.Add(1) >= 3 }) {
		t.Fatal("a condition that becomes true was reported false")
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("condition evaluated %d times after it held, want exactly 3", got)
	}
	start := time.Now()
	if testwait.Until(50*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds was reported true")
	}
	if el := time.Since(start); el < 50*time.Millisecond || el > 5*time.Second {
		t.Fatalf("Until gave up after %s, want about 50ms", el)
	}
	// Evaluated once more at the deadline.
	deadline := time.Now().Add(30 * time.Millisecond)
	if !testwait.UntilEvery(30*time.Millisecond, time.Hour, func() bool { return !time.Now().Before(deadline) }) {
		t.Fatal("a condition that holds at the deadline was reported false")
	}
}

func TestFor(t *testing.T) {
	r := &recorder{TB: t}
	testwait.For(r, time.Second, "the thing", func() bool { return true })
	if r.failed != "" {
		t.Fatalf("For failed on a true condition: %s", r.failed)
	}
	testwait.For(r, 20*time.Millisecond, "the thing", func() bool { return false })
	if want := "timed out after 20ms waiting for the thing"; !strings.Contains(r.failed, want) {
		t.Fatalf("For on a condition that never holds failed with %q, want %q", r.failed, want)
	}
}
