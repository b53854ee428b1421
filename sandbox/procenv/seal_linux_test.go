//go:build linux

package procenv_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/acs-project/acs/sandbox/procenv"
)

// TestMain turns the test binary into a helper process when PROCENV_HELPER
// is set: "server" seals itself as the agent server does and starts a
// "tool"; "tool" reports what it can see of its parent.
func TestMain(m *testing.M) {
	switch os.Getenv("PROCENV_HELPER") {
	case "server":
		os.Exit(helperServer())
	case "tool":
		os.Exit(helperTool())
	}
	os.Exit(m.Run())
}

// sealReport is what the sealed helper and its tool report.
type sealReport struct {
	SealError    string   `json:"seal_error"`
	Environ      []string `json:"environ"`        // the server's os.Environ after Seal
	Dumpable     int      `json:"dumpable"`       // its PR_GET_DUMPABLE
	Tool         toolView `json:"tool"`           // what its child saw
	ToolEnvFixed []string `json:"tool_env_fixed"` // procenv.Environ() as handed to a child explicitly
}

// toolView is what a process started by the sealed server sees.
type toolView struct {
	Environ       []string `json:"environ"`
	Dumpable      int      `json:"dumpable"`
	ParentEnviron string   `json:"parent_environ"`
	ParentEnvErr  string   `json:"parent_environ_error"`
	ParentMemErr  string   `json:"parent_mem_error"`
	ParentStatus  bool     `json:"parent_status_readable"`
	ParentCmdline string   `json:"parent_cmdline"`
}

func dumpable() int {
	r, _, _ := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_GET_DUMPABLE, 0, 0)
	return int(r)
}

func helperServer() int {
	var rep sealReport
	if err := procenv.Seal(); err != nil {
		rep.SealError = err.Error()
	}
	rep.Environ = os.Environ()
	rep.Dumpable = dumpable()
	rep.ToolEnvFixed = procenv.Environ()
	// A tool started the way a library would: inheriting the environment.
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = append(os.Environ(), "PROCENV_HELPER=tool")
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tool:", err)
		return 2
	}
	if err := json.Unmarshal(out, &rep.Tool); err != nil {
		fmt.Fprintln(os.Stderr, "tool output:", err, string(out))
		return 2
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	os.Stdout.Close()
	// Stay alive until the test has looked at this process from outside.
	io.Copy(io.Discard, os.Stdin)
	return 0
}

func helperTool() int {
	var v toolView
	v.Environ = os.Environ()
	v.Dumpable = dumpable()
	ppid := strconv.Itoa(os.Getppid())
	if b, err := os.ReadFile("/proc/" + ppid + "/environ"); err != nil {
		v.ParentEnvErr = err.Error()
	} else {
		v.ParentEnviron = string(b)
	}
	if f, err := os.Open("/proc/" + ppid + "/mem"); err != nil {
		v.ParentMemErr = err.Error()
	} else {
		f.Close()
	}
	_, err := os.ReadFile("/proc/" + ppid + "/status")
	v.ParentStatus = err == nil
	b, _ := os.ReadFile("/proc/" + ppid + "/cmdline")
	v.ParentCmdline = string(b)
	json.NewEncoder(os.Stdout).Encode(v)
	return 0
}

