package config_test

import (
	"encoding/base64"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/startflow"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func serveConfig(getenv func(string) string) (config.Config, error) {
	return config.Load(getenv, config.Target{Program: config.Serve})
}

func functionConfig(getenv func(string) string, need config.Need) (config.Config, error) {
	return config.Load(getenv, config.Target{Program: config.Function, Need: need})
}

func TestDefaults(t *testing.T) {
	c, err := serveConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Local.Addr != "127.0.0.1:3000" || !strings.HasSuffix(c.Local.DataDir, ".acs") || c.PublicURL != "http://127.0.0.1:3000" ||
		c.LLMModel != "gpt-4o" || c.Local.Workers != 4 || c.SandboxStartupTimeout.Seconds() != 120 {
		t.Fatalf("defaults %+v", c)
	}
	c, err = serveConfig(env(map[string]string{"ACS_ADDR": "0.0.0.0:8080"}))
	if err != nil || c.PublicURL != "http://127.0.0.1:8080" {
		t.Fatalf("0.0.0.0 public URL: %+v %v", c, err)
	}
}

func TestOneErrorListsEveryProblem(t *testing.T) {
	_, err := serveConfig(env(map[string]string{
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
	_, err := functionConfig(env(nil), config.NeedQueue|config.NeedDeadLetter|config.NeedBlobs|config.NeedRuntime)
	if err == nil {
		t.Fatal("empty AWS configuration accepted")
	}
	for _, name := range []string{"AWS_REGION", "ACS_TABLE", "ACS_SECRET_KEY", "ACS_QUEUE_URL", "ACS_DLQ_URL",
		"ACS_BUCKET", "ACS_KUBE_BASE_HOST", "ACS_SANDBOX_IMAGE", "ACS_KUBECONFIG", "ACS_PUBLIC_URL"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
	_, err = functionConfig(env(map[string]string{"ACS_RUNTIME": "runtime-api"}), config.NeedRuntime)
	for _, name := range []string{"ACS_RUNTIME_URL", "ACS_RUNTIME_API_KEY", "ACS_PUBLIC_URL"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("runtime-api: error does not name %s: %v", name, err)
		}
	}
}

// loadAWS loads base overlaid with extra. With wantErr it checks that the
// error names it and reports false; otherwise it fails on any error.
func loadAWS(t *testing.T, base, extra map[string]string, need config.Need, wantErr string) (config.Config, bool) {
	t.Helper()
	m := maps.Clone(base)
	maps.Copy(m, extra)
	c, err := functionConfig(env(m), need)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("want an error naming %s, got %v", wantErr, err)
		}
		return c, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return c, true
}

func TestLoadAWSKubernetesRuntime(t *testing.T) {
	ca := base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	base := map[string]string{"AWS_REGION": "eu-west-1", "ACS_TABLE": "acs", "ACS_SECRET_KEY": "0123456789abcdef0123",
		"ACS_PUBLIC_URL": "https://api.example.com", "ACS_KUBE_BASE_HOST": "runtime.example.com",
		"ACS_SANDBOX_IMAGE": "ghcr.io/acs/sandbox:1", "ACS_KUBECONFIG": "/etc/acs/kubeconfig"}
	tests := []struct {
		name    string
		extra   map[string]string
		wantErr string
		check   func(c config.Config) bool
	}{
		{"defaults", nil, "", func(c config.Config) bool {
			k := c.AWS.Kube
			return c.AWS.Runtime == config.RuntimeKubernetes && k.Namespace == "acs-sandboxes" && k.Separator == "." &&
				k.Scheme == "https" && k.BaseHost == "runtime.example.com" && k.Kubeconfig == "/etc/acs/kubeconfig" && k.WarmPool == 0
		}},
		{"runtime URL selects the runtime API", map[string]string{"ACS_RUNTIME_URL": "http://rt:5000", "ACS_RUNTIME_API_KEY": "k"}, "",
			func(c config.Config) bool {
				return c.AWS.Runtime == config.RuntimeAPI && c.AWS.RuntimeURL == "http://rt:5000"
			}},
		{"explicit kubernetes ignores the runtime URL", map[string]string{"ACS_RUNTIME": "kubernetes", "ACS_RUNTIME_URL": "http://rt"}, "",
			func(c config.Config) bool { return c.AWS.Runtime == config.RuntimeKubernetes }},
		{"everything set", map[string]string{"ACS_KUBE_NAMESPACE": "sb", "ACS_KUBE_HOST_SEPARATOR": "-", "ACS_KUBE_SCHEME": "http",
			"ACS_KUBE_INGRESS_CLASS": "nginx", "ACS_KUBE_TLS_SECRET": "wild", "ACS_KUBE_WARM_POOL": "3",
			"ACS_KUBE_NODE_SELECTOR": "pool=sandboxes, zone=a", "ACS_KUBE_ROUTING": "gateway", "ACS_KUBE_GATEWAY": "infra/acs"}, "",
			func(c config.Config) bool {
				k := c.AWS.Kube
				return k.Namespace == "sb" && k.Separator == "-" && k.Scheme == "http" && k.IngressClass == "nginx" &&
					k.TLSSecret == "wild" && k.WarmPool == 3 && k.NodeSelector["pool"] == "sandboxes" && k.NodeSelector["zone"] == "a" &&
					k.Routing == "gateway" && k.GatewayNamespace == "infra" && k.GatewayName == "acs"
			}},
		{"EKS", map[string]string{"ACS_KUBECONFIG": "", "ACS_EKS_CLUSTER": "prod", "ACS_KUBE_SERVER": "https://abc.eks.amazonaws.com",
			"ACS_KUBE_CA_DATA": ca}, "", func(c config.Config) bool {
			return c.AWS.Kube.EKSCluster == "prod" && strings.HasPrefix(string(c.AWS.Kube.CAData), "-----BEGIN CERTIFICATE-----")
		}},
		{"unknown runtime", map[string]string{"ACS_RUNTIME": "docker"}, "ACS_RUNTIME", nil},
		{"two credential sources", map[string]string{"ACS_KUBE_IN_CLUSTER": "true"}, "exactly one of ACS_KUBECONFIG", nil},
		{"no credential source", map[string]string{"ACS_KUBECONFIG": ""}, "exactly one of ACS_KUBECONFIG", nil},
		{"in-cluster not a bool", map[string]string{"ACS_KUBECONFIG": "", "ACS_KUBE_IN_CLUSTER": "yes please"}, "ACS_KUBE_IN_CLUSTER", nil},
		{"EKS without server", map[string]string{"ACS_KUBECONFIG": "", "ACS_EKS_CLUSTER": "prod", "ACS_KUBE_CA_DATA": ca}, "ACS_KUBE_SERVER", nil},
		{"EKS CA not PEM", map[string]string{"ACS_KUBECONFIG": "", "ACS_EKS_CLUSTER": "prod", "ACS_KUBE_SERVER": "https://x",
			"ACS_KUBE_CA_DATA": "bm9wZQ=="}, "ACS_KUBE_CA_DATA", nil},
		{"no image", map[string]string{"ACS_SANDBOX_IMAGE": ""}, "ACS_SANDBOX_IMAGE", nil},
		{"templates instead of an image", map[string]string{"ACS_SANDBOX_IMAGE": "", "ACS_KUBE_POD_TEMPLATES": `{"acs-default":{"image":"x"}}`}, "", nil},
		{"bad namespace", map[string]string{"ACS_KUBE_NAMESPACE": "Sandboxes!"}, "ACS_KUBE_NAMESPACE", nil},
		{"bad base host", map[string]string{"ACS_KUBE_BASE_HOST": "https://runtime.example.com"}, "ACS_KUBE_BASE_HOST", nil},
		{"bad separator", map[string]string{"ACS_KUBE_HOST_SEPARATOR": "/"}, "ACS_KUBE_HOST_SEPARATOR", nil},
		{"bad scheme", map[string]string{"ACS_KUBE_SCHEME": "ftp"}, "ACS_KUBE_SCHEME", nil},
		{"bad warm pool", map[string]string{"ACS_KUBE_WARM_POOL": "-1"}, "ACS_KUBE_WARM_POOL", nil},
		{"bad node selector", map[string]string{"ACS_KUBE_NODE_SELECTOR": "pool"}, "ACS_KUBE_NODE_SELECTOR", nil},
		{"bad routing", map[string]string{"ACS_KUBE_ROUTING": "mesh"}, "ACS_KUBE_ROUTING", nil},
		{"gateway without a gateway", map[string]string{"ACS_KUBE_ROUTING": "gateway"}, "ACS_KUBE_GATEWAY", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := loadAWS(t, base, tc.extra, config.NeedRuntime, tc.wantErr)
			if ok && tc.check != nil && !tc.check(c) {
				t.Fatalf("config %+v", c)
			}
		})
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
			c, ok := loadAWS(t, base, tc.extra, tc.need, tc.wantErr)
			if ok && (c.AWS.Table != "acs" || c.AWS.Region != "eu-west-1" || c.StartTaskTTL.Hours() != 1 || c.MaxRunningSandboxes != 10) {
				t.Fatalf("config %+v", c)
			}
		})
	}
}

