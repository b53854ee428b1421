package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/shared/acs"
)

// run runs the CLI in-process with no server and returns its exit code
// and outputs.
func run(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return env[k] }, ConfigDir: t.TempDir()})
	return code, out.String(), errb.String()
}

// Every command and subcommand answers --help with its usage and an
// example, exit 0.
func TestHelpEverywhere(t *testing.T) {
	var cmds [][]string
	for name := range commands {
		cmds = append(cmds, []string{name})
	}
	for _, sub := range []string{"sandboxes ls", "sandboxes create", "sandboxes pause", "sandboxes resume", "sandboxes delete",
		"settings get", "settings set", "keys ls", "keys create", "keys revoke", "secrets ls", "secrets set", "secrets delete"} {
		cmds = append(cmds, strings.Fields(sub))
	}
	for _, c := range cmds {
		t.Run(strings.Join(c, " "), func(t *testing.T) {
			code, out, errs := run(t, nil, append(c, "--help")...)
			if code != ExitOK || !strings.Contains(out, "Usage: acs "+c[0]) || !strings.Contains(out, "Example:\n  acs "+c[0]) || errs != "" {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			if len(c) == 1 && !strings.Contains(out, "-json") && !strings.Contains(out, "--json") {
				t.Fatalf("no --json in the help:\n%s", out)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nosuch"}, "acs: unknown command \"nosuch\""},
		{[]string{"watch"}, "acs watch: missing argument"},
		{[]string{"show", "a", "b"}, "acs show: unexpected argument \"b\""},
		{[]string{"ls", "--limit", "x"}, "acs ls: invalid value \"x\" for flag -limit"},
		{[]string{"ls", "--limit", "0"}, "acs ls: --limit must be at least 1"},
		{[]string{"start", "hi", "--secret", "NOVALUE"}, "acs start: invalid value \"NOVALUE\" for flag -secret: want NAME=VALUE"},
		{[]string{"sandboxes"}, "Usage: acs sandboxes"},
		{[]string{"settings", "set", "=x"}, "acs settings set: want key=value"},
		{[]string{"login"}, "acs login: --url is required when stdin is not a terminal"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errs := run(t, nil, tc.args...)
			if code != ExitUsage || !strings.HasPrefix(errs, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, errs, tc.want)
			}
		})
	}
}

func TestNotLoggedIn(t *testing.T) {
	code, _, errs := run(t, nil, "ls")
	if code != ExitFailure || errs != "acs: not logged in: run \"acs login\" (or set ACS_URL and ACS_API_KEY)\n" {
		t.Fatalf("exit %d stderr %q", code, errs)
	}
}

// Flags go anywhere among the arguments; "--" ends them.
func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		pos       []string
		repo      string
		json, run bool
	}{
		{[]string{"msg", "--repo", "a/b"}, []string{"msg"}, "a/b", false, false},
		{[]string{"--repo", "a/b", "msg", "--json"}, []string{"msg"}, "a/b", true, false},
		{[]string{"x", "--no-run", "y"}, []string{"x", "y"}, "", false, true},
		{[]string{"--", "--repo", "z"}, []string{"--repo", "z"}, "", false, false},
	} {
		a := &app{io: IO{Stdout: &bytes.Buffer{}}}
		fs := a.flags("t", "t", "", "")
		repo := fs.String("repo", "", "")
		noRun := fs.Bool("no-run", false, "")
		pos, err := a.parse(fs, tc.args, 0, -1)
		if err != nil || !reflect.DeepEqual(pos, tc.pos) || *repo != tc.repo || a.json != tc.json || *noRun != tc.run {
			t.Errorf("%v: pos %q repo %q json %v no-run %v err %v", tc.args, pos, *repo, a.json, *noRun, err)
		}
	}
}

func TestErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&client.Error{Method: "GET", Path: "/x", Status: 404, Err: acs.Errorf(acs.ENOTFOUND, "Conversation not found")}, "404 Conversation not found"},
		{fmt.Errorf("wrapped: %w", &client.Error{Status: 401, Err: acs.Errorf(acs.EUNAUTHORIZED, "invalid API key")}), "401 invalid API key"},
		{&client.Error{Status: 422, Err: &acs.Error{Code: acs.EINVALID, Message: "must be org/repo", Field: []any{"body", "selected_repository"}}},
			"422 body.selected_repository: must be org/repo"},
		{context.Canceled, "interrupted"},
		{errors.New("dial tcp: connection refused"), "dial tcp: connection refused"},
	} {
		if got := errorText(tc.err); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.err, got, tc.want)
		}
	}
}

// The login is saved for the user only; ACS_URL and ACS_API_KEY override
// it.
func TestConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "acs")
	st := IO{ConfigDir: dir, Getenv: func(string) string { return "" }}
	p, err := saveConfig(st, config{URL: "http://saved", APIKey: "saved-key"})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config file mode: %v %v", fi, err)
	}
	if di, err := os.Stat(dir); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("config dir mode: %v %v", di, err)
	}
	for _, tc := range []struct {
		env      map[string]string
		url, key string
	}{
		{nil, "http://saved", "saved-key"},
		{map[string]string{"ACS_URL": "http://env"}, "http://env", "saved-key"},
		{map[string]string{"ACS_API_KEY": "env-key"}, "http://saved", "env-key"},
	} {
		a := &app{io: IO{ConfigDir: dir, Getenv: func(k string) string { return tc.env[k] }}}
		if err := a.connect(); err != nil || a.url != tc.url {
			t.Errorf("%v: url %q err %v", tc.env, a.url, err)
		}
	}
}

func TestSettingValue(t *testing.T) {
	for in, want := range map[string]string{
		"LEAST_RECENTLY_USED":     `"LEAST_RECENTLY_USED"`,
		"openai/gpt-4o":           `"openai/gpt-4o"`,
		"5":                       `5`,
		"null":                    `null`,
		`{"kind":"NeverConfirm"}`: `{"kind":"NeverConfirm"}`,
		"":                        `""`,
	} {
		if got := string(settingValue(in)); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}
