package bashapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/bashapi"
)

func TestExecute(t *testing.T) {
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	e := newEnv(t, envOpts{
		work:  work,
		extra: func() []string { return []string{"EXTRA_VAR=extra-value", "BASHAPI_PLAIN=overridden"} },
	})
	cases := []struct {
		name           string
		command        string
		cwd            *string
		exit           int
		stdout, stderr string
	}{
		{name: "echo", command: "echo hello", stdout: "hello\n"},
		{name: "stderr separate", command: "echo out; echo err >&2", stdout: "out\n", stderr: "err\n"},
		{name: "non-zero exit", command: "echo partial; exit 3", exit: 3, stdout: "partial\n"},
		{name: "default cwd", command: "pwd", stdout: work + "\n"},
		{name: "absolute cwd", command: "pwd", cwd: &other, stdout: other + "\n"},
		{name: "relative cwd", command: "pwd", cwd: ptr("sub"), stdout: filepath.Join(work, "sub") + "\n"},
		{name: "empty cwd is default", command: "pwd", cwd: ptr(""), stdout: work + "\n"},
		{name: "stdin is empty", command: "cat; echo done", stdout: "done\n"},
		{name: "killed by signal", command: "kill -9 $$", exit: -9},
		{
			name:    "env sanitised",
			command: `echo "${FOO_TOKEN-unset} ${SESSION_API_KEY-unset} ${OH_SESSION_API_KEYS_0-unset} ${MY_PASSWORD-unset}"`,
			stdout:  "unset unset unset unset\n",
		},
		{name: "env extra overrides", command: `echo "$EXTRA_VAR $BASHAPI_PLAIN"`, stdout: "extra-value overridden\n"},
		{name: "new session and group", command: `cut -d' ' -f5,6 /proc/$$/stat; echo $$`, stdout: "SAME"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			final := e.execute(tc.command, tc.cwd, 0)
			if *final.ExitCode != tc.exit {
				t.Fatalf("exit_code %d, want %d", *final.ExitCode, tc.exit)
			}
			outs := e.outputs(final.CommandID)
			if outs[len(outs)-1].ID != final.ID {
				t.Fatalf("execute returned %s, last stored output is %s", final.ID, outs[len(outs)-1].ID)
			}
			stdout, stderr := joined(outs)
			if tc.stdout == "SAME" {
				lines := strings.Fields(stdout)
				if len(lines) != 3 || lines[0] != lines[2] || lines[1] != lines[2] {
					t.Fatalf("session id and pid differ: %q", stdout)
				}
			} else if stdout != tc.stdout {
				t.Fatalf("stdout %q, want %q", stdout, tc.stdout)
			}
			if stderr != tc.stderr {
				t.Fatalf("stderr %q, want %q", stderr, tc.stderr)
			}
		})
	}
}

