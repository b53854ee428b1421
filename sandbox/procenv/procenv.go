// Package procenv keeps the agent server's own credentials away from every
// process it starts: the agent's terminal, the bash API's commands (the
// control plane's setup script runs there), hooks, MCP stdio servers, git,
// ripgrep and Chromium.
//
// Guarantees:
//
//   - Withheld names the variables no child may see (the deny-list): the
//     agent server's session keys (OH_SESSION_API_KEYS_<n>, SESSION_API_KEY,
//     which are also the control plane's webhook key), the key that seals
//     conversation secrets (OH_SECRET_KEY), every webhook setting
//     (OH_WEBHOOKS_*, the headers included) and the OTLP exporter's headers
//     (OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TRACES_HEADERS).
//   - Environ is the one base environment of every child: the process
//     environment without the withheld variables. Every spawner builds on it.
//   - Seal, called once at start after the configuration is read, removes
//     the withheld variables from the process environment (so a child started
//     with a nil exec.Cmd.Env, or by a library that copies os.Environ, gets
//     none either), overwrites their values in the environment block the
//     kernel shows as /proc/<pid>/environ (which unsetenv does not change),
//     and on Linux marks the process non-dumpable, so that processes of the
//     same user without CAP_SYS_PTRACE cannot read its /proc/<pid>/environ,
//     mem, maps or fd (status, stat and cmdline stay readable) and no core
//     dump is written. A child becomes dumpable again when it execs, so the
//     tools work as usual.
//   - Secrets lists the credential values of an environment, for the secret
//     masker: a value that reaches output anyway is shown as <secret-hidden>.
//
// What remains: a process with CAP_SYS_PTRACE (a tool running as root) can
// still read the server's memory, and a parent process that holds the
// credentials in its own environment (a shell or init wrapper started with
// them) exposes them in its own /proc/<pid>/environ.
package procenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"strings"
)

// Withheld reports whether the environment variable name is one of the
// agent server's own credentials or webhook settings, which no process the
// server starts may see.
func Withheld(name string) bool {
	switch name {
	case "SESSION_API_KEY", "OH_SECRET_KEY", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS":
		return true
	}
	return strings.HasPrefix(name, "OH_SESSION_API_KEYS_") || strings.HasPrefix(name, "OH_WEBHOOKS_")
}

// Filter returns the NAME=value entries of env whose names are not
// withheld, in their order. env itself is not modified.
func Filter(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !Withheld(name) {
			out = append(out, kv)
		}
	}
	return out
}

// Environ is the base environment of every process the agent server starts:
// os.Environ() without the withheld variables.
func Environ() []string { return Filter(os.Environ()) }

// Secrets returns the credential values held by the NAME=value entries of
// env, for the secret masker: the session keys, the secret key, and each
// header value of the webhook headers (OH_WEBHOOKS_<n>_HEADERS, a JSON
// object) and of the OTLP exporter's headers (name=value pairs separated by
// commas, values URL-encoded), besides those variables' whole values.
// Webhook URLs and other settings are withheld from children but are not
// secrets, and are not returned.
func Secrets(env []string) []string {
	var out []string
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || value == "" || !Withheld(name) {
			continue
		}
		switch {
		case strings.HasPrefix(name, "OH_WEBHOOKS_") && strings.HasSuffix(name, "_HEADERS"):
			out = append(out, value)
			var headers map[string]string
			if json.Unmarshal([]byte(value), &headers) == nil {
				for _, v := range headers {
					out = append(out, v)
				}
			}
		case strings.HasPrefix(name, "OH_WEBHOOKS_"):
			// URLs and delivery settings: not secret.
		case strings.HasPrefix(name, "OTEL_"):
			out = append(out, value)
			for _, pair := range strings.Split(value, ",") {
				if _, v, ok := strings.Cut(pair, "="); ok {
					v = strings.TrimSpace(v)
					out = append(out, v)
					if d, err := url.PathUnescape(v); err == nil && d != v {
						out = append(out, d)
					}
				}
			}
		default:
			out = append(out, value)
		}
	}
	return out
}

// Seal removes the withheld variables from the process environment,
// overwrites their values (with zero bytes) in the environment block the
// process was started with, and makes the process non-dumpable (Linux; a
// no-op elsewhere). Call it once, early, after the configuration and
// anything else that reads these variables from the environment (the OTLP
// exporter reads its headers when it is made) have been read, and before
// any child is started. Every step is attempted; the error joins those that
// failed, and the caller may log it and go on: the others still hold.
func Seal() error {
	var errs []error
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if Withheld(name) {
			if err := os.Unsetenv(name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// Wipe before giving up dumpability: an unprivileged non-dumpable
	// process may not open its own /proc/self/mem.
	if err := wipeStartEnviron(); err != nil {
		errs = append(errs, err)
	}
	if err := setNonDumpable(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// wipe overwrites with zero bytes, in an environment block (NAME=value
// entries each ended by a zero byte), the values of withheld variables. It
// reports whether it changed anything.
func wipe(block []byte) bool {
	changed := false
	for len(block) > 0 {
		entry := block
		if i := bytes.IndexByte(block, 0); i >= 0 {
			entry, block = block[:i], block[i+1:]
		} else {
			block = nil
		}
		eq := bytes.IndexByte(entry, '=')
		if eq <= 0 || !Withheld(string(entry[:eq])) {
			continue
		}
		for i := eq + 1; i < len(entry); i++ {
			if entry[i] != 0 {
				entry[i] = 0
				changed = true
			}
		}
	}
	return changed
}
