// Package openapi builds OpenAPI 3.1 documents from a server's route table
// and its Go wire types, and renders them as a self-contained HTML page.
//
// Paths and methods come from the operations the caller lists (each server
// derives them from the patterns it really registers); schemas come from
// reflecting over the request and response types with strictjson's rules
// (events/strictjson.Describe), so a schema says what the codec does:
//
//   - a field is required in a request schema when strictjson requires it
//     (`acs:"required"`), and in a response schema when the encoder always
//     writes it (not a pointer, raw or nullable list that can be omitted;
//     emitnull fields are written as null);
//   - pointers and nullable/emitnull fields accept null;
//   - default=, const=, bounds and Enum values become default, const,
//     minimum/maximum/minLength/minItems... and enum;
//   - a registered strictjson union (events.Event, events.Action...) is a
//     oneOf of its kinds with a discriminator.
//
// A type whose request and response schemas differ gets two components,
// Name-Input and Name-Output (as FastAPI names them); otherwise one, Name.
package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/acs-project/acs/events/strictjson"
)

// Operation is one route of a document.
type Operation struct {
	// Method and Pattern are the route's net/http pattern: Pattern's
	// wildcards {name} and {name...} become path parameters, a trailing
	// {$} is dropped.
	Method  string
	Pattern string
	// ID is the operationId (unique in the document).
	ID      string
	Summary string
	Tags    []string
	// Request is a value of the request body's type (a typed nil is fine);
	// nil for a route without a body. RequestType is its media type
	// (default application/json); RequestOptional says an empty body is
	// accepted.
	Request         any
	RequestType     string
	RequestOptional bool
	// Query lists the query parameters.
	Query []Param
	// Header lists request headers beyond authentication.
	Header []Param
	// Responses are the statuses the route answers with their bodies.
	Responses []Response
	// Security names the security scheme the route requires ("" for an
	// open route).
	Security string
}

// Param is a query parameter or a header.
type Param struct {
	Name string
	// Type is a value of the parameter's type ("" string, 0 integer, false
	// boolean, []string{} repeated string...).
	Type        any
	Required    bool
	Description string
}

// Response is one status a route answers.
type Response struct {
	Status int
	// Body is a value of the body's type; nil for a response without a
	// body. Use Detail{} and Validation{} for error bodies and Binary{} for
	// bytes.
	Body any
	// ContentType defaults to application/json.
	ContentType string
	Description string
}

// Detail is the error body {"detail": "<message>"} (component ErrorDetail).
type Detail struct{}

// Validation is the 422 body {"detail": [{"loc", "msg", "type"}, ...]}
// (component HTTPValidationError, as FastAPI names it).
type Validation struct{}

// Binary is a response or request body of raw bytes.
type Binary struct{}

// Any is a body of any JSON value.
type Any struct{}

// FileUpload is a multipart/form-data body with one file part named file.
type FileUpload struct{}

// Errors returns the error responses for statuses: 422 is the validation
// list, every other status the {"detail": str} body.
func Errors(statuses ...int) []Response {
	out := make([]Response, 0, len(statuses))
	for _, s := range statuses {
		if s == http.StatusUnprocessableEntity {
			out = append(out, Response{Status: s, Body: Validation{}, Description: "Validation Error"})
			continue
		}
		out = append(out, Response{Status: s, Body: Detail{}, Description: http.StatusText(s)})
	}
	return out
}

// Info is the document's info object.
type Info struct {
	Title       string
	Version     string
	Description string
}

// Options configure a document.
type Options struct {
	Info Info
	// SecuritySchemes are the components.securitySchemes, by name.
	SecuritySchemes map[string]map[string]any
	// Schemas gives the schema of types that encode themselves (or whose
	// shape reflection cannot see), such as timestamps.
	Schemas map[reflect.Type]map[string]any
	// Names renames types' components (OpenHands' names).
	Names map[reflect.Type]string
	// OneOf lists the concrete types of interface types that are not
	// strictjson unions (values of each member type); Kinded members get a
	// "kind" discriminator.
	OneOf map[reflect.Type][]any
}

const (
	refPrefix = "#/components/schemas/"
	inMark    = "~in"
	outMark   = "~out"
)

type dir int

const (
	dirIn dir = iota
	dirOut
)

func (d dir) mark() string {
	if d == dirIn {
		return inMark
	}
	return outMark
}

var builtinTypes = map[reflect.Type]string{
	reflect.TypeFor[Detail]():     "ErrorDetail",
	reflect.TypeFor[Validation](): "HTTPValidationError",
}