// TestEventShape checks the wire form: kind first, every field in order,
// nulls included, ids of 32 hex digits, microsecond UTC timestamps.
func TestEventShape(t *testing.T) {
	e := newEnv(t, envOpts{})
	hex := `[0-9a-f]{32}`
	ts := `"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"`
	cmd := e.start("echo hi", nil, 0)
	wantCmd := regexp.MustCompile(`^\{"kind":"BashCommand","id":"` + hex + `","timestamp":` + ts +
		`,"command":"echo hi","cwd":"` + regexp.QuoteMeta(e.work) + `","timeout":300\}$`)
	if !wantCmd.Match(cmd.raw) {
		t.Fatalf("BashCommand %s", cmd.raw)
	}
	var outs []event
	testwait.For(t, 10*time.Second, "final output", func() bool {
		outs, _ = e.search(url.Values{"command_id__eq": {cmd.ID}})
		return len(outs) > 0 && outs[len(outs)-1].ExitCode != nil
	})
	wantOut := regexp.MustCompile(`^\{"kind":"BashOutput","id":"` + hex + `","timestamp":` + ts +
		`,"command_id":"` + cmd.ID + `","order":\d+,"exit_code":(null|0),"stdout":("hi\\n"|null),"stderr":null\}$`)
	for _, o := range outs {
		if !wantOut.Match(o.raw) {
			t.Fatalf("BashOutput %s", o.raw)
		}
	}
	st, b := e.do("POST", "/api/bash/start_bash_command", `{"command":"true","cwd":"/does/not/exist"}`)
	if want := `{"detail":[{"loc":["body","cwd"],"msg":"Value error, cwd does not exist: /does/not/exist","type":"value_error"}]}`; st != 422 || strings.TrimSpace(string(b)) != want {
		t.Fatalf("bad cwd: %d %s", st, b)
	}
	// The error is still a stored event.
	errs, _ := e.search(url.Values{"kind__eq": {"BashError"}})
	wantErr := regexp.MustCompile(`^\{"kind":"BashError","id":"` + hex + `","timestamp":` + ts +
		`,"code":"InvalidCwd","detail":"cwd does not exist: /does/not/exist"\}$`)
	if len(errs) != 1 || !wantErr.Match(errs[0].raw) {
		t.Fatalf("stored bad-cwd error: %+v", errs)
	}
	// The file name encodes the timestamp, kind, command id and id.
	ents, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	nameRE := regexp.MustCompile(`^\d{20}_(BashCommand_` + hex + `|BashOutput_` + cmd.ID + `_` + hex + `|BashError_` + hex + `)\.json$`)
	if len(ents) != len(outs)+2 {
		t.Fatalf("%d files for %d events", len(ents), len(outs)+2)
	}
	for _, en := range ents {
		if !nameRE.MatchString(en.Name()) {
			t.Fatalf("file name %s", en.Name())
		}
		b, err := os.ReadFile(filepath.Join(e.dir, en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		ev := decodeEvent(t, b)
		stamp := strings.NewReplacer("-", "", "T", "", ":", "", ".", "", "Z", "").Replace(ev.Timestamp)
		if !strings.HasPrefix(en.Name(), stamp+"_"+ev.Kind+"_") || !strings.HasSuffix(en.Name(), "_"+ev.ID+".json") {
			t.Fatalf("file %s holds %s", en.Name(), b)
		}
	}
}

func TestBadCwd(t *testing.T) {
	e := newEnv(t, envOpts{})
	file := filepath.Join(e.work, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, cwd, detail string
	}{
		{"start missing", "start_bash_command", "/no/such/dir", "cwd does not exist: /no/such/dir"},
		{"execute missing", "execute_bash_command", "/no/such/dir", "cwd does not exist: /no/such/dir"},
		{"relative missing", "start_bash_command", "nope", "cwd does not exist: " + filepath.Join(e.work, "nope")},
		{"not a directory", "execute_bash_command", file, "cwd is not a directory: " + file},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			st, b := e.do("POST", "/api/bash/"+tc.path, reqJSON("echo never", &tc.cwd, 0))
			want := `{"detail":[{"loc":["body","cwd"],"msg":"Value error, ` + tc.detail + `","type":"value_error"}]}`
			if st != 422 || strings.TrimSpace(string(b)) != want {
				t.Fatalf("status %d: %s", st, b)
			}
			// The BashError event is stored and searchable.
			errs, _ := e.search(url.Values{"kind__eq": {"BashError"}})
			found := false
			for _, ev := range errs {
				found = found || (ev.Code == "InvalidCwd" && ev.Detail == tc.detail)
			}
			if !found {
				t.Fatalf("no stored InvalidCwd error for %s", tc.detail)
			}
		})
	}
	e.t = t
	if cmds, _ := e.search(url.Values{"kind__eq": {"BashCommand"}}); len(cmds) != 0 {
		t.Fatalf("a command was recorded: %+v", cmds)
	}
	// The Go API returns the BashError as the error.
	_, err := e.svc.Execute(context.Background(), agentwire.ExecuteBashRequest{Command: "true", Cwd: ptr("/no/such/dir")})
	var be *agentwire.BashError
	if !errors.As(err, &be) || be.Code != agentwire.CodeInvalidCwd {
		t.Fatalf("Execute error %v", err)
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	e := newEnv(t, envOpts{})
	cases := []struct {
		name    string
		command string
		minTime time.Duration
	}{
		// sleep is a child of the shell; SIGTERM to the group ends both.
		{"sigterm", "sleep 300 & echo $!; wait", time.Second},
		// Both ignore SIGTERM: SIGKILL follows a second later.
		{"sigkill", "trap '' TERM; sleep 300 & echo $!; wait; wait", 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			begin := time.Now()
			final := e.execute(tc.command, nil, 1)
			elapsed := time.Since(begin)
			if *final.ExitCode != -1 {
				t.Fatalf("exit_code %d, want -1", *final.ExitCode)
			}
			if elapsed < tc.minTime {
				t.Fatalf("finished after %v, want at least %v", elapsed, tc.minTime)
			}
			stdout, _ := joined(e.outputs(final.CommandID))
			pid, err := strconv.Atoi(strings.TrimSpace(stdout))
			if err != nil {
				t.Fatalf("stdout %q: %v", stdout, err)
			}
			if !processGone(pid) {
				t.Fatalf("child sleep %d still running after the final output", pid)
			}
		})
	}
}

