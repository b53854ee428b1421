package strictjson_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/acs-project/acs/events/strictjson"
)

type color string

func (color) EnumValues() []string { return []string{"red", "green"} }

type shape interface{ area() float64 }

type square struct {
	Side float64 `json:"side" acs:"required,ge=0"`
}

func (*square) Kind() string     { return "Square" }
func (s *square) area() float64  { return s.Side * s.Side }
func (*circle) Kind() string     { return "Circle" }
func (c *circle) area() float64  { return math.Pi * c.R * c.R }
func (c *circle) Validate() bool { return c.R >= 0 }

type circle struct {
	R float64 `json:"r" acs:"default=1"`
}

func init() {
	strictjson.RegisterUnion[shape](&strictjson.Union{
		Key:  "kind",
		Tags: []string{"Square", "Circle"},
		New: func(tag string) (any, bool) {
			switch tag {
			case "Square":
				return &square{}, true
			case "Circle":
				return &circle{}, true
			}
			return nil, false
		},
	})
}

type inner struct {
	Type string `json:"type" acs:"const=text"`
	Text string `json:"text" acs:"required"`
}

type sample struct {
	Name    string          `json:"name" acs:"required,minlen=1,maxlen=5"`
	Color   color           `json:"color" acs:"default=red"`
	Count   int             `json:"count" acs:"ge=0,le=100"`
	Ratio   *float64        `json:"ratio" acs:"ge=0,le=1"`
	Tab     string          `json:"tab" acs:"len=4,default=abcd"`
	Tags    []string        `json:"tags"`
	Maybe   []string        `json:"maybe" acs:"nullable"`
	Inner   *inner          `json:"inner"`
	Items   []inner         `json:"items"`
	Shape   shape           `json:"shape"`
	Always  *string         `json:"always" acs:"emitnull"`
	Data    json.RawMessage `json:"data" acs:"object,nullable"`
	Flag    bool            `json:"flag" acs:"default=true"`
	Ordered map[string]int  `json:"ordered"`
}

func (s *sample) ValidateStrict() []strictjson.Error {
	if s.Name == "bad" {
		return []strictjson.Error{{Loc: []any{"name"}, Msg: "name must not be bad", Type: "value_error"}}
	}
	return nil
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		loc     string
		errType string
	}{
		{"malformed", `{"name":`, "body[8]", "json_invalid"},
		{"trailing data", `{"name":"a"} x`, "body[13]", "json_invalid"},
		{"duplicate key", `{"name":"a","name":"b"}`, "body[12]", "json_invalid"},
		{"not an object", `[1]`, "body", "model_type"},
		{"unknown field", `{"name":"a","nope":1}`, "body.nope", "extra_forbidden"},
		{"missing required", `{}`, "body.name", "missing"},
		{"wrong type string", `{"name":1}`, "body.name", "string_type"},
		{"string too short", `{"name":""}`, "body.name", "string_too_short"},
		{"string too long", `{"name":"abcdef"}`, "body.name", "string_too_long"},
		{"enum", `{"name":"a","color":"blue"}`, "body.color", "enum"},
		{"int from float", `{"name":"a","count":1.5}`, "body.count", "int_from_float"},
		{"int bound low", `{"name":"a","count":-1}`, "body.count", "greater_than_equal"},
		{"int bound high", `{"name":"a","count":101}`, "body.count", "less_than_equal"},
		{"int string", `{"name":"a","count":"3"}`, "body.count", "int_type"},
		{"float bound", `{"name":"a","ratio":1.01}`, "body.ratio", "less_than_equal"},
		{"exact length", `{"name":"a","tab":"abc"}`, "body.tab", "string_too_short"},
		{"exact length long", `{"name":"a","tab":"abcde"}`, "body.tab", "string_too_long"},
		{"null for list", `{"name":"a","tags":null}`, "body.tags", "list_type"},
		{"null in list", `{"name":"a","tags":["x",null]}`, "body.tags[1]", "string_type"},
		{"const", `{"name":"a","inner":{"type":"image","text":"x"}}`, "body.inner.type", "literal_error"},
		{"nested missing", `{"name":"a","items":[{"text":"x"},{}]}`, "body.items[1].text", "missing"},
		{"union unknown tag", `{"name":"a","shape":{"kind":"Hexagon"}}`, "body.shape.kind", "union_tag_invalid"},
		{"union no tag", `{"name":"a","shape":{"side":1}}`, "body.shape.kind", "union_tag_not_found"},
		{"union member field", `{"name":"a","shape":{"kind":"Square","side":-1}}`, "body.shape.side", "greater_than_equal"},
		{"union member extra", `{"name":"a","shape":{"kind":"Circle","side":1}}`, "body.shape.side", "extra_forbidden"},
		{"raw must be object", `{"name":"a","data":[1]}`, "body.data", "dict_type"},
		{"bool type", `{"name":"a","flag":"true"}`, "body.flag", "bool_type"},
		{"map value type", `{"name":"a","ordered":{"x":"y"}}`, "body.ordered.x", "int_type"},
		{"validator", `{"name":"bad"}`, "body.name", "value_error"},
		{"huge int", `{"name":"a","count":1e300}`, "body.count", "int_parsing"},
		{"bad utf8", "{\"name\":\"\xff\"}", "body[8]", "json_invalid"},
		{"bad escape", `{"name":"\x"}`, "body[10]", "json_invalid"},
		{"control char", "{\"name\":\"a\nb\"}", "body[10]", "json_invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s sample
			err := strictjson.Unmarshal([]byte(tc.in), &s, "body")
			var es strictjson.Errors
			if !errors.As(err, &es) {
				t.Fatalf("want Errors, got %v", err)
			}
			if es[0].Path() != tc.loc || es[0].Type != tc.errType {
				t.Fatalf("got %s (%s) %q; want %s (%s)", es[0].Path(), es[0].Type, es[0].Msg, tc.loc, tc.errType)
			}
			if es[0].Msg == "" {
				t.Fatal("empty message")
			}
		})
	}
}

