package tools_test

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
)

// TestToolSchemasMatchActions checks every registered tool's schema against
// the action its arguments decode into: the properties are the action's
// JSON fields, the required ones are those the decoder requires, each
// property has the field's JSON type and enum, and the bounds and defaults
// the schema states are the decoder's. Nested objects are checked the same
// way.
func TestToolSchemasMatchActions(t *testing.T) {
	for _, tl := range registeredTools(t) {
		t.Run(tl.Name(), func(t *testing.T) {
			a, ok := events.NewAction(tl.ActionKind())
			if !ok {
				t.Fatalf("no action kind %q", tl.ActionKind())
			}
			matchObject(t, "parameters", tl.Parameters(), reflect.TypeOf(a).Elem(), true)
		})
	}
}

// matchObject compares an object schema with struct type st. top says the
// schema is a tool's parameters, which always list their required fields.
func matchObject(t *testing.T, at string, schema map[string]any, st reflect.Type, top bool) {
	t.Helper()
	if schema["type"] != "object" {
		t.Errorf("%s: type %v, want object", at, schema["type"])
	}
	props, ok := schema["properties"].(map[string]any)
	if !ok {
		t.Fatalf("%s: properties is a %T", at, schema["properties"])
	}
	_, fields := strictjson.Describe(st)
	var names, wantReq []string
	for _, f := range fields {
		names = append(names, f.Name)
		if f.Required {
			wantReq = append(wantReq, f.Name)
		}
	}
	var propNames []string
	for k := range props {
		propNames = append(propNames, k)
	}
	if !sameSet(propNames, names) {
		t.Errorf("%s: properties %v, %s has the JSON fields %v", at, sorted(propNames), st, sorted(names))
	}
	req, hasReq := schema["required"].([]string)
	if top && !hasReq {
		t.Errorf("%s: required is a %T", at, schema["required"])
	}
	if !sameSet(req, wantReq) {
		t.Errorf("%s: required %v, %s requires %v", at, req, st, wantReq)
	}
	for _, f := range fields {
		p, ok := props[f.Name].(map[string]any)
		if !ok {
			continue
		}
		matchField(t, at+"."+f.Name, p, f)
	}
}

// matchField compares a property's schema with the field's type and rules.
func matchField(t *testing.T, at string, p map[string]any, f strictjson.Field) {
	t.Helper()
	ft := f.Type
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	if want := jsonType(f, ft); p["type"] != want {
		t.Errorf("%s: type %v, want %s", at, p["type"], want)
	}
	if enum, ok := strictjson.EnumOf(ft); ok {
		if got, _ := p["enum"].([]string); !slices.Equal(got, enum) {
			t.Errorf("%s: enum %v, want %v", at, p["enum"], enum)
		}
	}
	if v, ok := p["minimum"]; ok && (f.Ge == nil || fmt.Sprint(v) != strconv.FormatFloat(*f.Ge, 'f', -1, 64)) {
		t.Errorf("%s: minimum %v, the decoder's ge is %v", at, v, deref(f.Ge))
	}
	for _, k := range []string{"minLength", "maxLength"} {
		if v, ok := p[k]; ok && v != f.Len {
			t.Errorf("%s: %s %v, the decoder's len is %d", at, k, v, f.Len)
		}
	}
	if v, ok := p["default"]; ok {
		zero := fmt.Sprint(reflect.Zero(ft).Interface())
		if (f.Default == nil && fmt.Sprint(v) != zero) || (f.Default != nil && fmt.Sprint(v) != *f.Default) {
			t.Errorf("%s: default %v, the decoder's default is %v", at, v, deref(f.Default))
		}
	}
	switch {
	case f.Raw:
	case ft.Kind() == reflect.Struct:
		matchObject(t, at, p, ft, false)
	case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
		items, _ := p["items"].(map[string]any)
		matchObject(t, at+".items", items, ft.Elem(), false)
	}
}

// jsonType is the JSON Schema type of a field's values.
func jsonType(f strictjson.Field, ft reflect.Type) string {
	switch {
	case f.Raw && f.Object:
		return "object"
	case f.Raw:
		return ""
	}
	switch ft.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return ft.Kind().String()
}

func sameSet(a, b []string) bool { return slices.Equal(sorted(a), sorted(b)) }

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
