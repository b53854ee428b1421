package main

import (
	"archive/zip"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/acs-project/acs/functions"
	"github.com/acs-project/acs/internal/lambdatest"
	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/shared/api"
)

func TestMain(m *testing.M) {
	// jsii warns about Node versions it no longer tests; the app runs on
	// the Node the machine has.
	os.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")
	os.Setenv("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
	os.Setenv("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
	code := m.Run()
	jsii.Close()
	if mainSyn.dir != "" {
		os.RemoveAll(filepath.Dir(mainSyn.dir))
	}
	lambdatest.RemoveBuilds()
	testbin.Cleanup()
	os.Exit(code)
}

// stubMarker starts the bootstrap of the test's stand-in zips: the rest
// names the function, so a test finds which function an asset of the
// template is.
const stubMarker = "acs-test-function:"

// stubAssets writes a stand-in zip for every function of routes (the tests
// do not build the arm64 functions: the template runs the host's builds).
func stubAssets(t *testing.T, routes []api.Route) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range functions.All(routes) {
		out, err := os.Create(filepath.Join(dir, f.Name+".zip"))
		if err != nil {
			t.Fatal(err)
		}
		zw := zip.NewWriter(out)
		w, err := zw.Create("bootstrap")
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(stubMarker + f.Name))
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		out.Close()
	}
	return dir
}

// testProps are the props of a deployment with a runtime API, with every
// optional feature on that the tests check.
func testProps(t *testing.T) Props {
	t.Helper()
	p, err := FromContext(func(k string) string {
		return map[string]string{
			"runtimeApiUrl": "https://runtime.example.com", "adminKeySha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			"llmApiKeySecret": "acs/llm-api-key", "env": `{"LLM_BASE_URL":"https://llm.example.com/v1","LLM_MODEL":"gpt-4o"}`,
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	p.AssetDir = stubAssets(t, p.Routes)
	// No UI files: the web stack deploys none (TestWebStack gives it some).
	p.WebDir = filepath.Join(t.TempDir(), "no-web-ui")
	return p
}

// synth synthesizes the stacks of p into a temporary cloud assembly and
// returns them with the assembly's directory.
func synth(t *testing.T, p Props) (*Stacks, string) {
	t.Helper()
	return synthInto(t, p, t.TempDir())
}

func synthInto(t *testing.T, p Props, out string) (*Stacks, string) {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out)})
	s := NewStacks(app, p)
	app.Synth(nil)
	return s, out
}

// newTestApp is an app that is never synthesized.
func newTestApp(t *testing.T) awscdk.App {
	return awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// template reads one stack's synthesized template.
func readTemplate(t *testing.T, dir, stack string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, stack+".template.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
