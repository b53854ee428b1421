package sandboxes_test

import (
	"testing"

	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/sandboxes"
)

func TestBrowserOrigin(t *testing.T) {
	tests := []struct{ url, want string }{
		{"http://127.0.0.1:3000", "http://127.0.0.1:3000"},
		{"http://127.0.0.1:3000/", "http://127.0.0.1:3000"},
		{"https://ACS.Example.com/prefix/path?q=1", "https://acs.example.com"},
		{"https://acs.example.com:443", "https://acs.example.com"},
		{"http://acs.example.com:80/", "http://acs.example.com"},
		{"https://acs.example.com:8443", "https://acs.example.com:8443"},
		{"http://[::1]:3000", "http://[::1]:3000"},
		{"HTTP://localhost:3000", "http://localhost:3000"},
		{"", ""},
		{"acs.example.com", ""},
		{"ftp://acs.example.com", ""},
		{"/relative", ""},
	}
	for _, tc := range tests {
		if got := sandboxes.BrowserOrigin(tc.url); got != tc.want {
			t.Errorf("BrowserOrigin(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

// Every sandbox lets the public URL's origin (where the web frontend is
// served) call its agent server from a browser.
func TestSandboxEnvAllowsThePublicOrigin(t *testing.T) {
	c := config.Defaults()
	c.PublicURL = "https://acs.example.com/base"
	env := sandboxes.ConfigFrom(c, nil).SandboxEnv()
	if env["OH_ALLOW_CORS_ORIGINS_0"] != "https://acs.example.com" || env["OH_WEBHOOKS_0_BASE_URL"] != "https://acs.example.com/base/api/v1/webhooks" {
		t.Fatalf("sandbox env %v", env)
	}
	c.PublicURL = ""
	if env := sandboxes.ConfigFrom(c, nil).SandboxEnv(); env["OH_ALLOW_CORS_ORIGINS_0"] != "" {
		t.Fatalf("no public URL, yet a CORS origin: %v", env)
	}
}
