package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// Docs serves one document as JSON and as an HTML page, built once on
// first use.
type Docs struct {
	build func() (map[string]any, error)

	once       sync.Once
	json, html []byte
	err        error
}

// NewDocs returns the document build makes, served lazily.
func NewDocs(build func() (map[string]any, error)) *Docs { return &Docs{build: build} }

func (d *Docs) load() error {
	d.once.Do(func() {
		doc, err := d.build()
		if err != nil {
			d.err = err
			return
		}
		if d.json, err = json.MarshalIndent(doc, "", "  "); err != nil {
			d.err = fmt.Errorf("encode the OpenAPI document: %w", err)
			return
		}
		d.html, d.err = HTML(doc)
	})
	return d.err
}

// Document returns the document as JSON.
func (d *Docs) Document() ([]byte, error) {
	if err := d.load(); err != nil {
		return nil, err
	}
	return d.json, nil
}

// Page returns the HTML page.
func (d *Docs) Page() ([]byte, error) {
	if err := d.load(); err != nil {
		return nil, err
	}
	return d.html, nil
}

// ServeJSON answers GET /openapi.json. fail writes the error when the
// document cannot be built (a bug: the tests build it).
func (d *Docs) ServeJSON(w http.ResponseWriter, fail func(http.ResponseWriter, error)) {
	b, err := d.Document()
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// ServeHTML answers GET /docs.
func (d *Docs) ServeHTML(w http.ResponseWriter, fail func(http.ResponseWriter, error)) {
	b, err := d.Page()
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	_, _ = w.Write(b)
}

type pageOp struct {
	Method, Path, ID, Summary string
	Auth                      string
	Params                    []string
	Request                   template.HTML
	Responses                 []pageResp
}

type pageResp struct {
	Status string
	Desc   string
	Body   template.HTML
}

type pageSchema struct {
	Name string
	JSON string
}

var page = template.Must(template.New("docs").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} {{.Version}}: API</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
.op{border:1px solid #ccc;border-radius:4px;margin:.6em 0;padding:.4em .8em}
.m{display:inline-block;min-width:4.5em;font-weight:bold}
.GET{color:#0a6}.POST{color:#06c}.PUT,.PATCH{color:#a60}.DELETE{color:#c22}
code,pre{font-family:ui-monospace,monospace}pre{background:#f6f6f6;padding:.6em;overflow:auto}
small{color:#666}
</style></head><body>
<h1>{{.Title}} <small>{{.Version}}</small></h1>
<p>{{.Description}}</p>
<p>The machine-readable document: <a href="openapi.json">openapi.json</a> (OpenAPI {{.OpenAPI}}).</p>
<h2>Operations</h2>
{{range .Ops}}<div class="op" id="op-{{.ID}}"><div><span class="m {{.Method}}">{{.Method}}</span> <code>{{.Path}}</code> <small>{{.ID}}{{if .Auth}} · auth: {{.Auth}}{{end}}</small></div>
{{if .Summary}}<div>{{.Summary}}</div>{{end}}
{{if .Params}}<div>Parameters: {{range $i, $p := .Params}}{{if $i}}, {{end}}<code>{{$p}}</code>{{end}}</div>{{end}}
{{if .Request}}<div>Request body: {{.Request}}</div>{{end}}
<ul>{{range .Responses}}<li><b>{{.Status}}</b> {{.Desc}}{{if .Body}}: {{.Body}}{{end}}</li>{{end}}</ul></div>
{{end}}
<h2>Schemas</h2>
{{range .Schemas}}<h3 id="schema-{{.Name}}">{{.Name}}</h3><pre>{{.JSON}}</pre>
{{end}}
</body></html>
`))

// HTML renders doc (a document Build made) as a self-contained page: every
// operation with its parameters, request and response schemas, then every
// schema. It loads nothing from elsewhere.
func HTML(doc map[string]any) ([]byte, error) {
	info, _ := doc["info"].(map[string]any)
	paths, _ := doc["paths"].(map[string]any)
	var ops []pageOp
	pathNames := make([]string, 0, len(paths))
	for p := range paths {
		pathNames = append(pathNames, p)
	}
	sort.Strings(pathNames)
	for _, p := range pathNames {
		item, _ := paths[p].(map[string]any)
		for _, m := range []string{"get", "post", "put", "patch", "delete"} {
			o, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			op := pageOp{Method: strings.ToUpper(m), Path: p}
			op.ID, _ = o["operationId"].(string)
			op.Summary, _ = o["summary"].(string)
			if sec, ok := o["security"].([]any); ok {
				for _, s := range sec {
					for k := range s.(map[string]any) {
						op.Auth = k
					}
				}
			}
			if ps, ok := o["parameters"].([]any); ok {
				for _, pv := range ps {
					pm := pv.(map[string]any)
					op.Params = append(op.Params, fmt.Sprintf("%v (%v)", pm["name"], pm["in"]))
				}
			}
			if rb, ok := o["requestBody"].(map[string]any); ok {
				op.Request = contentHTML(rb["content"])
			}
			resps, _ := o["responses"].(map[string]any)
			codes := make([]string, 0, len(resps))
			for c := range resps {
				codes = append(codes, c)
			}
			sort.Strings(codes)
			for _, c := range codes {
				r := resps[c].(map[string]any)
				desc, _ := r["description"].(string)
				op.Responses = append(op.Responses, pageResp{Status: c, Desc: desc, Body: contentHTML(r["content"])})
			}
			ops = append(ops, op)
		}
	}
	var schemas []pageSchema
	if comps, ok := doc["components"].(map[string]any); ok {
		ss, _ := comps["schemas"].(map[string]any)
		names := make([]string, 0, len(ss))
		for n := range ss {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			b, err := json.MarshalIndent(ss[n], "", "  ")
			if err != nil {
				return nil, fmt.Errorf("render schema %s: %w", n, err)
			}
			schemas = append(schemas, pageSchema{Name: n, JSON: string(b)})
		}
	}
	var buf bytes.Buffer
	err := page.Execute(&buf, map[string]any{
		"Title": info["title"], "Version": info["version"], "Description": info["description"], "OpenAPI": doc["openapi"],
		"Ops": ops, "Schemas": schemas,
	})
	if err != nil {
		return nil, fmt.Errorf("render the docs page: %w", err)
	}
	return buf.Bytes(), nil
}

// contentHTML describes a content map: media type and schema (a link to a
// named schema, else the schema inline).
func contentHTML(c any) template.HTML {
	cm, _ := c.(map[string]any)
	if len(cm) == 0 {
		return ""
	}
	types := make([]string, 0, len(cm))
	for t := range cm {
		types = append(types, t)
	}
	sort.Strings(types)
	var parts []string
	for _, t := range types {
		mt, _ := cm[t].(map[string]any)
		parts = append(parts, template.HTMLEscapeString(t)+" "+schemaHTML(mt["schema"]))
	}
	return template.HTML(strings.Join(parts, "; "))
}

func schemaHTML(s any) string {
	m, _ := s.(map[string]any)
	if r, ok := m["$ref"].(string); ok {
		n := strings.TrimPrefix(r, refPrefix)
		return `<a href="#schema-` + template.HTMLEscapeString(n) + `"><code>` + template.HTMLEscapeString(n) + `</code></a>`
	}
	if m["type"] == "array" {
		return "array of " + schemaHTML(m["items"])
	}
	b, _ := json.Marshal(m)
	return "<code>" + template.HTMLEscapeString(string(b)) + "</code>"
}
