// Package diskfull recognises the errors of a write that found no space:
// the file system is full (ENOSPC) or the user's quota is spent (EDQUOT).
// Both halves of ACS use it: adapters wrap such errors into their domain's
// "storage full" error, servers answer them 507 with Retry-After.
package diskfull

import (
	"errors"
	"strings"
	"syscall"
)

// Is reports whether err (or an error it wraps) is ENOSPC or EDQUOT. A
// library that formats a system error with %s rather than wrapping it
// (bbolt's "file resize error") is recognised by the error's text.
func Is(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, syscall.ENOSPC.Error()) || strings.Contains(msg, syscall.EDQUOT.Error())
}