// Behind the web UI's distribution a browser session's writes are checked
// against the public URL, so every function reads ACS_PUBLIC_URL when it is
// set; only the functions that need it require it.
func TestLoadAWSPublicURLIsOptionalWithoutANeed(t *testing.T) {
	base := map[string]string{"AWS_REGION": "eu-west-1", "ACS_TABLE": "acs", "ACS_SECRET_KEY": "0123456789abcdef0123"}
	tests := []struct {
		name, url, want, wantErr string
	}{
		{"unset", "", "", ""},
		{"set", "https://d1.cloudfront.net/", "https://d1.cloudfront.net", ""},
		{"not a URL", "d1.cloudfront.net", "", "ACS_PUBLIC_URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			extra := map[string]string{}
			if tc.url != "" {
				extra["ACS_PUBLIC_URL"] = tc.url
			}
			c, ok := loadAWS(t, base, extra, 0, tc.wantErr)
			if ok && c.PublicURL != tc.want {
				t.Fatalf("PublicURL %q, want %q", c.PublicURL, tc.want)
			}
		})
	}
}

func TestS3PathStyleDefaultsOnForLocalEndpoints(t *testing.T) {
	m := map[string]string{"AWS_REGION": "us-east-1", "ACS_TABLE": "t", "ACS_SECRET_KEY": "0123456789abcdef", "ACS_S3_ENDPOINT": "http://127.0.0.1:9000"}
	c, err := functionConfig(env(m), 0)
	if err != nil || !c.AWS.S3PathStyle {
		t.Fatalf("path style with a local endpoint: %+v %v", c.AWS.S3PathStyle, err)
	}
	m["ACS_S3_PATH_STYLE"] = "false"
	if c, err = functionConfig(env(m), 0); err != nil || c.AWS.S3PathStyle {
		t.Fatalf("ACS_S3_PATH_STYLE=false: %+v %v", c.AWS.S3PathStyle, err)
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

// The variables the stacks set from NeedVariables, RuntimeVariables and
// BaseVariables are exactly what LoadAWS requires: with them a function
// loads, and without any one of the required ones it names that one.
func TestNeedVariablesAreWhatLoadAWSRequires(t *testing.T) {
	ca := base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	valid := map[string]string{
		config.EnvTable: "acs", config.EnvSecretKey: "0123456789abcdef0123",
		config.EnvQueueURL: "https://sqs.eu-west-1.amazonaws.com/1/acs", config.EnvDeadLetterURL: "https://sqs.eu-west-1.amazonaws.com/1/acs-dlq",
		config.EnvBucket: "acs-bucket", config.EnvBucketPrefix: "acs", config.EnvPublicURL: "https://api.example.com",
		config.EnvRuntimeURL: "https://runtime.example.com", config.EnvRuntimeAPIKey: "runtime-key",
		config.EnvKubeNamespace: "acs-sandboxes", config.EnvKubeBaseHost: "sandboxes.example.com", config.EnvSandboxImage: "acs-sandbox:1",
		config.EnvEKSCluster: "acs", config.EnvKubeServer: "https://eks.example.com", config.EnvKubeCAData: ca,
	}
	optional := map[string]bool{config.EnvBucketPrefix: true, config.EnvRuntime: true, config.EnvKubeNamespace: true}
	for _, need := range []config.Need{config.NeedQueue, config.NeedDeadLetter, config.NeedBlobs, config.NeedRuntime, config.NeedSignIn} {
		for _, runtime := range []string{config.RuntimeAPI, config.RuntimeKubernetes} {
			vars := append([]string{}, config.BaseVariables...)
			vars = append(vars, config.NeedVariables[need]...)
			if need == config.NeedRuntime {
				vars = append(vars, config.RuntimeVariables[runtime]...)
			}
			m := map[string]string{"AWS_REGION": "eu-west-1", config.EnvRuntime: runtime}
			for _, v := range vars {
				if valid[v] == "" && v != config.EnvRuntime {
					t.Fatalf("no test value for %s", v)
				}
				if v != config.EnvRuntime {
					m[v] = valid[v]
				}
			}
			if _, err := functionConfig(env(m), need); err != nil {
				t.Errorf("need %d, runtime %s: the listed variables do not suffice: %v", need, runtime, err)
			}
			for _, v := range vars {
				if optional[v] {
					continue
				}
				without := maps.Clone(m)
				delete(without, v)
				if _, err := functionConfig(env(without), need); err == nil || !strings.Contains(err.Error(), v) {
					t.Errorf("need %d, runtime %s: without %s: %v", need, runtime, v, err)
				}
			}
		}
	}
}

func TestLoadSignIn(t *testing.T) {
	base := map[string]string{"ACS_DATA_DIR": t.TempDir()}
	cases := []struct {
		name    string
		extra   map[string]string
		wantErr string
		check   func(t *testing.T, s config.SignIn)
	}{
		{"defaults", nil, "", func(t *testing.T, s config.SignIn) {
			if s.SessionTTL != config.DefaultSessionTTL || s.OIDC.Enabled() || !s.OIDC.CreateUsers || s.OIDC.Name != config.DefaultOIDCName {
				t.Errorf("defaults: %+v", s)
			}
		}},
		{"oidc", map[string]string{"ACS_OIDC_ISSUER": "https://id.example.com/", "ACS_OIDC_CLIENT_ID": "acs", "ACS_OIDC_CLIENT_SECRET": "s3cret",
			"ACS_OIDC_ALLOWED_DOMAINS": " Example.com, ,corp.example ", "ACS_OIDC_ALLOWED_EMAILS": "A@x.org", "ACS_OIDC_CREATE_USERS": "false",
			"ACS_OIDC_NAME": "Corp SSO", "ACS_SESSION_TTL": "12h"}, "", func(t *testing.T, s config.SignIn) {
			o := s.OIDC
			if !o.Enabled() || o.Issuer != "https://id.example.com" || o.ClientID != "acs" || o.ClientSecret != "s3cret" || o.CreateUsers || o.Name != "Corp SSO" {
				t.Errorf("oidc: %+v", o)
			}
			if strings.Join(o.AllowedDomains, "|") != "example.com|corp.example" || strings.Join(o.AllowedEmails, "|") != "a@x.org" {
				t.Errorf("allow-lists: %q %q", o.AllowedDomains, o.AllowedEmails)
			}
			if s.SessionTTL != 12*time.Hour {
				t.Errorf("ttl %v", s.SessionTTL)
			}
		}},
		{"issuer without client", map[string]string{"ACS_OIDC_ISSUER": "https://id.example.com"}, "ACS_OIDC_CLIENT_ID", nil},
		{"client without issuer", map[string]string{"ACS_OIDC_CLIENT_ID": "acs"}, "ACS_OIDC_ISSUER", nil},
		{"issuer not a URL", map[string]string{"ACS_OIDC_ISSUER": "id.example.com", "ACS_OIDC_CLIENT_ID": "acs"}, "ACS_OIDC_ISSUER", nil},
		{"bad create users", map[string]string{"ACS_OIDC_CREATE_USERS": "maybe"}, "ACS_OIDC_CREATE_USERS", nil},
		{"bad ttl", map[string]string{"ACS_SESSION_TTL": "0"}, "ACS_SESSION_TTL", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := maps.Clone(base)
			maps.Copy(m, tc.extra)
			c, err := config.Load(env(m), config.Target{Program: config.Serve})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c.SignIn)
		})
	}
}

// ACS_LLM_RETRY_TOTAL bounds the agents' LLM retries: the start flow's
// num_retries is as many as fit in it.
func TestLLMRetryTotal(t *testing.T) {
	cases := []struct {
		value       string
		wantTotal   time.Duration
		wantRetries int
		wantErr     bool
	}{
		{"", 5 * time.Minute, 5, false},
		{"0", 0, 0, false},
		{"90s", 90 * time.Second, 2, false},
		{"soon", 0, 0, true},
	}
	for _, tc := range cases {
		c, err := serveConfig(env(map[string]string{"ACS_LLM_RETRY_TOTAL": tc.value}))
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), "ACS_LLM_RETRY_TOTAL") {
				t.Errorf("%q: want an error naming ACS_LLM_RETRY_TOTAL, got %v", tc.value, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := startflow.ConfigFrom(c.Common, nil).LLM.NumRetries; c.LLMRetryTotal != tc.wantTotal || got != tc.wantRetries {
			t.Errorf("%q: total %v, num_retries %d; want %v, %d", tc.value, c.LLMRetryTotal, got, tc.wantTotal, tc.wantRetries)
		}
	}
}
