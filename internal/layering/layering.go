// Package layering states the import rules of DESIGN.md as data and checks
// a module's import graph against them (its test runs the check on this
// module with `go list -deps`). The rules concern the packages a program
// links: imports made only by tests are not checked.
//
// The layers, by import path below the module:
//
//   - the domain, shared/acs, imports nothing of the module;
//   - the adapters (Adapters: each wraps one infrastructure behind an acs
//     contract) import the domain, never each other;
//   - only the wiring (functions/..., cmd/..., infra: programs) imports an
//     adapter, and nothing imports the wiring;
//   - the two halves meet only in neutral packages, events/... and
//     internal/... (which import nothing of shared/, sandbox/ or the
//     wiring), and in the agent-server wire types, sandbox/agentwire/... (the
//     one part of sandbox/ the control plane may import; types only,
//     without net/http);
//   - sandbox/... imports nothing of shared/ or the wiring, and no AWS or
//     Kubernetes package, not even through another package;
//   - the typed client, client/..., imports wire and domain packages only
//     (sandbox/agentwire/..., shared/acs, shared/v1wire, events/...,
//     internal/...), never an implementation package of either half.
package layering

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Adapters are the packages that wrap one piece of infrastructure behind
// an acs contract (store, queue, blobs, runtime, sealer). A new adapter is
// added here, so that the rules hold for it too.
var Adapters = []string{
	"shared/boltstore", "shared/dynamostore",
	"shared/localqueue", "shared/sqsqueue",
	"shared/fileblob", "shared/s3blob",
	"shared/procsandbox", "shared/kubesandbox", "shared/runtimeapi",
	"shared/sealbox",
}

// SharedWire are the sandbox packages the control plane may import: the
// agent server's wire types.
var SharedWire = []string{"sandbox/agentwire"}

// ClientMay are the packages outside client/ and the neutral packages that
// the typed client may import: the wire and domain types of both servers.
var ClientMay = append([]string{"shared/acs", "shared/v1wire"}, SharedWire...)

// foreignToSandbox are import-path prefixes of the AWS and Kubernetes
// packages sandbox/... may not link.
var foreignToSandbox = []string{"github.com/aws/", "github.com/awslabs/", "k8s.io/", "sigs.k8s.io/"}

// Package is one package of the import graph: its import path and the
// packages it imports directly (not by tests).
type Package struct {
	ImportPath string
	Imports    []string
}

// Violation is one import that breaks a rule.
type Violation struct {
	// Rule says which rule, in words.
	Rule string
	// From is the importing package; Import what it imports; Via the
	// chain from Import to the forbidden package (empty when Import is
	// itself forbidden). Paths are relative to the module.
	From, Import string
	Via          []string
}

func (v Violation) String() string {
	s := fmt.Sprintf("%s imports %s", v.From, v.Import)
	if len(v.Via) > 0 {
		s += fmt.Sprintf(", which brings in %s (%s)", v.Via[len(v.Via)-1], strings.Join(append([]string{v.Import}, v.Via...), " → "))
	}
	return s + ": " + v.Rule
}

// rule is one import rule: every package in members must not import,
// directly or through packages outside members, a forbidden package.
// Imports between members are not checked by the rule (each member is
// checked itself).
type rule struct {
	text      string
	members   func(p string) bool
	forbidden func(p string) bool
}