func TestDecodeDefaultsAndNulls(t *testing.T) {
	var s sample
	if err := strictjson.Unmarshal([]byte(`{"name":"a","maybe":null,"always":null,"ratio":null,"shape":{"kind":"Circle"}}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.Color != "red" || s.Tab != "abcd" || !s.Flag || s.Maybe != nil || s.Always != nil || s.Ratio != nil {
		t.Fatalf("defaults not applied: %+v", s)
	}
	c, ok := s.Shape.(*circle)
	if !ok || c.R != 1 {
		t.Fatalf("union default not applied: %#v", s.Shape)
	}
	// Decoding into a used value resets absent fields.
	if err := strictjson.Unmarshal([]byte(`{"name":"b"}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.Shape != nil || s.Name != "b" {
		t.Fatalf("absent field kept an old value: %+v", s)
	}
}

func TestEncodeCanonical(t *testing.T) {
	ratio := 0.5
	s := sample{
		Name: "a<b>", Color: "green", Ratio: &ratio, Tab: "wxyz",
		Items:   []inner{{Text: "hi & bye"}},
		Shape:   &square{Side: 2},
		Data:    json.RawMessage(`{ "z": 1, "a": [1, 2] }`),
		Ordered: map[string]int{"b": 2, "a": 1},
	}
	got := string(strictjson.MustMarshal(&s))
	want := `{"name":"a<b>","color":"green","count":0,"ratio":0.5,"tab":"wxyz","tags":[],"items":[{"type":"text","text":"hi & bye"}],"shape":{"kind":"Square","side":2},"always":null,"data":{"z":1,"a":[1,2]},"flag":false,"ordered":{"a":1,"b":2}}`
	if got != want {
		t.Fatalf("encoding:\n got %s\nwant %s", got, want)
	}
	var back sample
	if err := strictjson.Unmarshal([]byte(got), &back); err != nil {
		t.Fatal(err)
	}
	again := string(strictjson.MustMarshal(&back))
	if again != got {
		t.Fatalf("not a fixed point:\n%s\n%s", got, again)
	}
}

func TestFloatsMatchEncodingJSON(t *testing.T) {
	for _, f := range []float64{0, 1, -1.5, 1e-7, 123456789012345678901234.0, 0.1, 1e20, 1e21, 3.14159, -0.000001} {
		want, _ := json.Marshal(f)
		got, err := strictjson.AppendFloat(nil, f)
		if err != nil || string(got) != string(want) {
			t.Errorf("%v: got %s want %s", f, got, want)
		}
	}
	if _, err := strictjson.AppendFloat(nil, math.NaN()); err == nil {
		t.Error("NaN must not encode")
	}
}

func TestStringEscapes(t *testing.T) {
	in := "q\"b\\s\x01\n\t<>&\u2028é\xff"
	got := string(strictjson.AppendString(nil, in))
	want := `"q\"b\\s\u0001\n\t<>&\u2028é\ufffd"`
	if got != want {
		t.Fatalf("got %s want %s", got, want)
	}
	var back string
	if err := json.Unmarshal([]byte(got), &back); err != nil || back != strings.ToValidUTF8(in, "\ufffd") {
		t.Fatalf("round trip: %q %v", back, err)
	}
}

func TestDepthLimit(t *testing.T) {
	deep := strings.Repeat("[", 600) + strings.Repeat("]", 600)
	if _, err := strictjson.Parse([]byte(deep)); err == nil {
		t.Fatal("expected nesting error")
	}
	ok := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	if _, err := strictjson.Parse([]byte(ok)); err != nil {
		t.Fatal(err)
	}
}

func TestParseKeepsOrderAndRaw(t *testing.T) {
	v, err := strictjson.Parse([]byte(` {"b": [1, "x\u0041"], "a": null} `))
	if err != nil {
		t.Fatal(err)
	}
	if v.Members[0].Key != "b" || v.Members[1].Key != "a" {
		t.Fatal("member order lost")
	}
	if got := string(v.Members[0].Value.Raw); got != `[1, "x\u0041"]` {
		t.Fatalf("raw span %q", got)
	}
	if v.Members[0].Value.Elems[1].Str != "xA" {
		t.Fatal("escape not decoded")
	}
}

func decodeAny(b []byte) (any, error) {
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `[1,2.5e3,-0]`, `{"a":"\u00e9\n"}`, `"x"`, `nul`, `{"a":1,}`, `01`, `1.`, `{"a":{"b":[true,false,null]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := strictjson.Parse(data)
		valid := json.Valid(data)
		if err == nil && !valid {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		if err != nil {
			var se *strictjson.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error is not a SyntaxError: %v", err)
			}
			return
		}
		want, err := decodeAny(data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeAny(v.Raw)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("raw span differs from input")
		}
	})
}
