package bashapi

import (
	"regexp"

	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
)

// Event kinds.
const (
	KindCommand = "BashCommand"
	KindOutput  = "BashOutput"
	KindError   = "BashError"
)

// Kinds lists every event kind, in the order used in error messages.
var Kinds = []string{KindCommand, KindOutput, KindError}

// DefaultTimeout is the timeout, in seconds, of a request that gives none.
const DefaultTimeout = 300

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
	// its output (see Options.AddSecrets).
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

// Event is one of *BashCommand, *BashOutput or *BashError.
type Event interface {
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
// decoded. It also implements error: Start and Execute return it.
type BashError struct {
	ID        string      `json:"id" acs:"required"`
	Timestamp events.Time `json:"timestamp" acs:"required"`
	Code      string      `json:"code" acs:"required"`
	Detail    string      `json:"detail" acs:"required"`
}

// Error codes of BashError.
const (
	CodeInvalidCwd      = "InvalidCwd"
	CodeValidationError = "ValidationError"
	CodeStartError      = "StartError"
)

func (*BashCommand) Kind() string { return KindCommand }
func (*BashOutput) Kind() string  { return KindOutput }
func (*BashError) Kind() string   { return KindError }

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

// newID returns a random (version 4) UUID as 32 lower-case hex digits.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b[:])
}

// normalizeID accepts a UUID as 32 hex digits or in the dashed 8-4-4-4-12
// form, any case, and returns the 32 lower-case hex digits.
func normalizeID(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) == 36 {
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return "", false
		}
		s = s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	}
	if len(s) != 32 {
		return "", false
	}
	s = strings.ToLower(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", false
		}
	}
	return s, true
}

// encodeEvent returns the canonical JSON of ev: "kind" first, then every
// field in declaration order, nulls included.
func encodeEvent(ev Event) []byte { return strictjson.MustMarshal(ev) }

// decodeEvent strictly decodes a stored event of the given kind.
func decodeEvent(kind string, b []byte) (Event, error) {
	var ev Event
	switch kind {
	case KindCommand:
		ev = &BashCommand{}
	case KindOutput:
		ev = &BashOutput{}
	case KindError:
		ev = &BashError{}
	default:
		return nil, strictjson.Errors{{Msg: "unknown kind " + kind, Type: "enum"}}
	}
	if err := strictjson.Unmarshal(b, ev); err != nil {
		return nil, err
	}
	return ev, nil
}