// Check returns every violation of the rules in the graph pkgs of module
// (whose packages are named by their full import path), sorted. pkgs must
// hold every package the module's packages depend on (`go list -deps`).
func Check(module string, pkgs []Package) []Violation {
	imports := map[string][]string{}
	for _, p := range pkgs {
		imports[p.ImportPath] = p.Imports
	}
	rel := func(p string) (string, bool) {
		if p == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	name := func(p string) string {
		if r, ok := rel(p); ok {
			return r
		}
		return p
	}
	inModule := func(p string) bool { _, ok := rel(p); return ok }
	under := func(p string, roots ...string) bool {
		r, ok := rel(p)
		if !ok {
			return false
		}
		for _, root := range roots {
			if r == root || strings.HasPrefix(r, root+"/") {
				return true
			}
		}
		return false
	}
	adapter := func(p string) bool { r, ok := rel(p); return ok && slices.Contains(Adapters, r) }
	wiring := func(p string) bool { return under(p, "functions", "cmd", "infra") }
	neutral := func(p string) bool { return under(p, "events", "internal") }
	foreign := func(p string) bool {
		for _, f := range foreignToSandbox {
			if strings.HasPrefix(p, f) {
				return true
			}
		}
		return false
	}

	rules := []rule{
		{
			text:      "the domain (shared/acs) imports nothing of the module",
			members:   func(p string) bool { return under(p, "shared/acs") },
			forbidden: inModule,
		},
		{
			text:      "only the wiring (functions/..., cmd/..., infra) imports adapters",
			members:   func(p string) bool { return inModule(p) && !wiring(p) && !adapter(p) },
			forbidden: adapter,
		},
		{
			text:      "nothing imports the wiring (functions/..., cmd/..., infra)",
			members:   func(p string) bool { return inModule(p) && !wiring(p) },
			forbidden: wiring,
		},
		{
			text:    "neutral packages (events/..., internal/...) import nothing of shared/, sandbox/ or the wiring",
			members: neutral,
			forbidden: func(p string) bool {
				return inModule(p) && !neutral(p)
			},
		},
		{
			text:    "sandbox/... imports nothing of shared/ or the wiring, and no AWS or Kubernetes package",
			members: func(p string) bool { return under(p, "sandbox") },
			forbidden: func(p string) bool {
				return foreign(p) || (inModule(p) && !under(p, "sandbox") && !neutral(p))
			},
		},
		{
			text:    "the agent-server wire types (" + strings.Join(SharedWire, ", ") + ") are types: HTTP helpers live in internal/httpjson",
			members: func(p string) bool { return under(p, SharedWire...) },
			forbidden: func(p string) bool {
				return p == "net/http"
			},
		},
		{
			text:    "shared/... imports of sandbox/ only the agent-server wire types (" + strings.Join(SharedWire, ", ") + ")",
			members: func(p string) bool { return under(p, "shared") },
			forbidden: func(p string) bool {
				return under(p, "sandbox") && !under(p, SharedWire...)
			},
		},
		{
			text:    "client/... imports wire and domain packages only (" + strings.Join(ClientMay, ", ") + ", events/..., internal/...)",
			members: func(p string) bool { return under(p, "client") },
			forbidden: func(p string) bool {
				return inModule(p) && !neutral(p) && !under(p, ClientMay...)
			},
		},
	}
	for _, a := range Adapters {
		a := a
		rules = append(rules, rule{
			text:      "adapters never import each other",
			members:   func(p string) bool { return under(p, a) },
			forbidden: func(p string) bool { return adapter(p) && !under(p, a) },
		})
	}

	var out []Violation
	paths := make([]string, 0, len(imports))
	for p := range imports {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, r := range rules {
		for _, p := range paths {
			if !inModule(p) || !r.members(p) {
				continue
			}
			for _, imp := range imports[p] {
				if r.members(imp) {
					continue
				}
				if r.forbidden(imp) {
					out = append(out, Violation{Rule: r.text, From: name(p), Import: name(imp)})
					continue
				}
				if via := pathTo(imports, imp, r.forbidden, r.members); via != nil {
					for i := range via {
						via[i] = name(via[i])
					}
					out = append(out, Violation{Rule: r.text, From: name(p), Import: name(imp), Via: via})
				}
			}
		}
	}
	return out
}

// pathTo returns the shortest import chain from start (exclusive) to a
// forbidden package, not passing through members (they are checked
// themselves), or nil.
func pathTo(imports map[string][]string, start string, forbidden, members func(string) bool) []string {
	prev := map[string]string{start: ""}
	queue := []string{start}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range imports[p] {
			if _, seen := prev[imp]; seen || members(imp) {
				continue
			}
			prev[imp] = p
			if forbidden(imp) {
				var chain []string
				for q := imp; q != start; q = prev[q] {
					chain = append(chain, q)
				}
				slices.Reverse(chain)
				return chain
			}
			queue = append(queue, imp)
		}
	}
	return nil
}
