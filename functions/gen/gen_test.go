package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/config"
)

// The checked-in route functions are exactly what the route table
// generates: one per route, none left over.
func TestGeneratedFunctionsAreCurrent(t *testing.T) {
	want, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "routes")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := want[e.Name()]; !ok {
			t.Errorf("functions/routes/%s has no route in the table: run go generate ./functions", e.Name())
		}
	}
	for name, src := range want {
		got, err := os.ReadFile(filepath.Join(dir, name, "main.go"))
		if err != nil || !bytes.Equal(got, src) {
			t.Errorf("functions/routes/%s/main.go is stale: run go generate ./functions", name)
		}
	}
}

// Each route function links the SQS, S3 and runtime clients only when its
// route needs them, and none links the local adapters or the agent.
func TestRouteFunctionsLinkOnlyWhatTheyNeed(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "../routes/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string]map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		set := map[string]bool{}
		for _, d := range f[1:] {
			set[d] = true
		}
		deps[filepath.Base(f[0])] = set
	}
	const mod = "github.com/acs-project/acs/"
	for _, rt := range api.Routes {
		d, ok := deps[rt.Name]
		if !ok {
			t.Errorf("no function for route %s", rt.Name)
			continue
		}
		for pkg, need := range map[string]bool{
			"github.com/aws/aws-sdk-go-v2/service/sqs":      rt.Needs&config.NeedQueue != 0,
			"github.com/aws/aws-sdk-go-v2/service/s3":       rt.Needs&config.NeedBlobs != 0,
			mod + "shared/runtimeapi":                       rt.Needs&config.NeedRuntime != 0,
			mod + "shared/kubesandbox":                      rt.Needs&config.NeedRuntime != 0,
			"k8s.io/client-go/rest":                         rt.Needs&config.NeedRuntime != 0,
			"github.com/aws/aws-sdk-go-v2/service/dynamodb": true,
			mod + "shared/boltstore":                        false,
			mod + "shared/localqueue":                       false,
			mod + "shared/procsandbox":                      false,
			mod + "sandbox/agent":                           false,
			mod + "sandbox/llm":                             false,
		} {
			if d[pkg] != need {
				t.Errorf("%s links %s: %v, want %v", rt.Name, pkg, d[pkg], need)
			}
		}
	}
}
