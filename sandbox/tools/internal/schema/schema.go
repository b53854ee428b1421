// Package schema derives the JSON Schema of a tool's arguments from a Go
// struct, so that a tool's parameters are written once, beside its action.
//
// Each exported field is a property named by its json tag. The field's type
// gives the JSON type: string, boolean, integer, number, array (a slice,
// with items) or object (a struct). A pointer is its element. A type with
// strictjson's EnumValues method gives enum. Two more tags give the rest:
//
//   - description:"..." is the property's description;
//   - jsonschema:"..." lists keywords, separated by commas: required,
//     minimum=N, minLength=N, maxLength=N, default=V (V is read as the
//     field's type) and enum=a|b|c.
//
// Both tags are text/template templates executed with the data given to
// Object, so that a limit the implementation uses is written once.
//
// The schema uses the Go types its readers assert: objects are
// map[string]any, required and enum are []string, numbers are int.
package schema

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"text/template"

	"github.com/acs-project/acs/events/strictjson"
)

// Object returns the schema of struct type t: an object whose properties
// are t's fields. The top-level object always lists its required fields; a
// nested one lists them only when there are some. data is what the tag
// templates are executed with. It fails on a field it cannot describe, an
// unknown keyword or a template that does not execute.
func Object(t reflect.Type, data any) (map[string]any, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("schema of %s: not a struct", t)
	}
	return object(t, data, true)
}

// For is Object for type T. It panics on an error: the tags it reads are
// constants, and every tool's tests build its schema.
func For[T any](data any) map[string]any {
	s, err := Object(reflect.TypeFor[T](), data)
	if err != nil {
		panic(err)
	}
	return s
}

// Render executes the text/template text with data. Text without an
// action is returned as it is.
func Render(text string, data any) (string, error) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	tm, err := template.New("").Option("missingkey=error").Parse(text)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := tm.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// MustRender is Render that panics on an error, for constant templates.
func MustRender(text string, data any) string {
	s, err := Render(text, data)
	if err != nil {
		panic(fmt.Sprintf("schema: render %.40q: %v", text, err))
	}
	return s
}

func object(t reflect.Type, data any, top bool) (map[string]any, error) {
	props := map[string]any{}
	required := []string{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil, fmt.Errorf("schema of %s: embedded field %s", t, f.Name)
		}
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			return nil, fmt.Errorf("schema of %s: field %s has no json name", t, f.Name)
		}
		if _, dup := props[name]; dup {
			return nil, fmt.Errorf("schema of %s: two fields named %q", t, name)
		}
		p, req, err := field(f, data)
		if err != nil {
			return nil, fmt.Errorf("schema of %s.%s: %w", t, f.Name, err)
		}
		props[name] = p
		if req {
			required = append(required, name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if top || len(required) > 0 {
		s["required"] = required
	}
	return s, nil
}

// field returns the schema of one field and whether it is required.
func field(f reflect.StructField, data any) (map[string]any, bool, error) {
	ft := elem(f.Type)
	p, err := typeSchema(ft, data)
	if err != nil {
		return nil, false, err
	}
	desc, err := Render(f.Tag.Get("description"), data)
	if err != nil {
		return nil, false, fmt.Errorf("description: %w", err)
	}
	if desc != "" {
		p["description"] = desc
	}
	keywords, err := Render(f.Tag.Get("jsonschema"), data)
	if err != nil {
		return nil, false, fmt.Errorf("jsonschema tag: %w", err)
	}
	required := false
	for kw := range strings.SplitSeq(keywords, ",") {
		key, val, _ := strings.Cut(kw, "=")
		switch key {
		case "":
		case "required":
			required = true
		case "minimum", "minLength", "maxLength":
			n, err := strconv.Atoi(val)
			if err != nil {
				return nil, false, fmt.Errorf("%s=%q: not an integer", key, val)
			}
			p[key] = n
		case "default":
			v, err := value(val, ft)
			if err != nil {
				return nil, false, fmt.Errorf("default=%q: %w", val, err)
			}
			p["default"] = v
		case "enum":
			p["enum"] = strings.Split(val, "|")
		default:
			return nil, false, fmt.Errorf("unknown jsonschema keyword %q", key)
		}
	}
	return p, required, nil
}

// typeSchema is the schema of a type: its JSON type, with the items of an
// array, the properties of an object and the values of an enum.
func typeSchema(t reflect.Type, data any) (map[string]any, error) {
	var s map[string]any
	switch t.Kind() {
	case reflect.String:
		s = map[string]any{"type": "string"}
	case reflect.Bool:
		s = map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s = map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		s = map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		items, err := typeSchema(elem(t.Elem()), data)
		if err != nil {
			return nil, err
		}
		s = map[string]any{"type": "array", "items": items}
	case reflect.Struct:
		return object(t, data, false)
	default:
		return nil, fmt.Errorf("no JSON Schema for a %s", t)
	}
	if enum, ok := strictjson.EnumOf(t); ok {
		s["enum"] = enum
	}
	return s, nil
}

// value reads a default value as the JSON value of type t.
func value(v string, t reflect.Type) (any, error) {
	switch t.Kind() {
	case reflect.String:
		return v, nil
	case reflect.Bool:
		return strconv.ParseBool(v)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.Atoi(v)
	case reflect.Float32, reflect.Float64:
		return strconv.ParseFloat(v, 64)
	}
	return nil, fmt.Errorf("no default for a %s", t)
}

func elem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