// helperBinary is a copy of the test binary that an unprivileged user can
// run (the build directory is private to its owner).
func helperBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "procenv-helper-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "helper")
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// An agent server that sealed itself keeps its credentials from the
// processes it starts: not in their environment, not in its own
// /proc/<pid>/environ, and its /proc/<pid>/environ and mem are closed to
// them (they run as the same user; the test runs both as nobody when it is
// root, since root may read any process). The tools are dumpable again, and
// the server's status and cmdline stay readable (procsandbox's orphan check
// reads cmdline).
func TestSealKeepsCredentialsFromChildren(t *testing.T) {
	secrets := map[string]string{
		"OH_SESSION_API_KEYS_0":      "sess-key-zero-4f1c9a",
		"OH_SESSION_API_KEYS_1":      "sess-key-one-77d2e0",
		"SESSION_API_KEY":            "sess-key-single-a93b",
		"OH_SECRET_KEY":              "sealing-key-0c5d11",
		"OH_WEBHOOKS_0_HEADERS":      `{"Authorization":"Bearer hook-token-5e6f"}`,
		"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=otel-token-8a8a",
	}
	cmd := exec.Command(helperBinary(t), "-test.run=^$")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PROCENV_HELPER=server", "PROCENV_KEEP=visible",
		"OH_WEBHOOKS_0_BASE_URL=http://127.0.0.1:1/api/v1/webhooks"}
	for k, v := range secrets {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if os.Getuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	var rep sealReport
	if err := json.NewDecoder(stdout).Decode(&rep); err != nil {
		t.Fatalf("helper report: %v\n%s", err, stderr.String())
	}
	leaks := func(where, text string) {
		t.Helper()
		for name, v := range secrets {
			if strings.Contains(text, v) {
				t.Errorf("%s holds %s's value", where, name)
			}
		}
		if strings.Contains(text, "127.0.0.1:1/api/v1/webhooks") {
			t.Errorf("%s holds the webhook URL", where)
		}
	}
	if rep.SealError != "" {
		t.Errorf("Seal: %s", rep.SealError)
	}

	// The server itself.
	leaks("the server's os.Environ after Seal", strings.Join(rep.Environ, "\n"))
	if rep.Dumpable != 0 {
		t.Errorf("the sealed server is dumpable (%d)", rep.Dumpable)
	}
	leaks("procenv.Environ()", strings.Join(rep.ToolEnvFixed, "\n"))

	// The tool it started.
	tool := rep.Tool
	leaks("the tool's environment", strings.Join(tool.Environ, "\n"))
	if !containsEntry(tool.Environ, "PROCENV_KEEP=visible") {
		t.Errorf("the tool lost an ordinary variable: %q", tool.Environ)
	}
	for _, kv := range tool.Environ {
		if name, _, _ := strings.Cut(kv, "="); procenv.Withheld(name) {
			t.Errorf("the tool's environment has %s", name)
		}
	}
	if tool.Dumpable != 1 {
		t.Errorf("the tool is not dumpable (%d): its own /proc would be closed to its children", tool.Dumpable)
	}
	leaks("the server's /proc/<pid>/environ read by the tool", tool.ParentEnviron)
	if tool.ParentEnvErr == "" || !strings.Contains(tool.ParentEnvErr, fs.ErrPermission.Error()) {
		t.Errorf("the tool read the server's /proc/<pid>/environ (error %q), want permission denied", tool.ParentEnvErr)
	}
	if tool.ParentMemErr == "" || !strings.Contains(tool.ParentMemErr, fs.ErrPermission.Error()) {
		t.Errorf("the tool opened the server's /proc/<pid>/mem (error %q), want permission denied", tool.ParentMemErr)
	}
	if !tool.ParentStatus || !strings.Contains(tool.ParentCmdline, "-test.run") {
		t.Errorf("the server's status (%v) or cmdline (%q) is not readable", tool.ParentStatus, tool.ParentCmdline)
	}

	// From outside (this test: the parent, possibly root).
	pid := strconv.Itoa(cmd.Process.Pid)
	if b, err := os.ReadFile("/proc/" + pid + "/cmdline"); err != nil || !strings.Contains(string(b), "-test.run") {
		t.Errorf("the sealed server's cmdline: %q %v", b, err)
	}
	if _, err := os.ReadFile("/proc/" + pid + "/status"); err != nil {
		t.Errorf("the sealed server's status: %v", err)
	}
	// A privileged reader (root) still sees the environment block, with
	// the withheld values overwritten; an unprivileged one is refused.
	if b, err := os.ReadFile("/proc/" + pid + "/environ"); err == nil {
		env := string(b)
		leaks("the server's /proc/<pid>/environ read by a privileged parent", env)
		if !strings.Contains(env, "PROCENV_KEEP=visible\x00") || !strings.Contains(env, "OH_SESSION_API_KEYS_0=\x00") {
			t.Errorf("the server's /proc/<pid>/environ lost more than the withheld values: %q", env)
		}
	} else if !errors.Is(err, fs.ErrPermission) {
		t.Errorf("the sealed server's environ: %v", err)
	}
}

func containsEntry(env []string, kv string) bool {
	for _, e := range env {
		if e == kv {
			return true
		}
	}
	return false
}
