package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// cloudFormationResourceLimit is the most resources one stack may have.
const cloudFormationResourceLimit = 500

// dependencies is what each resource of a template depends on within it:
// its DependsOn, and the resources its properties name (Ref, Fn::GetAtt,
// Fn::Sub), as CloudFormation orders them.
func dependencies(tpl map[string]any) map[string][]string {
	res, _ := tpl["Resources"].(map[string]any)
	deps := map[string][]string{}
	for id, r := range res {
		r := r.(map[string]any)
		set := map[string]bool{}
		switch d := r["DependsOn"].(type) {
		case string:
			set[d] = true
		case []any:
			for _, e := range d {
				set[fmt.Sprint(e)] = true
			}
		}
		collectRefs(r["Properties"], set)
		for d := range set {
			if _, ok := res[d]; ok {
				deps[id] = append(deps[id], d)
			}
		}
		sort.Strings(deps[id])
		if _, ok := deps[id]; !ok {
			deps[id] = nil
		}
	}
	return deps
}

var subVariable = regexp.MustCompile(`\$\{([^!}][^}]*)\}`)

// collectRefs adds the logical ids v names to set.
func collectRefs(v any, set map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for fn, arg := range v {
			switch fn {
			case "Ref":
				if s, ok := arg.(string); ok {
					set[s] = true
				}
			case "Fn::GetAtt":
				switch a := arg.(type) {
				case []any:
					if len(a) > 0 {
						set[fmt.Sprint(a[0])] = true
					}
				case string:
					set[strings.SplitN(a, ".", 2)[0]] = true
				}
			case "Fn::Sub":
				str := arg
				if a, ok := arg.([]any); ok && len(a) > 0 {
					str = a[0]
					if len(a) > 1 {
						collectRefs(a[1], set)
					}
				}
				if s, ok := str.(string); ok {
					for _, m := range subVariable.FindAllStringSubmatch(s, -1) {
						set[strings.SplitN(m[1], ".", 2)[0]] = true
					}
				}
			}
			collectRefs(arg, set)
		}
	case []any:
		for _, e := range v {
			collectRefs(e, set)
		}
	}
}

// cycle returns one dependency cycle of deps (its resources, the first
// repeated at the end), or nil when there is none.
func cycle(deps map[string][]string) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(id string) []string
	visit = func(id string) []string {
		switch state[id] {
		case open:
			i := len(path) - 1
			for path[i] != id {
				i--
			}
			return append(append([]string{}, path[i:]...), id)
		case done:
			return nil
		}
		state[id] = open
		path = append(path, id)
		for _, d := range deps[id] {
			if c := visit(d); c != nil {
				return c
			}
		}
		path = path[:len(path)-1]
		state[id] = done
		return nil
	}
	ids := make([]string, 0, len(deps))
	for id := range deps {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if c := visit(id); c != nil {
			return c
		}
	}
	return nil
}

// TestCycleFinder: the check below finds a cycle through Ref, Fn::GetAtt,
// Fn::Sub and DependsOn, and none in an ordered template.
func TestCycleFinder(t *testing.T) {
	ordered := map[string]any{"Resources": map[string]any{
		"Api":    map[string]any{"Type": "T"},
		"Dist":   map[string]any{"Type": "T", "Properties": map[string]any{"Origin": map[string]any{"Fn::Join": []any{"", []any{map[string]any{"Ref": "Api"}, ".execute-api"}}}}},
		"Fn":     map[string]any{"Type": "T", "Properties": map[string]any{"Url": map[string]any{"Fn::GetAtt": []any{"Dist", "DomainName"}}}},
		"Method": map[string]any{"Type": "T", "Properties": map[string]any{"Uri": map[string]any{"Fn::Sub": "arn:${AWS::Partition}:${Fn.Arn}"}}},
		"Deploy": map[string]any{"Type": "T", "DependsOn": []any{"Method"}},
		"Stage":  map[string]any{"Type": "T", "Properties": map[string]any{"DeploymentId": map[string]any{"Ref": "Deploy"}}},
	}}
	if c := cycle(dependencies(ordered)); c != nil {
		t.Fatalf("cycle %v in an ordered template", c)
	}
	// The distribution forwarding to the stage closes the circle.
	ordered["Resources"].(map[string]any)["Dist"] = map[string]any{"Type": "T", "Properties": map[string]any{"Origin": map[string]any{"Ref": "Stage"}}}
	c := cycle(dependencies(ordered))
	if len(c) != 6 || c[0] != c[len(c)-1] {
		t.Fatalf("cycle %v, want Dist → Stage → Deploy → Method → Fn → Dist", c)
	}
}

// TestNoCycleAndUnderTheResourceLimit: every stack, with every optional
// feature on that adds resources (UI files, a custom domain, Cognito, X-Ray,
// EKS), deploys: CloudFormation refuses a template whose resources depend on
// each other in a circle (which synthesis does not check within a stack)
// and one with more than 500 resources.
func TestNoCycleAndUnderTheResourceLimit(t *testing.T) {
	p := webDirProps(t)
	p.DomainName, p.CertificateARN = "acs.example.com", "arn:aws:acm:us-east-1:123456789012:certificate/abc"
	p.XRay = true
	_, dir := synth(t, p)
	files, err := filepath.Glob(filepath.Join(dir, "*.template.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates: %v", err)
	}
	for _, f := range files {
		stack := strings.TrimSuffix(filepath.Base(f), ".template.json")
		tpl := readTemplate(t, dir, stack)
		deps := dependencies(tpl)
		if c := cycle(deps); c != nil {
			t.Errorf("%s: circular dependency %s", stack, strings.Join(c, " → "))
		}
		n := len(deps)
		t.Logf("%s: %d resources", stack, n)
		if n >= cloudFormationResourceLimit {
			t.Errorf("%s: %d resources, CloudFormation's limit is %d", stack, n, cloudFormationResourceLimit)
		}
	}
}
