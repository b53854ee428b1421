package agentwire

import (
	"regexp"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
)

// The bodies of the agent server's bash API (/api/bash/...).

// Bash event kinds.
const (
	KindBashCommand = "BashCommand"
	KindBashOutput  = "BashOutput"
	KindBashError   = "BashError"
)

// BashKinds lists every bash event kind, in the order used in error
// messages.
var BashKinds = []string{KindBashCommand, KindBashOutput, KindBashError}

// DefaultBashTimeout is the timeout, in seconds, of a bash request that
// gives none.
const DefaultBashTimeout = 300

// ExecuteBashRequest asks for one command to be run. Decoded strictly:
// unknown keys, a missing command or a timeout below 1 are 422 errors.
type ExecuteBashRequest struct {
	// Command is run as `/bin/bash -c Command`.
	Command string `json:"command" acs:"required"`
	// Cwd is the working directory; nil or "" means the service's default,
	// a relative path is taken relative to that default.
	Cwd *string `json:"cwd" acs:"emitnull"`
	// Timeout in seconds (>= 1, default 300). A Go caller's zero means the
	// default.
	Timeout int `json:"timeout" acs:"ge=1,default=300"`
	// Secrets (an ACS extension) are environment variables of this command
	// only. They are never stored or echoed, and their values are masked in
	// its output.
	Secrets map[string]string `json:"secrets" acs:"nullable"`
}

// ValidateStrict requires secret names to be environment variable names.
func (r *ExecuteBashRequest) ValidateStrict() []strictjson.Error {
	var errs []strictjson.Error
	for k := range r.Secrets {
		if !envNameRE.MatchString(k) {
			errs = append(errs, strictjson.Error{Loc: []any{"secrets", k}, Msg: "must be an environment variable name", Type: "value_error"})
		}
	}
	return errs
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// BashEvent is one of *BashCommand, *BashOutput or *BashError.
type BashEvent interface {
	Kind() string
	EventID() string
	EventTime() events.Time
}

// BashCommand records a command that was started. Cwd is the directory the
// command runs in (the request's cwd resolved against the default).
type BashCommand struct {
	ID        string      `json:"id" acs:"required"`
	Timestamp events.Time `json:"timestamp" acs:"required"`
	Command   string      `json:"command" acs:"required"`
	Cwd       *string     `json:"cwd" acs:"emitnull"`
	Timeout   int         `json:"timeout" acs:"required"`
}

// BashOutput is one chunk of a command's output. Chunks of one command have
// order 0, 1, 2, ...; only the last one has a non-nil ExitCode. Stdout and
// Stderr are nil when the chunk holds nothing from that stream.
type BashOutput struct {
	ID        string      `json:"id" acs:"required"`
	Timestamp events.Time `json:"timestamp" acs:"required"`
	CommandID string      `json:"command_id" acs:"required"`
	Order     int         `json:"order" acs:"required"`
	ExitCode  *int        `json:"exit_code" acs:"emitnull"`
	Stdout    *string     `json:"stdout" acs:"emitnull"`
	Stderr    *string     `json:"stderr" acs:"emitnull"`
}

// BashError reports a request that could not be run (for example a cwd that
// does not exist) or, on the socket only, an inbound frame that could not be
// decoded. It also implements error.
type BashError struct {
	ID        string      `json:"id" acs:"required"`
	Timestamp events.Time `json:"timestamp" acs:"required"`
	Code      string      `json:"code" acs:"required"`
	Detail    string      `json:"detail" acs:"required"`
}

// Codes of BashError.
const (
	CodeInvalidCwd      = "InvalidCwd"
	CodeValidationError = "ValidationError"
	CodeStartError      = "StartError"
)

func (*BashCommand) Kind() string { return KindBashCommand }
func (*BashOutput) Kind() string  { return KindBashOutput }
func (*BashError) Kind() string   { return KindBashError }

func (e *BashCommand) EventID() string { return e.ID }
func (e *BashOutput) EventID() string  { return e.ID }
func (e *BashError) EventID() string   { return e.ID }

func (e *BashCommand) EventTime() events.Time { return e.Timestamp }
func (e *BashOutput) EventTime() events.Time  { return e.Timestamp }
func (e *BashError) EventTime() events.Time   { return e.Timestamp }

// Error implements error.
func (e *BashError) Error() string { return e.Code + ": " + e.Detail }

// Finished reports whether this is the last output of its command.
func (e *BashOutput) Finished() bool { return e.ExitCode != nil }

// ClearBashResponse answers DELETE /api/bash/bash_events.
type ClearBashResponse struct {
	ClearedCount int `json:"cleared_count"`
}
