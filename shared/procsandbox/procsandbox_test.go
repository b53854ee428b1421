package procsandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/procsandbox"
	"github.com/acs-project/acs/shared/sandboxtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(ownerVar) != "" {
		os.Exit(runOwner())
	}
	testbin.Main(m)
}

// TestConformance includes RestartAfterCrash: kill -9 of an agent server
// is followed by a restart with back-off (the sandbox STARTING, never
// ERROR), three in a row are a crash loop (ERROR), resume restarts an ERROR
// sandbox, and a removed workspace makes it ERROR for good.
func TestConformance(t *testing.T) {
	root := t.TempDir()
	rt, err := procsandbox.New(procsandbox.Config{Binary: testbin.ACS(t), Root: root, RestartBackoff: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	sandboxtest.Run(t, rt, sandboxtest.LocalOptions(root, 500*time.Millisecond))
}

// A sandbox's environment is minimal: the control plane's secrets never
// reach it. (The environment is recorded by a wrapper that then runs the
// agent server: the agent server hides its own /proc/<pid>/environ.)
func TestEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("LLM_API_KEY", "sk-must-not-leak")
	t.Setenv("ACS_API_KEY", "acs-must-not-leak")
	root := t.TempDir()
	dump := filepath.Join(t.TempDir(), "env.txt")
	wrapper := filepath.Join(t.TempDir(), "acs-wrapper")
	script := "#!/bin/sh\nenv > '" + dump + ".tmp' && mv '" + dump + ".tmp' '" + dump + "'\nexec '" + testbin.ACS(t) + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	rt, err := procsandbox.New(procsandbox.Config{Binary: wrapper, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	_, err = rt.Start(t.Context(), acs.StartRequest{SandboxID: "envcheck", SessionKey: "k", Env: map[string]string{"EXTRA": "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	var environ []byte
	testwait.Until(10*time.Second, func() bool { environ, _ = os.ReadFile(dump); return len(environ) > 0 })
	env := "\n" + string(environ)
	for _, leak := range []string{"sk-must-not-leak", "acs-must-not-leak"} {
		if len(environ) == 0 || strings.Contains(env, leak) {
			t.Fatalf("environment leaks %q (or could not be read)", leak)
		}
	}
	if !strings.Contains(env, "\nEXTRA=yes\n") || !strings.Contains(env, "\nOH_SESSION_API_KEYS_0=k\n") {
		t.Fatalf("environment lacks what the sandbox needs: %q", env)
	}
}
