package events

import (
	"fmt"
	"strings"
	"time"

	"github.com/acs-project/acs/events/strictjson"
)

// TimeLayout is the wire form of every timestamp: RFC 3339, UTC, microseconds.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// Time is an instant serialised as RFC 3339 UTC with microseconds, e.g.
// "2026-08-22T16:34:54.123456Z". Decoding accepts any RFC 3339 value, with or
// without fractional seconds; a value without a zone is taken as UTC.
type Time struct{ time.Time }

// Now returns the current time truncated to microseconds.
func Now() Time { return Time{time.Now().UTC().Truncate(time.Microsecond)} }

// At wraps t, converted to UTC and truncated to microseconds.
func At(t time.Time) Time { return Time{t.UTC().Truncate(time.Microsecond)} }

// String returns the wire form.
func (t Time) String() string { return t.UTC().Format(TimeLayout) }

// AppendStrictJSON implements strictjson.ValueEncoder.
func (t Time) AppendStrictJSON(b []byte) ([]byte, error) {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeLayout)
	return append(b, '"'), nil
}

// DecodeStrict implements strictjson.ValueDecoder.
func (t *Time) DecodeStrict(v strictjson.Value) *strictjson.Error {
	if v.Kind != strictjson.String {
		return &strictjson.Error{Msg: "Input should be a valid datetime", Type: "datetime_type"}
	}
	parsed, err := ParseTime(v.Str)
	if err != nil {
		return &strictjson.Error{Msg: err.Error(), Type: "datetime_parsing"}
	}
	t.Time = parsed
	return nil
}

// MarshalJSON lets Time appear in encoding/json output too.
func (t Time) MarshalJSON() ([]byte, error) { return t.AppendStrictJSON(nil) }

// UnmarshalJSON accepts the same forms as ParseTime.
func (t *Time) UnmarshalJSON(b []byte) error {
	v, err := strictjson.Parse(b)
	if err != nil {
		return err
	}
	if e := t.DecodeStrict(v); e != nil {
		return e
	}
	return nil
}

var naiveLayouts = []string{
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02",
}

// ParseTime parses an RFC 3339 date-time (any offset, "Z" or none) and returns
// it in UTC truncated to microseconds. A value without a zone is UTC. A bare
// date means midnight UTC. Errors say what was expected.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC().Truncate(time.Microsecond), nil
	}
	// Lower-case "t"/"z" are valid RFC 3339.
	if u := strings.ToUpper(s); u != s {
		if t, err := time.Parse(time.RFC3339Nano, u); err == nil {
			return t.UTC().Truncate(time.Microsecond), nil
		}
	}
	for _, layout := range naiveLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC().Truncate(time.Microsecond), nil
		}
	}
	return time.Time{}, fmt.Errorf("Input should be a valid datetime (RFC 3339, e.g. 2026-01-02T15:04:05Z), got %q", truncate(s, 64))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
