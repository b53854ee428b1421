//go:build linux

package procsandbox

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// cgroups gives each start of an agent server a cgroup v2 of its own,
// below the cgroup this process runs in, when this process may create one
// there: as root, or in a cgroup delegated to its user. Every process the
// sandbox starts is in it and cannot leave it, so killing the cgroup stops
// them all, even after the sandbox's init was killed.
type cgroups struct {
	// base holds the sandboxes' cgroups; "" when there are none.
	base string
}

// cgroupPrefix starts the name of every sandbox's cgroup.
const cgroupPrefix = "acs-sandbox-"

// newCgroups finds where this process may make cgroups, if anywhere.
func newCgroups() cgroups {
	mounts := cgroup2Mounts()
	own := ownCgroup()
	if len(mounts) == 0 || own == "" {
		slog.Info("procsandbox: no cgroup v2 here; each sandbox's processes are stopped by its init alone")
		return cgroups{}
	}
	base := filepath.Join(mounts[0], own)
	probe := filepath.Join(base, cgroupPrefix+"probe-"+acs.NewID()[:12])
	if err := os.Mkdir(probe, 0o755); err != nil {
		slog.Info("procsandbox: cannot create cgroups; each sandbox's processes are stopped by its init alone",
			"cgroup", base, "error", err)
		return cgroups{}
	}
	os.Remove(probe)
	return cgroups{base: base}
}

// create makes a new cgroup for sandbox id and opens it for
// SysProcAttr.CgroupFD. Without cgroups it returns "" and -1.
func (c cgroups) create(id string) (string, int, error) {
	if c.base == "" {
		return "", -1, nil
	}
	path := filepath.Join(c.base, cgroupPrefix+id+"-"+acs.NewID()[:8])
	if err := os.Mkdir(path, 0o755); err != nil {
		return "", -1, fmt.Errorf("procsandbox: create cgroup: %w", err)
	}
	fd, err := syscall.Open(path, syscall.O_DIRECTORY|syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(path)
		return "", -1, fmt.Errorf("procsandbox: open cgroup: %w", err)
	}
	return path, fd, nil
}

// killCgroup kills every process in the cgroup at path and removes it. A
// path that is not a sandbox's cgroup is left alone.
func killCgroup(path string) {
	if !isSandboxCgroup(path) {
		return
	}
	if _, err := os.Stat(path); err != nil {
		return
	}
	// cgroup.kill kills every member at once, forks in flight included.
	if err := os.WriteFile(filepath.Join(path, "cgroup.kill"), []byte("1"), 0); err != nil {
		killMembers(path) // before Linux 5.14
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := os.Remove(path)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			slog.Warn("procsandbox: a sandbox's cgroup still has processes after SIGKILL", "cgroup", path, "error", err)
			return
		}
		killMembers(path)
		time.Sleep(10 * time.Millisecond)
	}
}

// killMembers sends SIGKILL to each process listed in the cgroup.
func killMembers(path string) {
	b, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// isSandboxCgroup reports whether path names a sandbox's cgroup: below a
// cgroup v2 mount, named by create.
func isSandboxCgroup(path string) bool {
	if !filepath.IsAbs(path) || !strings.HasPrefix(filepath.Base(path), cgroupPrefix) {
		return false
	}
	for _, m := range cgroup2Mounts() {
		if strings.HasPrefix(filepath.Clean(path), m+"/") {
			return true
		}
	}
	return false
}

// cgroup2Mounts lists where cgroup v2 is mounted, from /proc/self/mountinfo.
func cgroup2Mounts() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ... - fstype source ...
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, rest := strings.Fields(pre), strings.Fields(post)
		if ok && len(fields) >= 5 && len(rest) >= 1 && rest[0] == "cgroup2" {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroup is this process's cgroup v2 path, from /proc/self/cgroup.
func ownCgroup() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && strings.HasPrefix(p, "/") {
			return p
		}
	}
	return ""
}
