package floor_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildServer builds floorserver into a temporary directory.
func buildServer(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "floorserver")
	out, err := exec.Command("go", "build", "-o", bin, "./floorserver").CombinedOutput()
	if err != nil {
		tb.Fatalf("build floorserver: %v\n%s", err, out)
	}
	return bin
}

// spawn starts the server and returns its first response (body read) and a
// stop function that kills and reaps the process.
func spawn(tb testing.TB, client *http.Client, bin string) (*http.Response, func()) {
	tb.Helper()
	cmd := exec.Command(bin)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start floorserver: %v", err)
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		tb.Fatalf("floorserver address: %v", err)
	}
	resp, err := client.Get("http://" + strings.TrimSpace(addr) + "/")
	if err != nil {
		stop()
		tb.Fatalf("first request: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		stop()
		tb.Fatalf("first response: %v", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, stop
}

func TestSpawnAnswers200(t *testing.T) {
	bin := buildServer(t)
	resp, stop := spawn(t, &http.Client{}, bin)
	defer stop()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Fatalf("first response %d %q, want 200 \"ok\"", resp.StatusCode, body)
	}
}

// BenchmarkSpawnToFirst200 is the process-start floor: from exec of a small
// Go HTTP server to its first 200 (a fresh connection each time, as a
// new process needs).
func BenchmarkSpawnToFirst200(b *testing.B) {
	bin := buildServer(b)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for b.Loop() {
		resp, stop := spawn(b, client, bin)
		b.StopTimer() // the kill and reap are not part of the floor
		stop()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("first response %d", resp.StatusCode)
		}
		b.StartTimer()
	}
}

// BenchmarkFsync1KiB is the durable-write floor: append 1 KiB to a file and
// fsync it, as a durable log append does.
func BenchmarkFsync1KiB(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "floor"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := bytes.Repeat([]byte("x"), 1024)
	for b.Loop() {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}
