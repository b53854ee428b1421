package schema_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/tools/internal/schema"
)

type color string

func (color) EnumValues() []string { return []string{"red", "green"} }

type item struct {
	Title string `json:"title" jsonschema:"required" description:"The title."`
	Notes string `json:"notes"`
}

type optional struct {
	A string `json:"a"`
}

type everything struct {
	Name    string   `json:"name" jsonschema:"required" description:"At most {{.Max}} characters."`
	Count   *int     `json:"count" jsonschema:"minimum=1,default=3"`
	Ratio   *float64 `json:"ratio" jsonschema:"minimum=0"`
	On      bool     `json:"on" jsonschema:"default=false"`
	Color   color    `json:"color" jsonschema:"default=red"`
	Mode    string   `json:"mode" jsonschema:"enum=a|b"`
	ID      string   `json:"id" jsonschema:"required,minLength={{.Len}},maxLength={{.Len}}"`
	Range   []int    `json:"range" description:"Two lines."`
	Items   []item   `json:"items"`
	Nested  optional `json:"nested"`
	Skipped string   `json:"-"`
	hidden  string
}

func TestObject(t *testing.T) {
	data := struct{ Max, Len int }{200, 4}
	got, err := schema.Object(reflect.TypeFor[everything](), data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":  map[string]any{"type": "string", "description": "At most 200 characters."},
			"count": map[string]any{"type": "integer", "minimum": 1, "default": 3},
			"ratio": map[string]any{"type": "number", "minimum": 0},
			"on":    map[string]any{"type": "boolean", "default": false},
			"color": map[string]any{"type": "string", "enum": []string{"red", "green"}, "default": "red"},
			"mode":  map[string]any{"type": "string", "enum": []string{"a", "b"}},
			"id":    map[string]any{"type": "string", "minLength": 4, "maxLength": 4},
			"range": map[string]any{"type": "array", "items": map[string]any{"type": "integer"}, "description": "Two lines."},
			"items": map[string]any{"type": "array", "items": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"title": map[string]any{"type": "string", "description": "The title."},
					"notes": map[string]any{"type": "string"},
				},
				"required": []string{"title"},
			}},
			"nested": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}},
		},
		"required": []string{"name", "id"},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("got\n%s\nwant\n%s", g, w)
	}
}

func TestObjectNoFields(t *testing.T) {
	got := schema.For[struct{}](nil)
	want := map[string]any{"type": "object", "properties": map[string]any{}, "required": []string{}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

// TestObjectFreshMaps: each call returns maps of its own, so a caller may
// change its copy.
func TestObjectFreshMaps(t *testing.T) {
	a := schema.For[item](nil)
	a["properties"].(map[string]any)["title"].(map[string]any)["description"] = "changed"
	b := schema.For[item](nil)
	if d := b["properties"].(map[string]any)["title"].(map[string]any)["description"]; d != "The title." {
		t.Errorf("second schema has description %q", d)
	}
}

func TestObjectErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{"not a struct", reflect.TypeFor[int](), "not a struct"},
		{"no json name", reflect.TypeFor[struct {
			A string
		}](), "no json name"},
		{"duplicate name", reflect.StructOf([]reflect.StructField{
			{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"a"`},
			{Name: "B", Type: reflect.TypeFor[string](), Tag: `json:"a"`},
		}), `two fields named "a"`},
		{"embedded", reflect.TypeFor[struct{ optional }](), "embedded field"},
		{"unknown keyword", reflect.TypeFor[struct {
			A string `json:"a" jsonschema:"requried"`
		}](), `unknown jsonschema keyword "requried"`},
		{"bad minimum", reflect.TypeFor[struct {
			A int `json:"a" jsonschema:"minimum=x"`
		}](), "not an integer"},
		{"bad default", reflect.TypeFor[struct {
			A bool `json:"a" jsonschema:"default=maybe"`
		}](), "default="},
		{"unsupported type", reflect.TypeFor[struct {
			A map[string]string `json:"a"`
		}](), "no JSON Schema for a map[string]string"},
		{"missing template data", reflect.TypeFor[struct {
			A string `json:"a" description:"{{.Nope}}"`
		}](), "description"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := schema.Object(tc.typ, map[string]int{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestRender(t *testing.T) {
	data := struct{ N int }{2000}
	for _, tc := range []struct{ in, want string }{
		{"up to {{.N}} lines", "up to 2000 lines"},
		{"no action: {a,b} [x]", "no action: {a,b} [x]"},
		{"", ""},
	} {
		got, err := schema.Render(tc.in, data)
		if err != nil || got != tc.want {
			t.Errorf("Render(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := schema.Render("{{.Missing}}", data); err == nil {
		t.Error("a missing field rendered")
	}
}
