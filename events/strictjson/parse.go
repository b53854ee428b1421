package strictjson

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// ValueKind is the JSON type of a parsed Value.
type ValueKind uint8

// The JSON value kinds.
const (
	Null ValueKind = iota
	Bool
	Number
	String
	Array
	Object
)

func (k ValueKind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	default:
		return "object"
	}
}

// Value is one parsed JSON value. Objects keep their members in input order and
// every value keeps the exact bytes it was parsed from (Raw).
type Value struct {
	Kind    ValueKind
	Raw     []byte
	Str     string // String: the unescaped text
	Bool    bool
	Members []Member // Object
	Elems   []Value  // Array
}

// Member is one key of a JSON object.
type Member struct {
	Key   string
	Value Value
}

// Get returns the member named key of an object value.
func (v Value) Get(key string) (Value, bool) {
	for i := range v.Members {
		if v.Members[i].Key == key {
			return v.Members[i].Value, true
		}
	}
	return Value{}, false
}

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 512

// SyntaxError reports malformed JSON at a byte offset.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.Msg, e.Offset) }

// Parse parses exactly one JSON document (RFC 8259). It rejects trailing data,
// invalid UTF-8, duplicate object keys and nesting deeper than 512 levels.
func Parse(data []byte) (Value, error) {
	p := parser{data: data}
	p.ws()
	v, err := p.value(0)
	if err != nil {
		return Value{}, err
	}
	p.ws()
	if p.pos != len(p.data) {
		return Value{}, p.fail("unexpected data after the JSON value")
	}
	return v, nil
}

type parser struct {
	data []byte
	pos  int
}

func (p *parser) fail(msg string) error { return &SyntaxError{Offset: p.pos, Msg: msg} }

func (p *parser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (Value, error) {
	if depth > maxDepth {
		return Value{}, p.fail("nesting too deep")
	}
	if p.pos >= len(p.data) {
		return Value{}, p.fail("unexpected end of input")
	}
	start := p.pos
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: String, Str: s, Raw: p.data[start:p.pos]}, nil
	case c == 't':
		return p.literal("true", Value{Kind: Bool, Bool: true})
	case c == 'f':
		return p.literal("false", Value{Kind: Bool})
	case c == 'n':
		return p.literal("null", Value{Kind: Null})
	case c == '-' || (c >= '0' && c <= '9'):
		if err := p.number(); err != nil {
			return Value{}, err
		}
		return Value{Kind: Number, Raw: p.data[start:p.pos]}, nil
	default:
		return Value{}, p.fail(fmt.Sprintf("invalid character %q looking for a value", c))
	}
}

func (p *parser) literal(lit string, v Value) (Value, error) {
	if len(p.data)-p.pos < len(lit) || string(p.data[p.pos:p.pos+len(lit)]) != lit {
		return Value{}, p.fail("invalid literal")
	}
	v.Raw = p.data[p.pos : p.pos+len(lit)]
	p.pos += len(lit)
	return v, nil
}

func (p *parser) object(depth int) (Value, error) {
	start := p.pos
	p.pos++ // {
	v := Value{Kind: Object}
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		v.Raw = p.data[start:p.pos]
		v.Members = []Member{}
		return v, nil
	}
	var seen map[string]struct{}
	for {
		p.ws()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return Value{}, p.fail("expected a string object key")
		}
		keyPos := p.pos
		key, err := p.str()
		if err != nil {
			return Value{}, err
		}
		// Duplicate keys: a scan for small objects, a set for large ones
		// (so parsing stays linear in the number of keys).
		dup := false
		if seen != nil {
			_, dup = seen[key]
			seen[key] = struct{}{}
		} else {
			for i := range v.Members {
				if v.Members[i].Key == key {
					dup = true
					break
				}
			}
			if len(v.Members) == 16 {
				seen = make(map[string]struct{}, 64)
				for _, m := range v.Members {
					seen[m.Key] = struct{}{}
				}
				seen[key] = struct{}{}
			}
		}
		if dup {
			p.pos = keyPos
			return Value{}, p.fail(fmt.Sprintf("duplicate object key %q", key))
		}
		p.ws()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return Value{}, p.fail("expected ':' after object key")
		}
		p.pos++
		p.ws()
		mv, err := p.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		v.Members = append(v.Members, Member{Key: key, Value: mv})
		p.ws()
		if p.pos >= len(p.data) {
			return Value{}, p.fail("unexpected end of input in object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			v.Raw = p.data[start:p.pos]
			return v, nil
		default:
			return Value{}, p.fail("expected ',' or '}' in object")
		}
	}
}

func (p *parser) array(depth int) (Value, error) {
	start := p.pos
	p.pos++ // [
	v := Value{Kind: Array, Elems: []Value{}}
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		v.Raw = p.data[start:p.pos]
		return v, nil
	}
	for {
		p.ws()
		ev, err := p.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		v.Elems = append(v.Elems, ev)
		p.ws()
		if p.pos >= len(p.data) {
			return Value{}, p.fail("unexpected end of input in array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			v.Raw = p.data[start:p.pos]
			return v, nil
		default:
			return Value{}, p.fail("expected ',' or ']' in array")
		}
	}
}

// str parses a string literal starting at the opening quote.
func (p *parser) str() (string, error) {
	start := p.pos
	p.pos++ // "
	escaped := false
	for {
		if p.pos >= len(p.data) {
			return "", p.fail("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			raw := p.data[start:p.pos]
			if !escaped {
				if !utf8.Valid(raw) {
					return "", &SyntaxError{Offset: start, Msg: "invalid UTF-8 in string"}
				}
				return string(raw[1 : len(raw)-1]), nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", &SyntaxError{Offset: start, Msg: "invalid string escape"}
			}
			if !utf8.Valid(raw) {
				return "", &SyntaxError{Offset: start, Msg: "invalid UTF-8 in string"}
			}
			return s, nil
		case c == '\\':
			escaped = true
			p.pos++
			if p.pos >= len(p.data) {
				return "", p.fail("unterminated string")
			}
			switch p.data[p.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.pos++
			case 'u':
				if len(p.data)-p.pos < 5 || !isHex4(p.data[p.pos+1:p.pos+5]) {
					return "", p.fail("invalid \\u escape")
				}
				p.pos += 5
			default:
				return "", p.fail("invalid escape character")
			}
		case c < 0x20:
			return "", p.fail("control character in string")
		default:
			p.pos++
		}
	}
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func (p *parser) number() error {
	d := p.data
	if d[p.pos] == '-' {
		p.pos++
	}
	if p.pos >= len(d) {
		return p.fail("invalid number")
	}
	switch {
	case d[p.pos] == '0':
		p.pos++
	case d[p.pos] >= '1' && d[p.pos] <= '9':
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
		}
	default:
		return p.fail("invalid number")
	}
	if p.pos < len(d) && d[p.pos] == '.' {
		p.pos++
		if p.pos >= len(d) || d[p.pos] < '0' || d[p.pos] > '9' {
			return p.fail("invalid number: digit expected after '.'")
		}
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		if p.pos >= len(d) || d[p.pos] < '0' || d[p.pos] > '9' {
			return p.fail("invalid number: digit expected in exponent")
		}
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
		}
	}
	return nil
}
