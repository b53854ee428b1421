// Package failpoint lets fault tests make a real binary die at a named
// point, the way a crash, an out-of-memory kill or a Lambda timeout would.
// It is inert unless ACS_FAILPOINTS names the point: production never sets
// it.
package failpoint

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// ExitCode is the status a failpoint exits with.
const ExitCode = 75

// Crash exits the process with ExitCode at the point name when
// ACS_FAILPOINTS (comma-separated names) names it. With ACS_FAILPOINT_DIR
// set, each point fires once: a marker file there records that it fired, so
// the restarted process gets past it.
func Crash(name string) {
	if !enabled(name) {
		return
	}
	if dir := os.Getenv("ACS_FAILPOINT_DIR"); dir != "" {
		marker := filepath.Join(dir, strings.NewReplacer("/", "_", string(os.PathSeparator), "_").Replace(name))
		f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return // fired before (or the directory is unusable): go on
		}
		f.Close()
	}
	slog.Error("failpoint: crashing", "point", name)
	os.Exit(ExitCode)
}

func enabled(name string) bool {
	for _, p := range strings.Split(os.Getenv("ACS_FAILPOINTS"), ",") {
		if strings.TrimSpace(p) == name {
			return true
		}
	}
	return false
}
