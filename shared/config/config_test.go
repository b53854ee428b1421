package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := config.LoadLocal(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:3000" || !strings.HasSuffix(c.DataDir, ".acs") || c.PublicURL != "http://127.0.0.1:3000" ||
		c.LLMModel != "gpt-4o" || c.Workers != 4 || c.SandboxStartupTimeout.Seconds() != 120 {
		t.Fatalf("defaults %+v", c)
	}
	c, err = config.LoadLocal(env(map[string]string{"ACS_ADDR": "0.0.0.0:8080"}))
	if err != nil || c.PublicURL != "http://127.0.0.1:8080" {
		t.Fatalf("0.0.0.0 public URL: %+v %v", c, err)
	}
}

func TestOneErrorListsEveryProblem(t *testing.T) {
	_, err := config.LoadLocal(env(map[string]string{
		"ACS_ADDR": "nonsense", "ACS_API_KEY": "short", "LLM_BASE_URL": "ftp://x", "ACS_WORKERS": "0",
		"ACS_SANDBOX_STARTUP_TIMEOUT": "soon",
	}))
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	for _, name := range []string{"ACS_ADDR", "ACS_API_KEY", "LLM_BASE_URL", "ACS_WORKERS", "ACS_SANDBOX_STARTUP_TIMEOUT"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}

func TestLoadAWSListsEverythingMissing(t *testing.T) {
	_, err := config.LoadAWS(env(nil), config.NeedQueue|config.NeedDeadLetter|config.NeedBlobs|config.NeedRuntime)
	if err == nil {
		t.Fatal("empty AWS configuration accepted")
	}
	for _, name := range []string{"AWS_REGION", "ACS_TABLE", "ACS_SECRET_KEY", "ACS_QUEUE_URL", "ACS_DLQ_URL",
		"ACS_BUCKET", "ACS_RUNTIME_URL", "ACS_RUNTIME_API_KEY", "ACS_PUBLIC_URL"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}

func TestLoadAWSNeeds(t *testing.T) {
	base := map[string]string{"AWS_REGION": "eu-west-1", "ACS_TABLE": "acs", "ACS_SECRET_KEY": "0123456789abcdef0123"}
	tests := []struct {
		name    string
		need    config.Need
		extra   map[string]string
		wantErr string
	}{
		{"store only", 0, nil, ""},
		{"queue missing", config.NeedQueue, nil, "ACS_QUEUE_URL"},
		{"queue not a URL", config.NeedQueue, map[string]string{"ACS_QUEUE_URL": "acs-start"}, "ACS_QUEUE_URL"},
		{"queue", config.NeedQueue, map[string]string{"ACS_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/1/acs"}, ""},
		{"runtime without public URL", config.NeedRuntime, map[string]string{"ACS_RUNTIME_URL": "http://rt", "ACS_RUNTIME_API_KEY": "k"}, "ACS_PUBLIC_URL"},
		{"bad endpoint", 0, map[string]string{"ACS_DYNAMODB_ENDPOINT": "localhost:8000"}, "ACS_DYNAMODB_ENDPOINT"},
		{"short secret key", 0, map[string]string{"ACS_SECRET_KEY": "short"}, "ACS_SECRET_KEY"},
		{"bad specs", 0, map[string]string{"ACS_SANDBOX_SPECS": `[{"id":"a","command":["x"],"bogus":1}]`}, "ACS_SANDBOX_SPECS"},
		{"bad duration", 0, map[string]string{"ACS_IDLE_PAUSE_AFTER": "soon"}, "ACS_IDLE_PAUSE_AFTER"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]string{}
			for k, v := range base {
				m[k] = v
			}
			for k, v := range tc.extra {
				m[k] = v
			}
			c, err := config.LoadAWS(env(m), tc.need)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.Table != "acs" || c.Region != "eu-west-1" || c.StartTaskTTL.Hours() != 1 || c.MaxRunningSandboxes != 10 {
					t.Fatalf("config %+v", c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want an error naming %s, got %v", tc.wantErr, err)
			}
		})
	}
}

func TestS3PathStyleDefaultsOnForLocalEndpoints(t *testing.T) {
	m := map[string]string{"AWS_REGION": "us-east-1", "ACS_TABLE": "t", "ACS_SECRET_KEY": "0123456789abcdef", "ACS_S3_ENDPOINT": "http://127.0.0.1:9000"}
	c, err := config.LoadAWS(env(m), 0)
	if err != nil || !c.S3PathStyle {
		t.Fatalf("path style with a local endpoint: %+v %v", c.S3PathStyle, err)
	}
	m["ACS_S3_PATH_STYLE"] = "false"
	if c, err = config.LoadAWS(env(m), 0); err != nil || c.S3PathStyle {
		t.Fatalf("ACS_S3_PATH_STYLE=false: %+v %v", c.S3PathStyle, err)
	}
}

func TestParseSpecs(t *testing.T) {
	def := []acs.SandboxSpec{{ID: "default"}}
	if got, err := config.ParseSpecs("", def); err != nil || len(got) != 1 || got[0].ID != "default" {
		t.Fatalf("empty: %v %v", got, err)
	}
	got, err := config.ParseSpecs(`[{"id":"a","command":["x"]},{"id":"b","command":["y"],"working_dir":"/w"}]`, def)
	if err != nil || len(got) != 2 || got[0].InitialEnv == nil || got[1].WorkingDir != "/w" {
		t.Fatalf("inline: %+v %v", got, err)
	}
	path := filepath.Join(t.TempDir(), "specs.json")
	os.WriteFile(path, []byte(`[{"id":"f","command":["z"]}]`), 0o600)
	if got, err := config.ParseSpecs(path, def); err != nil || got[0].ID != "f" {
		t.Fatalf("file: %+v %v", got, err)
	}
	for _, bad := range []string{`[]`, `[{"id":"a","command":["x"]},{"id":"a","command":["x"]}]`, `[{"id":"a","command":["x"],"image":"y"}]`, "/nonexistent/specs.json"} {
		if _, err := config.ParseSpecs(bad, def); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
