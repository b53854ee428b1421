package lambdatest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// fakeTB records a Fatalf instead of failing the real test. Run code that
// may call Fatalf through runFake.
type fakeTB struct {
	testing.TB // nil: methods not overridden below panic
	mu         sync.Mutex
	fatal      string
	cleanups   []func()
}

func (f *fakeTB) Helper()                  {}
func (f *fakeTB) Logf(string, ...any)      {}
func (f *fakeTB) Cleanup(fn func())        { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Context() context.Context { return context.Background() }
func (f *fakeTB) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fatal != ""
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// runFake runs fn with a fakeTB in its own goroutine, then its cleanups,
// and returns the Fatalf message ("" when fn did not fail).
func runFake(fn func(tb *fakeTB)) string {
	tb := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	for i := len(tb.cleanups) - 1; i >= 0; i-- {
		tb.cleanups[i]()
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.fatal
}

func TestStartFailsWhenTheProcessExitsDuringInit(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("uses a shell script as the bootstrap")
	}
	bin := filepath.Join(t.TempDir(), "bootstrap")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho dying early >&2\nexit 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	msg := runFake(func(tb *fakeTB) {
		Start(t.Context(), tb, Options{Name: "dies", Binary: bin})
	})
	for _, want := range []string{"did not initialize", "exit status 7", "dying early"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Start failure %q does not mention %q", msg, want)
		}
	}
}

func TestBuildFailureFailsTheTest(t *testing.T) {
	t.Parallel()
	msg := runFake(func(tb *fakeTB) {
		Build(tb, "github.com/acs-project/acs/internal/lambdatest/testdata/no-such-function")
	})
	if !strings.Contains(msg, "no-such-function") || !strings.Contains(msg, "go build") {
		t.Errorf("Build failure message = %q", msg)
	}
}

func TestBuildAllBatch(t *testing.T) {
	t.Parallel()
	// The relative path is a cache key no other test uses, so both packages
	// are built by one go build.
	const nopPkg = "github.com/acs-project/acs/internal/lambdatest/testdata/nopfn"
	const echoRel = "./internal/lambdatest/testdata/echofn"
	paths := BuildAll(t, []string{nopPkg, echoRel})
	if len(paths) != 2 || paths[nopPkg] == paths[echoRel] {
		t.Fatalf("BuildAll = %v", paths)
	}
	nop := Start(t.Context(), t, Options{Name: "nop", Binary: paths[nopPkg]})
	if out, err := nop.Invoke(t.Context(), nil); err != nil || string(out) != `"nop"` {
		t.Errorf("nopfn: %s, %v", out, err)
	}
	e := Start(t.Context(), t, Options{Name: "echo2", Binary: paths[echoRel]})
	echo(t, e, `"batch"`)
	if again := BuildAll(t, []string{echoRel}); again[echoRel] != paths[echoRel] {
		t.Errorf("BuildAll did not reuse the cached binary: %q vs %q", again[echoRel], paths[echoRel])
	}
}
