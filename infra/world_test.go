package main

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/acs-project/acs/internal/lambdatest"
)

// The pseudo parameters of the emulated AWS environment.
var pseudo = map[string]string{
	"AWS::Region": lambdatest.Region, "AWS::AccountId": lambdatest.AccountID, "AWS::Partition": "aws",
	"AWS::URLSuffix": "amazonaws.com", "AWS::NoValue": "",
}

// resource is one resource of a synthesized template.
type resource struct {
	Stack, ID string
	Type      string
	Props     map[string]any
	Metadata  map[string]any
}

// world is a synthesized cloud assembly read back: every stack's resources,
// and what each resource resolves to once the test has stood it up
// (Ref and Fn::GetAtt values).
type world struct {
	dir       string
	resources map[string]*resource // "stack/id"
	order     []string
	exports   map[string]exported
	attrs     map[string]map[string]string // "stack/id" → attribute ("" for Ref) → value
}

type exported struct {
	stack string
	value any
}

func key(stack, id string) string { return stack + "/" + id }

// readWorld reads every stack template of the assembly in dir.
func readWorld(t *testing.T, dir string) *world {
	t.Helper()
	w := &world{dir: dir, resources: map[string]*resource{}, exports: map[string]exported{}, attrs: map[string]map[string]string{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.template.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates in %s: %v", dir, err)
	}
	sort.Strings(files)
	for _, f := range files {
		stack := strings.TrimSuffix(filepath.Base(f), ".template.json")
		tpl := readTemplate(t, dir, stack)
		res, _ := tpl["Resources"].(map[string]any)
		ids := make([]string, 0, len(res))
		for id := range res {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			r := res[id].(map[string]any)
			props, _ := r["Properties"].(map[string]any)
			meta, _ := r["Metadata"].(map[string]any)
			w.resources[key(stack, id)] = &resource{Stack: stack, ID: id, Type: r["Type"].(string), Props: props, Metadata: meta}
			w.order = append(w.order, key(stack, id))
		}
		outs, _ := tpl["Outputs"].(map[string]any)
		for _, o := range outs {
			o := o.(map[string]any)
			if ex, ok := o["Export"].(map[string]any); ok {
				name, err := w.resolve(stack, ex["Name"])
				if err != nil {
					t.Fatalf("export name in %s: %v", stack, err)
				}
				w.exports[name] = exported{stack: stack, value: o["Value"]}
			}
		}
	}
	return w
}

// ofType returns the resources of a type, in a stable order.
func (w *world) ofType(typ string) []*resource {
	var out []*resource
	for _, k := range w.order {
		if r := w.resources[k]; r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// set records what a resource resolves to.
func (w *world) set(r *resource, attr, value string) {
	k := key(r.Stack, r.ID)
	if w.attrs[k] == nil {
		w.attrs[k] = map[string]string{}
	}
	w.attrs[k][attr] = value
}

// resolve evaluates a template value in stack: literals, Ref, Fn::GetAtt,
// Fn::Join, Fn::Select, Fn::Split and Fn::ImportValue. Anything else, or a
// resource the test has not stood up, is an error: the template then uses
// something this test cannot show works.
func (w *world) resolve(stack string, v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case float64:
		return fmt.Sprint(v), nil
	case bool:
		return fmt.Sprint(v), nil
	case map[string]any:
		if len(v) != 1 {
			return "", fmt.Errorf("not an intrinsic: %v", v)
		}
		for fn, arg := range v {
			switch fn {
			case "Ref":
				name, _ := arg.(string)
				if p, ok := pseudo[name]; ok {
					return p, nil
				}
				if name == "AWS::StackName" {
					return stack, nil
				}
				return w.attr(stack, name, "")
			case "Fn::GetAtt":
				a, _ := arg.([]any)
				if len(a) != 2 {
					return "", fmt.Errorf("Fn::GetAtt %v", arg)
				}
				return w.attr(stack, fmt.Sprint(a[0]), fmt.Sprint(a[1]))
			case "Fn::Join":
				a, _ := arg.([]any)
				if len(a) != 2 {
					return "", fmt.Errorf("Fn::Join %v", arg)
				}
				parts, _ := a[1].([]any)
				var out []string
				for _, p := range parts {
					s, err := w.resolve(stack, p)
					if err != nil {
						return "", err
					}
					out = append(out, s)
				}
				return strings.Join(out, fmt.Sprint(a[0])), nil
			case "Fn::Select":
				a, _ := arg.([]any)
				if len(a) != 2 {
					return "", fmt.Errorf("Fn::Select %v", arg)
				}
				list, err := w.list(stack, a[1])
				if err != nil {
					return "", err
				}
				i := int(a[0].(float64))
				if i < 0 || i >= len(list) {
					return "", fmt.Errorf("Fn::Select %d of %d", i, len(list))
				}
				return list[i], nil
			case "Fn::ImportValue":
				name, err := w.resolve(stack, arg)
				if err != nil {
					return "", err
				}
				ex, ok := w.exports[name]
				if !ok {
					return "", fmt.Errorf("Fn::ImportValue %s: no stack exports it", name)
				}
				return w.resolve(ex.stack, ex.value)
			}
			return "", fmt.Errorf("%s: not understood by the test", fn)
		}
	}
	return "", fmt.Errorf("cannot resolve %T %v", v, v)
}

func (w *world) list(stack string, v any) ([]string, error) {
	if m, ok := v.(map[string]any); ok {
		if a, ok := m["Fn::Split"].([]any); ok && len(a) == 2 {
			s, err := w.resolve(stack, a[1])
			if err != nil {
				return nil, err
			}
			return strings.Split(s, fmt.Sprint(a[0])), nil
		}
	}
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("not a list: %v", v)
	}
	var out []string
	for _, e := range a {
		s, err := w.resolve(stack, e)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (w *world) attr(stack, id, attr string) (string, error) {
	if _, ok := w.resources[key(stack, id)]; !ok {
		return "", fmt.Errorf("%s/%s: no such resource", stack, id)
	}
	v, ok := w.attrs[key(stack, id)][attr]
	if !ok {
		what := "Ref"
		if attr != "" {
			what = "Fn::GetAtt " + attr
		}
		return "", fmt.Errorf("%s of %s/%s (%s): not stood up by the test", what, stack, id, w.resources[key(stack, id)].Type)
	}
	return v, nil
}

// must resolves v or fails the test.
func (w *world) must(t *testing.T, r *resource, v any) string {
	t.Helper()
	s, err := w.resolve(r.Stack, v)
	if err != nil {
		t.Fatalf("%s/%s (%s): %v", r.Stack, r.ID, r.Type, err)
	}
	return s
}

// refersTo finds the resource a template value names with Ref or
// Fn::GetAtt (through a Join), following Fn::ImportValue to its stack.
func (w *world) refersTo(stack string, v any, typ string) *resource {
	switch v := v.(type) {
	case map[string]any:
		for fn, arg := range v {
			var id string
			switch fn {
			case "Ref":
				id, _ = arg.(string)
			case "Fn::GetAtt":
				if a, ok := arg.([]any); ok && len(a) == 2 {
					id, _ = a[0].(string)
				}
			case "Fn::ImportValue":
				name, err := w.resolve(stack, arg)
				if err != nil {
					return nil
				}
				if ex, ok := w.exports[name]; ok {
					return w.refersTo(ex.stack, ex.value, typ)
				}
				return nil
			default:
				return w.refersTo(stack, arg, typ)
			}
			if r, ok := w.resources[key(stack, id)]; ok && r.Type == typ {
				return r
			}
		}
	case []any:
		for _, e := range v {
			if r := w.refersTo(stack, e, typ); r != nil {
				return r
			}
		}
	}
	return nil
}

// assetFunction is the function a Lambda resource's code is: its S3 key
// names a file asset of the assembly (what the CLI uploads), whose staged
// zip — the test's stand-in — names the function.
func (w *world) assetFunction(t *testing.T, r *resource) string {
	t.Helper()
	code, _ := r.Props["Code"].(map[string]any)
	s3key, _ := code["S3Key"].(string)
	var path string
	manifests, _ := filepath.Glob(filepath.Join(w.dir, "*.assets.json"))
	for _, m := range manifests {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		var man struct {
			Files map[string]struct {
				Source       struct{ Path string }
				Destinations map[string]struct{ ObjectKey string }
			}
		}
		if err := json.Unmarshal(b, &man); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		for _, f := range man.Files {
			for _, d := range f.Destinations {
				if d.ObjectKey == s3key && s3key != "" {
					path = f.Source.Path
				}
			}
		}
	}
	if path == "" {
		t.Fatalf("%s/%s: code %v is no asset of the assembly", r.Stack, r.ID, code)
	}
	zr, err := zip.OpenReader(filepath.Join(w.dir, path))
	if err != nil {
		t.Fatalf("%s/%s: asset %s: %v", r.Stack, r.ID, path, err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name != "bootstrap" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if name, ok := strings.CutPrefix(string(b), stubMarker); ok {
			return name
		}
	}
	t.Fatalf("%s/%s: asset %s has no bootstrap the test made", r.Stack, r.ID, path)
	return ""
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