// TestBackgroundJob: a background process that keeps the pipes open does not
// hold the command up, is not signalled, and can keep writing.
func TestBackgroundJob(t *testing.T) {
	e := newEnv(t, envOpts{})
	marker := filepath.Join(e.work, "marker")
	begin := time.Now()
	final := e.execute(`echo fg; (sleep 2; echo late; echo late >&2; echo alive > marker) & echo $!`, nil, 0)
	if d := time.Since(begin); d > 1500*time.Millisecond {
		t.Fatalf("execute waited %v for the background job", d)
	}
	if *final.ExitCode != 0 {
		t.Fatalf("exit_code %d", *final.ExitCode)
	}
	stdout, _ := joined(e.outputs(final.CommandID))
	lines := strings.Fields(stdout)
	if len(lines) != 2 || lines[0] != "fg" {
		t.Fatalf("stdout %q", stdout)
	}
	testwait.For(t, 10*time.Second, "background job to finish", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
}

func TestOutputChunks(t *testing.T) {
	e := newEnv(t, envOpts{})
	t.Run("large output split at 1 MiB", func(t *testing.T) {
		e.t = t
		final := e.execute(`head -c 3000000 /dev/zero | tr '\0' a; echo; head -c 1500000 /dev/zero | tr '\0' b >&2`, nil, 60)
		if *final.ExitCode != 0 {
			t.Fatalf("exit_code %d", *final.ExitCode)
		}
		outs := e.outputs(final.CommandID) // orders 0..n-1, sizes <= 1 MiB
		if len(outs) < 5 {
			t.Fatalf("%d chunks for 4.5 MB", len(outs))
		}
		stdout, stderr := joined(outs)
		if stdout != strings.Repeat("a", 3000000)+"\n" || stderr != strings.Repeat("b", 1500000) {
			t.Fatalf("lost output: %d stdout bytes, %d stderr bytes", len(stdout), len(stderr))
		}
	})
	t.Run("lines streamed while running", func(t *testing.T) {
		e.t = t
		final := e.execute(`for i in 1 2 3; do echo line$i; sleep 0.4; done`, nil, 60)
		outs := e.outputs(final.CommandID)
		// Lines 400 ms apart arrive in separate chunks (allowing for one
		// merge on a loaded machine).
		if len(outs) < 2 {
			t.Fatalf("%d chunks, want output streamed while running", len(outs))
		}
		if first := deref(outs[0].Stdout); !strings.HasPrefix(first, "line1\n") || strings.Contains(first, "line3") {
			t.Fatalf("first chunk %q", first)
		}
		if stdout, _ := joined(outs); stdout != "line1\nline2\nline3\n" {
			t.Fatalf("stdout %q", stdout)
		}
	})
	t.Run("partial line sent after a pause", func(t *testing.T) {
		e.t = t
		final := e.execute(`printf abc; sleep 1.5; printf def`, nil, 60)
		outs := e.outputs(final.CommandID)
		if len(outs) < 2 || deref(outs[0].Stdout) != "abc" {
			t.Fatalf("chunks %+v", outs)
		}
		if stdout, _ := joined(outs); stdout != "abcdef" {
			t.Fatalf("stdout %q", stdout)
		}
	})
	t.Run("multi-byte characters survive", func(t *testing.T) {
		e.t = t
		// 2-byte runes straddling the 1 MiB boundary at an odd offset.
		final := e.execute(`printf x; yes é | head -n 600000 | tr -d '\n'`, nil, 60)
		stdout, _ := joined(e.outputs(final.CommandID))
		if stdout != "x"+strings.Repeat("é", 600000) {
			t.Fatalf("stdout corrupted (%d bytes)", len(stdout))
		}
	})
}

func TestMask(t *testing.T) {
	mask := func(s string) string { return strings.ReplaceAll(s, "hunter2", "<secret>") }
	e := newEnv(t, envOpts{mask: mask})
	final := e.execute(`echo "pw=hunter2"; echo "hunter2 on stderr" >&2; sleep 0.3; echo again hunter2`, nil, 0)
	outs := e.outputs(final.CommandID)
	stdout, stderr := joined(outs)
	if stdout != "pw=<secret>\nagain <secret>\n" || stderr != "<secret> on stderr\n" {
		t.Fatalf("stdout %q stderr %q", stdout, stderr)
	}
	ents, _ := os.ReadDir(e.dir)
	for _, en := range ents {
		b, _ := os.ReadFile(filepath.Join(e.dir, en.Name()))
		if strings.Contains(string(b), "hunter2") && !strings.Contains(en.Name(), "BashCommand") {
			t.Fatalf("secret stored in %s: %s", en.Name(), b)
		}
	}
}

func TestStartAndPoll(t *testing.T) {
	e := newEnv(t, envOpts{})
	cmd := e.start("echo one; sleep 0.5; echo two; exit 4", nil, 30)
	if cmd.Kind != "BashCommand" || deref(cmd.Command) != "echo one; sleep 0.5; echo two; exit 4" ||
		deref(cmd.Cwd) != e.work || *cmd.Timeout != 30 {
		t.Fatalf("command %s", cmd.raw)
	}
	// Poll as a client would: only outputs after the last order seen.
	var got []event
	last := -1
	testwait.For(t, 20*time.Second, "exit code", func() bool {
		evs, _ := e.search(url.Values{
			"command_id__eq": {cmd.ID}, "kind__eq": {"BashOutput"}, "order__gt": {strconv.Itoa(last)},
		})
		for _, ev := range evs {
			got = append(got, ev)
			last = *ev.Order
		}
		return len(got) > 0 && got[len(got)-1].ExitCode != nil
	})
	checkChunks(t, got)
	if *got[len(got)-1].ExitCode != 4 {
		t.Fatalf("exit code %d", *got[len(got)-1].ExitCode)
	}
	if stdout, _ := joined(got); stdout != "one\ntwo\n" {
		t.Fatalf("stdout %q", stdout)
	}
}

func TestExecuteContextAndClose(t *testing.T) {
	e := newEnv(t, envOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := e.svc.Execute(ctx, agentwire.ExecuteBashRequest{Command: "sleep 0.6; echo late"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Execute error %v", err)
	}
	// The command carries on.
	cmds, _ := e.search(url.Values{"kind__eq": {"BashCommand"}})
	if len(cmds) != 1 {
		t.Fatalf("%d commands", len(cmds))
	}
	testwait.For(t, 10*time.Second, "late output", func() bool {
		outs, _ := e.search(url.Values{"command_id__eq": {cmds[0].ID}})
		return len(outs) > 0 && outs[len(outs)-1].ExitCode != nil
	})
	if stdout, _ := joined(e.outputs(cmds[0].ID)); stdout != "late\n" {
		t.Fatalf("stdout %q", stdout)
	}

	// Close kills running commands and records their end.
	run, err := e.svc.Start(context.Background(), agentwire.ExecuteBashRequest{Command: "sleep 300 & echo $!; wait", Timeout: 600})
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	testwait.For(t, 10*time.Second, "pid", func() bool {
		outs, _ := e.search(url.Values{"command_id__eq": {run.ID}})
		if len(outs) == 0 {
			return false
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(deref(outs[0].Stdout)))
		return pid > 0
	})
	if err := e.svc.Close(); err != nil {
		t.Fatal(err)
	}
	if !processGone(pid) {
		t.Fatalf("sleep %d survived Close", pid)
	}
	outs := e.outputs(run.ID)
	if code := *outs[len(outs)-1].ExitCode; code != -1 {
		t.Fatalf("exit code after Close %d", code)
	}
	if _, err := e.svc.Start(context.Background(), agentwire.ExecuteBashRequest{Command: "true"}); !errors.Is(err, bashapi.ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
	if st, b := e.do("POST", "/api/bash/execute_bash_command", `{"command":"true"}`); st != 503 {
		t.Fatalf("HTTP after Close: %d %s", st, b)
	}
}

func TestStrictRequest(t *testing.T) {
	e := newEnv(t, envOpts{})
	cases := []struct {
		name, body, loc, typ string
	}{
		{"unknown field", `{"command":"true","extra":1}`, "body.extra", "extra_forbidden"},
		{"missing command", `{"cwd":null}`, "body.command", "missing"},
		{"command not a string", `{"command":5}`, "body.command", "string_type"},
		{"timeout zero", `{"command":"true","timeout":0}`, "body.timeout", "greater_than_equal"},
		{"timeout not an int", `{"command":"true","timeout":"x"}`, "body.timeout", "int_type"},
		{"cwd not a string", `{"command":"true","cwd":3}`, "body.cwd", "string_type"},
		{"empty body", ``, "body", "missing"},
		{"not json", `{"command":`, "", "json_invalid"},
	}
	for _, path := range []string{"start_bash_command", "execute_bash_command"} {
		for _, tc := range cases {
			t.Run(path+"/"+tc.name, func(t *testing.T) {
				e.t = t
				st, b := e.do("POST", "/api/bash/"+path, tc.body)
				if st != 422 {
					t.Fatalf("status %d: %s", st, b)
				}
				var v validation
				_ = json.Unmarshal(b, &v)
				if len(v.Detail) == 0 || v.Detail[0].Type != tc.typ {
					t.Fatalf("body %s, want type %s", b, tc.typ)
				}
				if tc.loc != "" && locs(t, b)[0] != tc.loc {
					t.Fatalf("loc %v, want %s", locs(t, b), tc.loc)
				}
			})
		}
	}
	e.t = t
	if evs, _ := e.search(url.Values{}); len(evs) != 0 {
		t.Fatalf("rejected requests left events: %d", len(evs))
	}
}
