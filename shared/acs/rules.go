package acs

import (
	"time"
)

// Pure rules of the domain, used by the services.

// ErrArchived refuses a conversation whose sandbox was deleted (MISSING).
var ErrArchived = Errorf(EGONE, "Conversation is archived. The sandbox no longer exists.")

// Usable returns nil when conversations on the sandbox can be used (perhaps
// after a resume), else the read-only error: EGONE for MISSING
// (ErrArchived), ESANDBOXFAILED for ERROR (with the sandbox's detail).
func (s *Sandbox) Usable() error {
	switch s.Status {
	case SandboxMissing:
		return ErrArchived
	case SandboxError:
		detail := "Sandbox is in an error state and cannot accept messages."
		if s.Detail != "" {
			detail += " " + s.Detail
		}
		return &Error{Code: ESANDBOXFAILED, Message: detail}
	}
	return nil
}

// CountsAgainstCap reports whether a sandbox in status s counts against its
// owner's cap on running sandboxes (RUNNING or STARTING).
func (s SandboxStatus) CountsAgainstCap() bool {
	return s == SandboxRunning || s == SandboxStarting
}

// ReportTime is the time a sandbox's report counts at: its own, but never
// later than when the control plane received it, so that a report dated in
// the future (a wrong clock, or a forged date) cannot outrank the reports
// that follow.
func ReportTime(ts, received time.Time) time.Time {
	if ts.After(received) {
		return received
	}
	return ts
}
