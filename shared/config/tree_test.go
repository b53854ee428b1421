package config_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/startflow"
)

// With no variable set, every program's tree holds config's defaults, and
// the start flow's configuration from it needs no defaulting of its own.
func TestLoadedTreeHoldsEveryDefault(t *testing.T) {
	c, err := serveConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Defaults()
	want.PublicURL = "http://127.0.0.1:3000"
	want.PollInterval = config.LocalPollInterval
	if !reflect.DeepEqual(c.Common, want) {
		t.Fatalf("acs serve's shared part\n got %+v\nwant %+v", c.Common, want)
	}
	if c.Local.Workers != config.DefaultWorkers || c.Local.ReconcileInterval != config.DefaultReconcileInterval ||
		c.Log.Level != slog.LevelInfo || c.Log.JSON || c.HTTP.MaxConnections == 0 {
		t.Fatalf("acs serve's own part %+v, log %+v, http %+v", c.Local, c.Log, c.HTTP)
	}
	f, err := functionConfig(env(map[string]string{"AWS_REGION": "eu-west-1", "ACS_TABLE": "acs",
		"ACS_SECRET_KEY": "0123456789abcdef0123", "AWS_LAMBDA_FUNCTION_NAME": "acs-get"}), 0)
	if err != nil {
		t.Fatal(err)
	}
	want = config.Defaults()
	want.SecretKey = "0123456789abcdef0123"
	if !reflect.DeepEqual(f.Common, want) || f.AWS.FunctionName != "acs-get" {
		t.Fatalf("a function's shared part\n got %+v\nwant %+v (function %q)", f.Common, want, f.AWS.FunctionName)
	}
	flow := startflow.ConfigFrom(f.Common, nil)
	if defaulted := flow.Defaults(); !reflect.DeepEqual(flow, defaulted) {
		t.Fatalf("the start flow re-defaults a loaded configuration:\n got %+v\nthen %+v", flow, defaulted)
	}
	if flow.StartupTimeout != 120*time.Second || flow.Sandboxes.ResumeWait != 60*time.Second || flow.CloneTimeout != 120*time.Second ||
		flow.SetupTimeout != 600*time.Second || flow.GitHost != "https://github.com" || flow.MaxAttempts != 5 ||
		flow.Visibility != 60*time.Second || flow.Sandboxes.PollInterval != 2*time.Second || len(flow.Tools) != 3 {
		t.Fatalf("start flow from the defaults %+v", flow)
	}
}

func TestLogging(t *testing.T) {
	tests := []struct {
		level, json string
		want        config.Log
	}{
		{"", "", config.Log{Level: slog.LevelInfo}},
		{"DEBUG", "true", config.Log{Level: slog.LevelDebug, JSON: true}},
		{"warning", "TRUE", config.Log{Level: slog.LevelWarn, JSON: true}},
		{"warn", "1", config.Log{Level: slog.LevelWarn}},
		{"error", "false", config.Log{Level: slog.LevelError}},
		{"loud", "", config.Log{Level: slog.LevelInfo}},
	}
	for _, tc := range tests {
		m := map[string]string{"LOG_LEVEL": tc.level, "LOG_JSON": tc.json}
		if got := config.Logging(env(m)); got != tc.want {
			t.Errorf("LOG_LEVEL=%q LOG_JSON=%q: %+v, want %+v", tc.level, tc.json, got, tc.want)
		}
		if c, _ := serveConfig(env(m)); c.Log != tc.want {
			t.Errorf("Load: LOG_LEVEL=%q LOG_JSON=%q: %+v, want %+v", tc.level, tc.json, c.Log, tc.want)
		}
	}
}