type gen struct {
	opts     Options
	comps    map[string]map[string]any // name + mark -> schema
	typeName map[reflect.Type]string
	nameType map[string]reflect.Type
	final    func(provisional string) string
}

// Build returns the OpenAPI 3.1 document of ops. It fails on an operation
// without a method or responses, on a duplicate operation or id, and on a
// type it cannot describe.
func Build(opts Options, ops []Operation) (doc map[string]any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("openapi: %v", p)
		}
	}()
	g := &gen{opts: opts, comps: map[string]map[string]any{}, typeName: map[reflect.Type]string{}, nameType: map[string]reflect.Type{}}
	paths := map[string]any{}
	ids := map[string]bool{}
	for _, op := range ops {
		if op.Method == "" || op.Pattern == "" || len(op.Responses) == 0 {
			return nil, fmt.Errorf("openapi: operation %q %q: a method, a pattern and responses are required", op.Method, op.Pattern)
		}
		path, params := Path(op.Pattern)
		item, _ := paths[path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[path] = item
		}
		m := strings.ToLower(op.Method)
		if _, dup := item[m]; dup {
			return nil, fmt.Errorf("openapi: %s %s documented twice", op.Method, path)
		}
		if op.ID == "" || ids[op.ID] {
			return nil, fmt.Errorf("openapi: %s %s: operationId %q missing or not unique", op.Method, path, op.ID)
		}
		ids[op.ID] = true
		item[m] = g.operation(op, params)
	}
	components := map[string]any{"schemas": g.finish()}
	if len(opts.SecuritySchemes) > 0 {
		components["securitySchemes"] = opts.SecuritySchemes
	}
	info := map[string]any{"title": opts.Info.Title, "version": opts.Info.Version}
	if opts.Info.Description != "" {
		info["description"] = opts.Info.Description
	}
	doc = map[string]any{
		"openapi":    "3.1.0",
		"info":       info,
		"paths":      paths,
		"components": components,
	}
	// Rewrite the provisional references to the final names.
	return rewriteRefs(doc, g.final).(map[string]any), nil
}

