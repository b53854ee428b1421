package acs_test

import (
	"errors"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

func TestSandboxUsable(t *testing.T) {
	for _, tc := range []struct {
		status acs.SandboxStatus
		detail string
		want   error
		msg    string
	}{
		{acs.SandboxRunning, "", nil, ""},
		{acs.SandboxPaused, "", nil, ""},
		{acs.SandboxStarting, "", nil, ""},
		{acs.SandboxMissing, "", acs.ErrGone, "Conversation is archived. The sandbox no longer exists.: gone"},
		{acs.SandboxError, "", acs.ErrSandboxFailed, "Sandbox is in an error state and cannot accept messages.: sandbox failed"},
		{acs.SandboxError, "disk lost", acs.ErrSandboxFailed, "Sandbox is in an error state and cannot accept messages. disk lost: sandbox failed"},
	} {
		sb := acs.Sandbox{Status: tc.status, Detail: tc.detail}
		err := sb.Usable()
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want usable", tc.status, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) || err.Error() != tc.msg {
			t.Errorf("%s %q: %v, want %q", tc.status, tc.detail, err, tc.msg)
		}
		if !tc.status.ReadOnly() {
			t.Errorf("%s refuses use but is not read-only", tc.status)
		}
	}
}

func TestCountsAgainstCap(t *testing.T) {
	for st, want := range map[acs.SandboxStatus]bool{
		acs.SandboxRunning: true, acs.SandboxStarting: true,
		acs.SandboxPaused: false, acs.SandboxError: false, acs.SandboxMissing: false,
	} {
		if got := st.CountsAgainstCap(); got != want {
			t.Errorf("%s counts: %v, want %v", st, got, want)
		}
	}
}

func TestReportTime(t *testing.T) {
	received := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		ts, want time.Time
	}{
		{"past", received.Add(-time.Minute), received.Add(-time.Minute)},
		{"same", received, received},
		{"future is capped", received.Add(time.Hour), received},
	} {
		if got := acs.ReportTime(tc.ts, received); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
