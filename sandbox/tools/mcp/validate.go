package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
)

// ArgumentError is a violation of a tool's input schema. Property is the
// argument at fault ("" when the arguments as a whole are wrong).
type ArgumentError struct {
	Property string
	Msg      string
}

func (e *ArgumentError) Error() string {
	if e.Property == "" {
		return e.Msg
	}
	return fmt.Sprintf("argument '%s': %s", e.Property, e.Msg)
}

// ArgumentErrors lists every violation found.
type ArgumentErrors []*ArgumentError

func (es ArgumentErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// ValidateArguments checks args against a tool's inputSchema and returns
// them compacted ({} when args is empty or null). It checks that args is a
// JSON object, that every property the schema requires is present and that
// each given property whose schema has a "type" (a name or a list of names
// among string, number, integer, boolean, object, array and null) has a
// value of that type. Other schema keywords are not checked (the server
// validates too). The error is ArgumentErrors, each naming its property.
func ValidateArguments(inputSchema, args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		trimmed = []byte("{}")
	}
	var obj map[string]json.RawMessage
	if jsonType(trimmed) != "object" || json.Unmarshal(trimmed, &obj) != nil {
		if !json.Valid(trimmed) {
			return nil, ArgumentErrors{{Msg: "arguments are not valid JSON"}}
		}
		return nil, ArgumentErrors{{Msg: "arguments must be a JSON object, got " + jsonType(trimmed)}}
	}
	var schema struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(inputSchema, &schema) // a schema we cannot read checks nothing
	var errs ArgumentErrors
	for _, name := range schema.Required {
		if _, ok := obj[name]; !ok {
			errs = append(errs, &ArgumentError{Property: name, Msg: "required argument is missing"})
		}
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		ps, ok := schema.Properties[name]
		if !ok {
			continue
		}
		want := schemaTypes(ps)
		if len(want) == 0 {
			continue
		}
		if got := jsonType(obj[name]); !typeMatches(want, got, obj[name]) {
			errs = append(errs, &ArgumentError{Property: name,
				Msg: fmt.Sprintf("must be %s, got %s", strings.Join(want, " or "), describeType(got, obj[name]))})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, trimmed); err != nil {
		return nil, ArgumentErrors{{Msg: "arguments are not valid JSON"}}
	}
	return buf.Bytes(), nil
}

// schemaTypes reads the "type" of a property schema.
func schemaTypes(ps json.RawMessage) []string {
	var s struct {
		Type json.RawMessage `json:"type"`
	}
	if json.Unmarshal(ps, &s) != nil || len(s.Type) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	if json.Unmarshal(s.Type, &many) == nil {
		return many
	}
	return nil
}

func typeMatches(want []string, got string, raw json.RawMessage) bool {
	for _, w := range want {
		switch {
		case w == got:
			return true
		case w == "number" && got == "number":
			return true
		case w == "integer" && got == "number" && isInteger(raw):
			return true
		case w != "string" && w != "number" && w != "integer" && w != "boolean" &&
			w != "object" && w != "array" && w != "null":
			return true // a type we do not know: accept
		}
	}
	return false
}

func describeType(got string, raw json.RawMessage) string {
	if got == "number" && !isInteger(raw) {
		return "a number with a fraction"
	}
	return got
}

// jsonType names the JSON type of a valid value.
func jsonType(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func isInteger(raw json.RawMessage) bool {
	f, ok := new(big.Float).SetString(strings.TrimSpace(string(raw)))
	return ok && f.IsInt()
}
