package events

import (
	"fmt"
	"regexp"
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

// queryOffset matches a date-time whose "+HH:MM" offset lost its "+" to
// URL query decoding ("+" means space there): "...T05:06:07 02:00".
var queryOffset = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?) (\d{2}:\d{2})$`)

// ParseTime parses an RFC 3339 date-time (any offset, "Z" or none) and returns
// it in UTC truncated to microseconds. As RFC 3339 allows, the date and time
// may be separated by "T", "t" or a space, and "Z" may be "z". A value without
// a zone is UTC; a bare date means midnight UTC. An offset whose "+" became a
// space in an unencoded query string ("...T05:06:07 02:00") is read as
// "+02:00". Errors say what was expected.
func ParseTime(s string) (time.Time, error) {
	orig := strings.TrimSpace(s)
	s = orig
	if n := len(s); n > 6 && s[n-6] == ' ' { // cheap check before the regexp
		if m := queryOffset.FindStringSubmatch(s); m != nil {
			s = m[1] + "+" + m[2]
		}
	}
	// Upper-case "t"/"z" (the only letters RFC 3339 allows) and read a space
	// separator as "T", so one layout covers every spelling with a zone.
	s = strings.ToUpper(s)
	rfc := s
	if len(rfc) > 10 && rfc[10] == ' ' {
		rfc = rfc[:10] + "T" + rfc[11:]
	}
	if t, err := time.Parse(time.RFC3339Nano, rfc); err == nil {
		return t.UTC().Truncate(time.Microsecond), nil
	}
	for _, layout := range naiveLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC().Truncate(time.Microsecond), nil
		}
	}
	return time.Time{}, fmt.Errorf("Input should be a valid datetime (RFC 3339, e.g. 2026-01-02T15:04:05Z), got %q", truncate(orig, 64))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
