// Package strictjson decodes JSON strictly into Go structs and encodes them
// canonically.
//
// Decoding rejects unknown object keys, missing required keys, values of the
// wrong JSON type, enum values outside their set and values that break a
// declared limit. Every problem is reported as an Error carrying a location
// path, a message and a type, in the shape of FastAPI/pydantic validation
// errors ({"loc": [...], "msg": "...", "type": "..."}), so HTTP layers can
// return them as 422 bodies unchanged.
//
// Encoding writes struct fields in declaration order, omits null optional
// fields, always writes non-nullable lists (as [] when empty) and never escapes
// HTML, so decode(encode(v)) == v and encode(decode(b)) is a fixed point.
//
// Field rules come from two struct tags: `json:"name"` names the key and
// `acs:"..."` lists comma-separated options:
//
//	required      the key must be present
//	nullable      a slice, map or raw field may be null (pointers always may)
//	emitnull      encode a nil value as null instead of omitting it
//	default=X     value used when the key is absent (string, bool or number)
//	const=X       the string value must be X; it is always encoded as X
//	ge=N gt=N le=N lt=N   numeric bounds
//	minlen=N maxlen=N len=N   length bounds for strings (in characters) and lists
//	object        a json.RawMessage field must hold a JSON object
package strictjson

import (
	"fmt"
	"strconv"
	"strings"
)

// Error is one validation problem, shaped like a pydantic error.
type Error struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// Path renders Loc as a dotted path such as "body.action.index" or "items[2]".
func (e Error) Path() string {
	var b strings.Builder
	for i, p := range e.Loc {
		switch p := p.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(p) + "]")
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, p)
		}
	}
	return b.String()
}

func (e Error) Error() string {
	if len(e.Loc) == 0 {
		return e.Msg
	}
	return e.Path() + ": " + e.Msg
}

// Errors is a list of validation problems. A decode that fails returns Errors.
type Errors []Error

func (es Errors) Error() string {
	switch len(es) {
	case 0:
		return "no errors"
	case 1:
		return es[0].Error()
	}
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return fmt.Sprintf("%d validation errors: %s", len(es), strings.Join(parts, "; "))
}

// maxErrors bounds how many problems one decode reports.
const maxErrors = 50

// FieldError builds an Error at loc.
func FieldError(loc []any, errType, msg string) Error {
	return Error{Loc: append([]any(nil), loc...), Msg: msg, Type: errType}
}

// Prefix returns copies of es with prefix prepended to every location.
func Prefix(es []Error, prefix ...any) Errors {
	out := make(Errors, len(es))
	for i, e := range es {
		loc := make([]any, 0, len(prefix)+len(e.Loc))
		loc = append(loc, prefix...)
		loc = append(loc, e.Loc...)
		out[i] = Error{Loc: loc, Msg: e.Msg, Type: e.Type}
	}
	return out
}

// EnumMessage renders the pydantic message for a value outside an enum:
// "Input should be 'a', 'b' or 'c'".
func EnumMessage(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = "'" + v + "'"
	}
	switch len(q) {
	case 0:
		return "Input should be a known value"
	case 1:
		return "Input should be " + q[0]
	}
	return "Input should be " + strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
