package lambdatest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// builds caches built binaries per package for the life of the test
// process. It is the package's only global state.
var builds struct {
	mu      sync.Mutex
	root    string // module root, found once
	dir     string // temporary directory holding every binary
	results map[string]buildResult
}

type buildResult struct {
	path string
	err  error
	out  []byte
}

// Build compiles the main package pkg (an import path, or a path relative to
// the module root such as "./functions/api") as a Lambda bootstrap with
//
//	CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o <dir>/bootstrap <pkg>
//
// run in the module root, for the host GOOS/GOARCH so the test can execute
// it, and returns the binary's path. Each package is built once per test
// process (Go's build cache keeps rebuilds fast); a failed build fails the
// test with the compiler output, every time it is asked for. Remove the
// binaries at the end of the test binary with [RemoveBuilds].
func Build(t testing.TB, pkg string) string {
	t.Helper()
	builds.mu.Lock()
	r := buildLocked(pkg)
	builds.mu.Unlock()
	if r.err != nil {
		t.Fatalf("lambdatest: build %s: %v\n%s", pkg, r.err, r.out)
	}
	return r.path
}

// BuildAll is [Build] for several packages, compiled with a single go build
// invocation where it can (faster than one per package). It returns the
// binary path of every package, keyed by pkg as given. Packages whose
// binary names would collide in one output directory are built one by one.
func BuildAll(t testing.TB, pkgs []string) map[string]string {
	t.Helper()
	builds.mu.Lock()
	var todo []string
	seen := map[string]bool{}
	names := map[string]int{}
	for _, pkg := range pkgs {
		if _, ok := builds.results[pkg]; ok || seen[pkg] {
			continue
		}
		seen[pkg] = true
		todo = append(todo, pkg)
		names[binaryName(pkg)]++
	}
	batch := len(todo) > 1
	for name, n := range names {
		if name == "" || n > 1 {
			batch = false
		}
	}
	if batch {
		buildBatchLocked(todo)
	}
	paths := make(map[string]string, len(pkgs))
	var failed []string
	for _, pkg := range pkgs {
		r := buildLocked(pkg) // cached unless the batch failed
		if r.err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v\n%s", pkg, r.err, r.out))
			continue
		}
		paths[pkg] = r.path
	}
	builds.mu.Unlock()
	if len(failed) > 0 {
		t.Fatalf("lambdatest: build failed:\n%s", strings.Join(failed, "\n"))
	}
	return paths
}

// RemoveBuilds deletes every binary built by [Build] and [BuildAll] and
// forgets them. Call it from TestMain after m.Run.
func RemoveBuilds() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	builds.dir = ""
	builds.results = nil
}

// buildLocked returns the cached result for pkg, building it first if
// needed. builds.mu is held.
func buildLocked(pkg string) buildResult {
	if r, ok := builds.results[pkg]; ok {
		return r
	}
	r := func() buildResult {
		out, err := newBinaryDirLocked(binaryName(pkg))
		if err != nil {
			return buildResult{err: err}
		}
		bin := filepath.Join(out, "bootstrap"+exeSuffix())
		cmd := goBuildCommand("-o", bin, pkg)
		cmd.Dir = builds.root
		output, err := cmd.CombinedOutput()
		if err != nil {
			return buildResult{err: fmt.Errorf("go build: %w", err), out: output}
		}
		return buildResult{path: bin}
	}()
	if builds.results == nil {
		builds.results = map[string]buildResult{}
	}
	builds.results[pkg] = r
	return r
}

// buildBatchLocked builds pkgs with one go build into a shared directory
// and moves each binary to its own <dir>/bootstrap. On failure nothing is
// cached, so buildLocked retries package by package and attributes the
// errors. builds.mu is held.
func buildBatchLocked(pkgs []string) {
	if err := prepareLocked(); err != nil {
		return
	}
	tmp, err := os.MkdirTemp(builds.dir, "batch-")
	if err != nil {
		return
	}
	defer os.RemoveAll(tmp)
	args := append([]string{"-o", tmp + string(filepath.Separator)}, pkgs...)
	cmd := goBuildCommand(args...)
	cmd.Dir = builds.root
	if _, err := cmd.CombinedOutput(); err != nil {
		return
	}
	for _, pkg := range pkgs {
		name := binaryName(pkg)
		out, err := newBinaryDirLocked(name)
		if err != nil {
			return
		}
		bin := filepath.Join(out, "bootstrap"+exeSuffix())
		if err := os.Rename(filepath.Join(tmp, name+exeSuffix()), bin); err != nil {
			continue // left to buildLocked
		}
		if builds.results == nil {
			builds.results = map[string]buildResult{}
		}
		builds.results[pkg] = buildResult{path: bin}
	}
}

// prepareLocked finds the module root and creates the output directory.
func prepareLocked() error {
	if builds.root == "" {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			return fmt.Errorf("find the module root: go env GOMOD: %w", err)
		}
		gomod := strings.TrimSpace(string(out))
		if gomod == "" || gomod == os.DevNull {
			return errors.New("find the module root: not inside a Go module")
		}
		builds.root = filepath.Dir(gomod)
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "lambdatest-build-")
		if err != nil {
			return fmt.Errorf("create the build directory: %w", err)
		}
		builds.dir = dir
	}
	return nil
}

// newBinaryDirLocked creates an empty directory for one binary; it becomes
// the function's LAMBDA_TASK_ROOT.
func newBinaryDirLocked(name string) (string, error) {
	if err := prepareLocked(); err != nil {
		return "", err
	}
	if name == "" {
		name = "function"
	}
	dir, err := os.MkdirTemp(builds.dir, name+"-")
	if err != nil {
		return "", fmt.Errorf("create the output directory: %w", err)
	}
	return dir, nil
}

func goBuildCommand(args ...string) *exec.Cmd {
	cmd := exec.Command("go", append([]string{"build", "-tags", "lambda.norpc", "-trimpath"}, args...)...)
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0",
		"GOOS="+runtime.GOOS,
		"GOARCH="+runtime.GOARCH,
	)
	return cmd
}

var majorVersion = regexp.MustCompile(`^v[0-9]+$`)

// binaryName returns the name go build gives the executable of pkg when
// building several packages into a directory: the last path element, or
// the one before a major-version suffix. It returns "" when that cannot be
// told from pkg alone (".", "..", patterns).
func binaryName(pkg string) string {
	if strings.Contains(pkg, "...") {
		return ""
	}
	p := path.Clean(filepath.ToSlash(pkg))
	base := path.Base(p)
	if majorVersion.MatchString(base) && path.Dir(p) != "." {
		base = path.Base(path.Dir(p))
	}
	if base == "." || base == ".." || base == "/" {
		return ""
	}
	return base
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}
