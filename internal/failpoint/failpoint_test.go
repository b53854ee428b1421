package failpoint_test

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/acs-project/acs/internal/failpoint"
)

// The test binary re-runs itself as the process that may crash.
func TestMain(m *testing.M) {
	if p := os.Getenv("FAILPOINT_TEST_POINT"); p != "" {
		failpoint.Crash(p)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func run(t *testing.T, point string, env ...string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"FAILPOINT_TEST_POINT=" + point}, env...)...)
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

func TestCrash(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name  string
		point string
		env   []string
		want  int
	}{
		{"not enabled", "a.b", nil, 0},
		{"other point enabled", "a.b", []string{"ACS_FAILPOINTS=a.c"}, 0},
		{"enabled", "a.b", []string{"ACS_FAILPOINTS=x, a.b"}, failpoint.ExitCode},
		{"once: first", "p.once", []string{"ACS_FAILPOINTS=p.once", "ACS_FAILPOINT_DIR=" + dir}, failpoint.ExitCode},
		{"once: after", "p.once", []string{"ACS_FAILPOINTS=p.once", "ACS_FAILPOINT_DIR=" + dir}, 0},
	}
	for _, tc := range tests {
		if got := run(t, tc.point, tc.env...); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
}
