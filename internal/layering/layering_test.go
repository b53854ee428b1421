package layering_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/acs-project/acs/internal/layering"
)

// TestModuleFollowsTheLayering checks this module's import graph (what
// its programs link, as `go list -deps` sees it) against DESIGN.md's
// rules, printing each violation on its own line.
func TestModuleFollowsTheLayering(t *testing.T) {
	module := strings.TrimSpace(goList(t, "-m", "-f", "{{.Path}}"))
	out := goList(t, "-deps", "-json=ImportPath,Imports", module+"/...")
	var pkgs []layering.Package
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var p layering.Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	n := 0
	for _, p := range pkgs {
		if strings.HasPrefix(p.ImportPath, module+"/") {
			n++
		}
	}
	if n < 50 {
		t.Fatalf("go list found only %d packages of %s: not the whole module", n, module)
	}
	for _, v := range layering.Check(module, pkgs) {
		t.Error(v)
	}
}

func goList(t *testing.T, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// TestCheckFindsEachViolation: each rule catches an import that breaks it,
// directly or through a package outside the rule's members, and the
// report names the chain.
func TestCheckFindsEachViolation(t *testing.T) {
	const m = "example.com/acs"
	base := map[string][]string{
		m + "/shared/acs":                          {"context"},
		m + "/shared/boltstore":                    {m + "/shared/acs"},
		m + "/shared/sqsqueue":                     {m + "/shared/acs", "github.com/aws/aws-sdk-go-v2/service/sqs"},
		m + "/shared/startflow":                    {m + "/shared/acs", m + "/sandbox/agentwire"},
		m + "/sandbox/agentwire":                   {m + "/events"},
		m + "/sandbox/agent":                       {m + "/sandbox/agentwire", m + "/internal/diskfull"},
		m + "/sandbox/bashapi":                     {m + "/sandbox/agentwire", m + "/sandbox/procenv"},
		m + "/sandbox/procenv":                     {"os"},
		m + "/shared/v1wire":                       {m + "/shared/acs"},
		m + "/client":                              {m + "/shared/v1wire", m + "/events", "net/http"},
		m + "/client/cli":                          {m + "/client", m + "/internal/diskfull"},
		m + "/events":                              {"encoding/json"},
		m + "/internal/diskfull":                   {"syscall"},
		m + "/internal/awserr":                     {"github.com/aws/smithy-go"},
		m + "/cmd/acs":                             {m + "/shared/boltstore", m + "/shared/sqsqueue", m + "/shared/startflow"},
		m + "/functions/provider":                  {m + "/shared/sqsqueue"},
		m + "/functions/gen":                       {"fmt"},
		"github.com/aws/aws-sdk-go-v2/service/sqs": {"github.com/aws/smithy-go"},
		"github.com/aws/smithy-go":                 nil,
		"net/http":                                 {"net"},
		"github.com/other/lib":                     {"github.com/aws/smithy-go"},
		"github.com/other/client":                  {m + "/sandbox/bashapi"},
	}
	cases := []struct {
		name  string
		edit  map[string][]string // replaces packages' imports
		wants []string            // substrings of the one expected violation; none for a clean graph
	}{
		{"clean", nil, nil},
		{"domain imports the module", map[string][]string{m + "/shared/acs": {m + "/events"}},
			[]string{"shared/acs imports events", "the domain"}},
		{"adapter imports an adapter", map[string][]string{m + "/shared/boltstore": {m + "/shared/acs", m + "/shared/sqsqueue"}},
			[]string{"shared/boltstore imports shared/sqsqueue", "adapters never import each other"}},
		{"control plane imports an adapter", map[string][]string{m + "/shared/startflow": {m + "/shared/boltstore"}},
			[]string{"shared/startflow imports shared/boltstore", "only the wiring"}},
		{"control plane imports the wiring", map[string][]string{m + "/shared/startflow": {m + "/functions/gen"}},
			[]string{"shared/startflow imports functions/gen", "nothing imports the wiring"}},
		{"sandbox imports shared", map[string][]string{m + "/sandbox/agent": {m + "/shared/acs"}},
			[]string{"sandbox/agent imports shared/acs", "sandbox/..."}},
		{"sandbox links AWS through a library", map[string][]string{m + "/sandbox/agent": {"github.com/other/lib"}},
			[]string{"sandbox/agent imports github.com/other/lib, which brings in github.com/aws/smithy-go"}},
		{"sandbox links AWS through a neutral package", map[string][]string{m + "/sandbox/agent": {m + "/internal/awserr"}},
			[]string{"sandbox/agent imports internal/awserr, which brings in github.com/aws/smithy-go (internal/awserr → github.com/aws/smithy-go)"}},
		{"shared imports sandbox beyond the wire types", map[string][]string{m + "/shared/startflow": {m + "/sandbox/agent"}},
			[]string{"shared/startflow imports sandbox/agent", "agent-server wire types"}},
		{"wire types bring in more of sandbox", map[string][]string{m + "/sandbox/agentwire": {m + "/sandbox/agent"}},
			[]string{"shared/startflow imports sandbox/agentwire, which brings in sandbox/agent"}},
		{"wire types serve HTTP", map[string][]string{m + "/sandbox/agentwire": {m + "/events", "net/http"}},
			[]string{"sandbox/agentwire imports net/http", "HTTP helpers"}},
		{"client imports an agent-side package", map[string][]string{m + "/client": {m + "/sandbox/agentwire", m + "/sandbox/bashapi"}},
			[]string{"client imports sandbox/bashapi", "client/... imports wire and domain packages only"}},
		{"client reaches an agent-side package through a library", map[string][]string{m + "/client": {m + "/shared/v1wire", "github.com/other/client"}},
			[]string{"client imports github.com/other/client, which brings in sandbox/bashapi"}},
		{"client imports the control plane", map[string][]string{m + "/client/cli": {m + "/client", m + "/shared/startflow"}},
			[]string{"client/cli imports shared/startflow", "client/... imports wire and domain packages only"}},
		{"neutral imports a half", map[string][]string{m + "/internal/diskfull": {m + "/sandbox/agentwire"}},
			[]string{"internal/diskfull imports sandbox/agentwire", "neutral"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pkgs []layering.Package
			for p, imps := range base {
				if e, ok := tc.edit[p]; ok {
					imps = e
				}
				pkgs = append(pkgs, layering.Package{ImportPath: p, Imports: imps})
			}
			got := layering.Check(m, pkgs)
			if len(tc.wants) == 0 {
				if len(got) != 0 {
					t.Fatalf("want no violation, got %v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one violation, got %d: %v", len(got), got)
			}
			for _, w := range tc.wants {
				if !strings.Contains(got[0].String(), w) {
					t.Errorf("violation %q does not say %q", got[0], w)
				}
			}
		})
	}
}