var wildcard = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)(\.\.\.)?\}`)

// Path converts a net/http pattern path to an OpenAPI path and its path
// parameters: {name...} becomes {name}, a trailing {$} is dropped.
func Path(pattern string) (string, []string) {
	if _, p, ok := strings.Cut(pattern, " "); ok {
		pattern = p
	}
	pattern = strings.TrimSuffix(pattern, "{$}")
	var params []string
	path := wildcard.ReplaceAllStringFunc(pattern, func(s string) string {
		m := wildcard.FindStringSubmatch(s)
		params = append(params, m[1])
		return "{" + m[1] + "}"
	})
	return path, params
}

func (g *gen) operation(op Operation, pathParams []string) map[string]any {
	o := map[string]any{"operationId": op.ID}
	if op.Summary != "" {
		o["summary"] = op.Summary
	}
	if len(op.Tags) > 0 {
		o["tags"] = op.Tags
	}
	var params []any
	for _, p := range pathParams {
		params = append(params, map[string]any{"name": p, "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	for _, in := range []struct {
		where string
		ps    []Param
	}{{"query", op.Query}, {"header", op.Header}} {
		for _, p := range in.ps {
			q := map[string]any{"name": p.Name, "in": in.where, "required": p.Required, "schema": g.schema(reflect.TypeOf(p.Type), dirIn)}
			if p.Description != "" {
				q["description"] = p.Description
			}
			params = append(params, q)
		}
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	if op.Request != nil {
		ct := op.RequestType
		if ct == "" {
			ct = "application/json"
		}
		o["requestBody"] = map[string]any{
			"required": !op.RequestOptional,
			"content":  map[string]any{ct: map[string]any{"schema": g.body(op.Request, dirIn)}},
		}
	}
	resps := map[string]any{}
	for _, r := range op.Responses {
		code := strconv.Itoa(r.Status)
		if _, dup := resps[code]; dup {
			panic(fmt.Sprintf("%s %s: status %d documented twice", op.Method, op.Pattern, r.Status))
		}
		desc := r.Description
		if desc == "" {
			desc = http.StatusText(r.Status)
		}
		resp := map[string]any{"description": desc}
		if r.Body != nil {
			ct := r.ContentType
			if ct == "" {
				ct = "application/json"
			}
			resp["content"] = map[string]any{ct: map[string]any{"schema": g.body(r.Body, dirOut)}}
		}
		resps[code] = resp
	}
	o["responses"] = resps
	if op.Security != "" {
		o["security"] = []any{map[string]any{op.Security: []any{}}}
	}
	return o
}

func (g *gen) body(v any, d dir) map[string]any {
	switch v.(type) {
	case Binary:
		return map[string]any{"type": "string", "format": "binary"}
	case Any:
		return map[string]any{}
	case FileUpload:
		return map[string]any{"type": "object", "required": []any{"file"},
			"properties": map[string]any{"file": map[string]any{"type": "string", "format": "binary"}}}
	}
	return g.schema(reflect.TypeOf(v), d)
}

func ref(name string, d dir) map[string]any {
	return map[string]any{"$ref": refPrefix + name + d.mark()}
}

// name returns the component name of a named type, registering it.
func (g *gen) name(t reflect.Type) string {
	if n, ok := g.typeName[t]; ok {
		return n
	}
	n := g.opts.Names[t]
	if n == "" {
		n = genericName(t.Name())
	}
	n = sanitize(n)
	if other, taken := g.nameType[n]; taken && other != t {
		pkg := t.PkgPath()
		pkg = pkg[strings.LastIndex(pkg, "/")+1:]
		n = sanitize(pkg + "." + n)
	}
	g.typeName[t] = n
	g.nameType[n] = t
	return n
}

// genericName names an instance of a generic type after its arguments:
// Page[pkg.Conversation] is ConversationPage, Page[string] StringPage.
func genericName(n string) string {
	base, args, ok := strings.Cut(n, "[")
	if !ok {
		return n
	}
	var b strings.Builder
	for _, a := range strings.Split(strings.TrimSuffix(args, "]"), ",") {
		a = a[strings.LastIndex(a, ".")+1:]
		if a != "" {
			b.WriteString(strings.ToUpper(a[:1]) + a[1:])
		}
	}
	return b.String() + base
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func sanitize(s string) string { return unsafeName.ReplaceAllString(s, "_") }

func (g *gen) schema(t reflect.Type, d dir) map[string]any {
	if t == nil {
		return map[string]any{}
	}
	if s, ok := g.opts.Schemas[t]; ok {
		return clone(s)
	}
	if n, ok := builtinTypes[t]; ok {
		g.builtin()
		return map[string]any{"$ref": refPrefix + n + dirOut.mark()}
	}
	if vals, ok := strictjson.EnumOf(t); ok && t.Kind() == reflect.String {
		enum := make([]any, len(vals))
		for i, v := range vals {
			enum[i] = v
		}
		s := map[string]any{"type": "string", "enum": enum}
		if t.Name() == "" {
			return s
		}
		n := g.name(t)
		g.comps[n+d.mark()] = s
		return ref(n, d)
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && strictjson.Codec(t) {
		return map[string]any{"description": "any JSON value (" + t.String() + ")"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.schema(t.Elem(), d)
	case reflect.Interface:
		if members, ok := g.opts.OneOf[t]; ok {
			return g.oneOf(t, members, d)
		}
		if u, ok := strictjson.UnionOf(t); ok {
			return g.union(t, u, d)
		}
		return map[string]any{}
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t, d)
		}
		n := g.name(t)
		if _, done := g.comps[n+d.mark()]; !done {
			g.comps[n+d.mark()] = nil // in progress (recursive types)
			g.comps[n+d.mark()] = g.object(t, d)
		}
		return ref(n, d)
	case reflect.Slice, reflect.Array:
		if t == reflect.TypeFor[json.RawMessage]() {
			return map[string]any{}
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		items := g.schema(t.Elem(), d)
		if t.Elem().Kind() == reflect.Pointer {
			items = nullable(items)
		}
		return map[string]any{"type": "array", "items": items}
	case reflect.Map:
		vals := g.schema(t.Elem(), d)
		if t.Elem().Kind() == reflect.Pointer {
			vals = nullable(vals)
		}
		return map[string]any{"type": "object", "additionalProperties": vals}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	}
	panic(fmt.Sprintf("cannot describe type %v", t))
}

// builtin registers the error components.
func (g *gen) builtin() {
	if _, ok := g.comps["ErrorDetail"+outMark]; ok {
		return
	}
	str := map[string]any{"type": "string"}
	g.comps["ErrorDetail"+outMark] = map[string]any{
		"type": "object", "required": []any{"detail"}, "properties": map[string]any{"detail": str},
		"description": "An error: detail says what went wrong.",
	}
	g.comps["ValidationError"+outMark] = map[string]any{
		"type": "object", "required": []any{"loc", "msg", "type"},
		"properties": map[string]any{
			"loc":  map[string]any{"type": "array", "items": map[string]any{"anyOf": []any{str, map[string]any{"type": "integer"}}}},
			"msg":  str,
			"type": str,
		},
	}
	g.comps["HTTPValidationError"+outMark] = map[string]any{
		"type": "object", "required": []any{"detail"},
		"properties":  map[string]any{"detail": map[string]any{"type": "array", "items": ref("ValidationError", dirOut)}},
		"description": "Invalid fields: one entry per problem, located by loc (body, query or path, then the field).",
	}
	for _, n := range []string{"ErrorDetail", "ValidationError", "HTTPValidationError"} {
		g.nameType[n] = reflect.TypeFor[Detail]()
	}
}

func (g *gen) union(t reflect.Type, u *strictjson.Union, d dir) map[string]any {
	n := g.name(t)
	key := n + d.mark()
	if _, done := g.comps[key]; done {
		return ref(n, d)
	}
	g.comps[key] = nil
	var one []any
	mapping := map[string]any{}
	tags := append([]string(nil), u.Tags...)
	sort.Strings(tags)
	for _, tag := range tags {
		v, ok := u.New(tag)
		if !ok {
			continue
		}
		mt := reflect.TypeOf(v)
		for mt.Kind() == reflect.Pointer {
			mt = mt.Elem()
		}
		r := g.schema(mt, d)
		if mt.Kind() == reflect.Struct {
			// The discriminator is always present on the wire in responses;
			// in requests only when the union has no default.
			s := g.comps[g.name(mt)+d.mark()]
			if s != nil {
				props := s["properties"].(map[string]any)
				if _, ok := props[u.Key]; !ok {
					props[u.Key] = map[string]any{"type": "string", "const": tag}
				}
				if d == dirOut || u.Default == "" {
					s["required"] = addRequired(s["required"], u.Key)
				}
			}
		}
		one = append(one, r)
		mapping[tag] = r["$ref"]
	}
	g.comps[key] = map[string]any{"oneOf": one, "discriminator": map[string]any{"propertyName": u.Key, "mapping": mapping}}
	return ref(n, d)
}

func (g *gen) oneOf(t reflect.Type, members []any, d dir) map[string]any {
	n := g.name(t)
	key := n + d.mark()
	if _, done := g.comps[key]; done {
		return ref(n, d)
	}
	g.comps[key] = nil
	var one []any
	mapping := map[string]any{}
	for _, m := range members {
		mt := reflect.TypeOf(m)
		r := g.schema(mt, d)
		one = append(one, r)
		if mt.Kind() == reflect.Struct {
			if kind, _ := strictjson.Describe(mt); kind != "" {
				mapping[kind] = r["$ref"]
			}
		}
	}
	s := map[string]any{"oneOf": one}
	if len(mapping) == len(members) {
		s["discriminator"] = map[string]any{"propertyName": "kind", "mapping": mapping}
	}
	g.comps[key] = s
	return ref(n, d)
}

func addRequired(req any, key string) []any {
	list, _ := req.([]any)
	for _, k := range list {
		if k == key {
			return list
		}
	}
	return append(list, key)
}

func (g *gen) object(t reflect.Type, d dir) map[string]any {
	kind, fields := strictjson.Describe(t)
	props := map[string]any{}
	var req []any
	if kind != "" {
		props["kind"] = map[string]any{"type": "string", "const": kind}
		if d == dirOut {
			req = append(req, "kind")
		}
	}
	for _, f := range fields {
		props[f.Name] = g.field(f, d)
		if (d == dirIn && f.Required) || (d == dirOut && f.AlwaysEncoded) {
			req = append(req, f.Name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(req) > 0 {
		s["required"] = req
	}
	return s
}

func (g *gen) field(f strictjson.Field, d dir) map[string]any {
	var s map[string]any
	switch {
	case f.Const != nil:
		return map[string]any{"type": "string", "const": *f.Const}
	case f.Raw && f.Object:
		s = map[string]any{"type": "object"}
	default:
		s = g.schema(f.Type, d)
	}
	typ, _ := s["type"].(string)
	bound := func(key string, v *float64) {
		if v != nil {
			s[key] = *v
		}
	}
	bound("minimum", f.Ge)
	bound("exclusiveMinimum", f.Gt)
	bound("maximum", f.Le)
	bound("exclusiveMaximum", f.Lt)
	lenKey := map[string]string{"string": "Length", "array": "Items"}[typ]
	if lenKey != "" {
		if f.MinLen >= 0 {
			s["min"+lenKey] = f.MinLen
		}
		if f.MaxLen >= 0 {
			s["max"+lenKey] = f.MaxLen
		}
		if f.Len >= 0 {
			s["min"+lenKey], s["max"+lenKey] = f.Len, f.Len
		}
	}
	if f.Default != nil {
		s["default"] = defaultValue(*f.Default, f.Type)
	}
	if f.Nullable {
		s = nullable(s)
	}
	return s
}

func defaultValue(def string, t reflect.Type) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		if b, err := strconv.ParseBool(def); err == nil {
			return b
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if n, err := strconv.ParseFloat(def, 64); err == nil {
			return n
		}
	case reflect.String:
		return def
	}
	var v any
	if json.Unmarshal([]byte(def), &v) == nil {
		return v
	}
	return def
}

// nullable makes s accept null too.
func nullable(s map[string]any) map[string]any {
	if len(s) == 0 {
		return s
	}
	if _, isRef := s["$ref"]; !isRef {
		if _, composite := s["oneOf"]; !composite {
			if typ, ok := s["type"].(string); ok {
				s["type"] = []any{typ, "null"}
				if enum, ok := s["enum"].([]any); ok {
					s["enum"] = append(enum, nil)
				}
				if _, ok := s["const"]; ok {
					return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
				}
				return s
			}
		}
	}
	out := map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	if def, ok := s["default"]; ok && s["$ref"] != nil {
		delete(s, "default")
		out["default"] = def
	}
	return out
}

// finish decides the final component names: a type whose request and
// response schemas are the same (and reference only such types) keeps its
// name; otherwise Name-Input and Name-Output.
func (g *gen) finish() map[string]any {
	base := map[string]bool{}
	for k := range g.comps {
		base[strings.TrimSuffix(strings.TrimSuffix(k, inMark), outMark)] = true
	}
	split := map[string]bool{}
	for n := range base {
		in, hasIn := g.comps[n+inMark]
		out, hasOut := g.comps[n+outMark]
		if hasIn && hasOut && !sameModuloMarks(in, out) {
			split[n] = true
		}
	}
	// A merged schema that references a split one must split too.
	for changed := true; changed; {
		changed = false
		for n := range base {
			if split[n] {
				continue
			}
			in, hasIn := g.comps[n+inMark]
			if !hasIn {
				continue
			}
			if _, hasOut := g.comps[n+outMark]; !hasOut {
				continue
			}
			for _, r := range refsOf(in) {
				if split[r] {
					split[n], changed = true, true
					break
				}
			}
		}
	}
	g.final = func(provisional string) string {
		n := provisional
		var d dir
		switch {
		case strings.HasSuffix(n, inMark):
			n, d = strings.TrimSuffix(n, inMark), dirIn
		case strings.HasSuffix(n, outMark):
			n, d = strings.TrimSuffix(n, outMark), dirOut
		default:
			return n
		}
		if !split[n] {
			return n
		}
		if d == dirIn {
			return n + "-Input"
		}
		return n + "-Output"
	}
	out := map[string]any{}
	for k, s := range g.comps {
		out[g.final(k)] = s
	}
	return out
}

func sameModuloMarks(a, b map[string]any) bool {
	strip := func(n string) string { return strings.TrimSuffix(strings.TrimSuffix(n, inMark), outMark) }
	ja, _ := json.Marshal(rewriteRefs(a, strip))
	jb, _ := json.Marshal(rewriteRefs(b, strip))
	return string(ja) == string(jb)
}

// refsOf lists the base names s references.
func refsOf(s any) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case string:
			if n, ok := strings.CutPrefix(v, refPrefix); ok {
				out = append(out, strings.TrimSuffix(strings.TrimSuffix(n, inMark), outMark))
			}
		}
	}
	walk(s)
	return out
}

// rewriteRefs returns a copy of v with every schema reference renamed.
func rewriteRefs(v any, rename func(string) string) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = rewriteRefs(e, rename)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = rewriteRefs(e, rename)
		}
		return out
	case []string:
		return v
	case string:
		if n, ok := strings.CutPrefix(v, refPrefix); ok {
			return refPrefix + rename(n)
		}
	}
	return v
}

func clone(s map[string]any) map[string]any {
	return rewriteRefs(s, func(n string) string { return n }).(map[string]any)
}