func TestLoadRuntimeAPIServer(t *testing.T) {
	load := func(m map[string]string) (config.Config, error) {
		return config.Load(env(m), config.Target{Program: config.RuntimeAPIServer})
	}
	c, err := load(map[string]string{"ACS_RUNTIME_API_KEY": "0123456789abcdef", "LLM_BASE_URL": "not read here"})
	if err != nil {
		t.Fatal(err)
	}
	if c.RuntimeServer != (config.RuntimeServer{Addr: config.DefaultRuntimeAddr, Root: config.DefaultRuntimeRoot, APIKey: "0123456789abcdef"}) {
		t.Fatalf("runtime server %+v", c.RuntimeServer)
	}
	c, err = load(map[string]string{"ACS_RUNTIME_ADDR": "0.0.0.0:5001", "ACS_RUNTIME_ROOT": "/srv/rt", "ACS_RUNTIME_API_KEY": "short"})
	if err == nil || !strings.Contains(err.Error(), "ACS_RUNTIME_API_KEY") || c.RuntimeServer.Addr != "0.0.0.0:5001" || c.RuntimeServer.Root != "/srv/rt" {
		t.Fatalf("short key: %+v %v", c.RuntimeServer, err)
	}
	if _, err := load(map[string]string{"ACS_RUNTIME_API_KEY": "0123456789abcdef", "ACS_MAX_CONNECTIONS": "none"}); err == nil ||
		!strings.Contains(err.Error(), "ACS_MAX_CONNECTIONS") {
		t.Fatalf("bad HTTP limit: %v", err)
	}
	if _, err := serveConfig(env(map[string]string{"ACS_HTTP_READ_TIMEOUT": "-1s"})); err == nil || !strings.Contains(err.Error(), "ACS_HTTP_READ_TIMEOUT") {
		t.Fatalf("acs serve, bad HTTP limit: %v", err)
	}
	if _, err := config.Load(env(nil), config.Target{}); err == nil {
		t.Fatal("no program accepted")
	}
}

// environAllowed are the packages of shared/ (besides shared/config) that
// may read the process environment, and why.
var environAllowed = map[string]string{
	// A sandbox process inherits a fixed list of the server's variables
	// (PATH, LANG, …): its environment, not ACS configuration.
	"procsandbox": "passes PATH, LANG, LC_ALL, TZ, TERM, GOCOVERDIR to sandbox processes",
}

// Nothing in shared/ reads the environment but shared/config: the tree
// config.Load returns is passed down instead.
func TestOnlyConfigReadsTheEnvironment(t *testing.T) {
	reads, err := environReads("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reads {
		if r.pkg == "config" {
			continue
		}
		if _, ok := environAllowed[r.pkg]; !ok {
			t.Errorf("%s: shared/%s reads the environment; take the setting from config.Load's tree instead", r.at, r.pkg)
		}
	}
}

// The scan finds a read however os is imported, and skips tests.
func TestEnvironmentScanFindsReads(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"a/a.go":      "package a\n\nimport env \"os\"\n\nvar _ = env.Getenv(\"X\")\n",
		"b/b.go":      "package b\n\nimport \"os\"\n\nfunc f() { _, _ = os.LookupEnv(\"X\") }\n",
		"c/c_test.go": "package c\n\nimport \"os\"\n\nvar _ = os.Getenv(\"X\")\n",
		"d/d.go":      "package d\n\nimport \"os\"\n\nvar _ = os.Args\n",
	}
	for name, src := range files {
		os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(root, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	reads, err := environReads(root)
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, r := range reads {
		pkgs = append(pkgs, r.pkg)
	}
	if strings.Join(pkgs, ",") != "a,b" {
		t.Fatalf("reads found in %v, want a,b", pkgs)
	}
}

type environRead struct{ pkg, at string }

// environReads lists the calls of os.Getenv, os.LookupEnv, os.Environ and
// os.ExpandEnv in the non-test Go files under root, with the first
// directory under root they are in.
func environReads(root string) ([]environRead, error) {
	var reads []environRead
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		osName := ""
		for _, imp := range f.Imports {
			if imp.Path.Value == `"os"` {
				osName = "os"
				if imp.Name != nil {
					osName = imp.Name.Name
				}
			}
		}
		if osName == "" {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		pkg := strings.Split(filepath.ToSlash(rel), "/")[0]
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == osName {
					switch sel.Sel.Name {
					case "Getenv", "LookupEnv", "Environ", "ExpandEnv":
						reads = append(reads, environRead{pkg: pkg, at: fset.Position(sel.Pos()).String()})
					}
				}
			}
			return true
		})
		return nil
	})
	return reads, err
}
