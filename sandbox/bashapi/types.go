package bashapi

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agentwire"
)

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
func encodeEvent(ev agentwire.BashEvent) []byte { return strictjson.MustMarshal(ev) }

// decodeEvent strictly decodes a stored event of the given kind.
func decodeEvent(kind string, b []byte) (agentwire.BashEvent, error) {
	var ev agentwire.BashEvent
	switch kind {
	case agentwire.KindBashCommand:
		ev = &agentwire.BashCommand{}
	case agentwire.KindBashOutput:
		ev = &agentwire.BashOutput{}
	case agentwire.KindBashError:
		ev = &agentwire.BashError{}
	default:
		return nil, strictjson.Errors{{Msg: "unknown kind " + kind, Type: "enum"}}
	}
	if err := strictjson.Unmarshal(b, ev); err != nil {
		return nil, err
	}
	return ev, nil
}
