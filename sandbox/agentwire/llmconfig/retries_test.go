package llmconfig_test

import (
	"testing"
	"time"

	"github.com/acs-project/acs/sandbox/agentwire/llmconfig"
)

func TestRetriesWithin(t *testing.T) {
	d := llmconfig.Default() // waits 8 s, then 64 s each
	cases := []struct {
		total time.Duration
		want  int
	}{
		{0, 0}, {7 * time.Second, 0}, {8 * time.Second, 1}, {time.Minute, 1}, {72 * time.Second, 2},
		{4 * time.Minute, 4}, {5 * time.Minute, 5}, {time.Hour, 57}, {1000 * time.Hour, 100},
	}
	for _, tc := range cases {
		if got := d.RetriesWithin(tc.total); got != tc.want {
			t.Errorf("RetriesWithin(%v) = %d, want %d", tc.total, got, tc.want)
		}
	}
	if got := d.Backoff(1) + d.Backoff(2) + d.Backoff(3); got != 136*time.Second {
		t.Errorf("first three waits %v, want 136s", got)
	}
}
