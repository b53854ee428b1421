package image

// A Dockerfile lint that runs in `go test` (CI has no hadolint): a small
// Dockerfile parser and table-driven rules for ../Dockerfile. Each rule is
// also run on bad Dockerfiles, so every rule is known to be able to fail.

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// ---------------------------------------------------------------------------
// The parser.

// instruction is one logical Dockerfile instruction: continuations joined,
// comment lines dropped, leading --flags split off.
type instruction struct {
	Line  int                 // 1-based line of the keyword
	Cmd   string              // upper case: FROM, RUN, ...
	Flags map[string][]string // --name=value (a name may repeat: --mount)
	// Sub is HEALTHCHECK's CMD or NONE; the command follows in Args/Exec.
	Sub string
	// Args is the text after the keyword, the flags (and HEALTHCHECK's CMD).
	Args string
	// Exec is the exec (JSON) form's arguments; nil for the shell form.
	Exec []string
	// Heredocs are the bodies of <<WORD here-documents (RUN, COPY, ADD).
	Heredocs []string
}

// text is the command as one string: the exec form joined by spaces, or the
// shell form followed by its here-documents.
func (in *instruction) text() string {
	if in.Exec != nil {
		return strings.Join(in.Exec, " ")
	}
	return strings.Join(append([]string{in.Args}, in.Heredocs...), "\n")
}

// words are the arguments: the exec form's, or the shell form's fields.
func (in *instruction) words() []string {
	if in.Exec != nil {
		return in.Exec
	}
	return strings.Fields(in.Args)
}

func (in *instruction) String() string {
	return fmt.Sprintf("line %d: %s %s", in.Line, in.Cmd, in.Args)
}

type stage struct {
	Index    int
	Name     string // lower case; "" when the FROM has no AS
	From     *instruction
	Image    string // the FROM's image, global ARGs expanded
	Platform string
	Parent   *stage // the earlier stage the FROM names, if any
	Insts    []*instruction
}

// label is how messages name the stage.
func (s *stage) label() string {
	if s.Name != "" {
		return fmt.Sprintf("stage %q", s.Name)
	}
	return fmt.Sprintf("stage %d", s.Index)
}

// last is the stage's last cmd instruction, looking through the stages it is
// built FROM (a stage inherits USER, ENTRYPOINT, HEALTHCHECK, ...).
func (s *stage) last(cmd string) *instruction {
	for st := s; st != nil; st = st.Parent {
		for i := len(st.Insts) - 1; i >= 0; i-- {
			if st.Insts[i].Cmd == cmd {
				return st.Insts[i]
			}
		}
	}
	return nil
}

// all is every cmd instruction of the stage and the stages it is built FROM.
func (s *stage) all(cmd string) []*instruction {
	var out []*instruction
	for st := s; st != nil; st = st.Parent {
		for _, in := range st.Insts {
			if in.Cmd == cmd {
				out = append(out, in)
			}
		}
	}
	return out
}

type dockerfile struct {
	Directives map[string]string
	GlobalArgs []*instruction // ARGs before the first FROM
	Stages     []*stage
}

// final is the stage a build without --target produces: the last one.
func (d *dockerfile) final() *stage {
	if len(d.Stages) == 0 {
		return nil
	}
	return d.Stages[len(d.Stages)-1]
}

func (d *dockerfile) stage(name string) *stage {
	for _, s := range d.Stages {
		if s.Name == strings.ToLower(name) {
			return s
		}
	}
	return nil
}

var (
	directiveRE = regexp.MustCompile(`^#\s*([a-zA-Z][a-zA-Z0-9_-]*)\s*=\s*(.*?)\s*$`)
	heredocRE   = regexp.MustCompile(`(?:^|[^<])<<(-?)(["']?)([A-Za-z_][A-Za-z0-9_]*)(["']?)`)
)

// Instructions whose arguments may be in exec (JSON) form.
var execForm = map[string]bool{"RUN": true, "CMD": true, "ENTRYPOINT": true, "COPY": true, "ADD": true, "SHELL": true, "VOLUME": true}

// Instructions that take leading --flags.
var takesFlags = map[string]bool{"FROM": true, "RUN": true, "COPY": true, "ADD": true, "HEALTHCHECK": true}

func parseDockerfile(src string) (*dockerfile, error) {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	d := &dockerfile{Directives: map[string]string{}}

	// Parser directives: only at the very top, before any comment, blank
	// line or instruction; a repeated one ends them (BuildKit's rules).
	i := 0
	for ; i < len(lines); i++ {
		m := directiveRE.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			break
		}
		key := strings.ToLower(m[1])
		if _, dup := d.Directives[key]; dup {
			break
		}
		d.Directives[key] = m[2]
	}
	escape := "\\"
	if e, ok := d.Directives["escape"]; ok {
		if e != "\\" && e != "`" {
			return nil, fmt.Errorf("escape directive %q: must be \\ or `", e)
		}
		escape = e
	}
	skip := func(l string) bool { t := strings.TrimSpace(l); return t == "" || t[0] == '#' }

	for i < len(lines) {
		if skip(lines[i]) {
			i++
			continue
		}
		start := i + 1
		var b strings.Builder
		for i < len(lines) {
			l := strings.TrimRight(lines[i], " \t")
			i++
			if !strings.HasSuffix(l, escape) {
				b.WriteString(l)
				break
			}
			b.WriteString(strings.TrimSuffix(l, escape))
			// Comment and blank lines inside a continuation are dropped.
			for i < len(lines) && skip(lines[i]) {
				i++
			}
		}
		in, err := parseInstruction(start, b.String())
		if err != nil {
			return nil, err
		}
		if (in.Cmd == "RUN" || in.Cmd == "COPY" || in.Cmd == "ADD") && in.Exec == nil {
			for _, m := range heredocRE.FindAllStringSubmatch(in.Args, -1) {
				if m[2] != m[4] {
					return nil, fmt.Errorf("line %d: here-document <<%s%s%s: mismatched quotes", start, m[2], m[3], m[4])
				}
				var body []string
				found := false
				for i < len(lines) {
					l := lines[i]
					i++
					if m[1] == "-" {
						l = strings.TrimLeft(l, "\t")
					}
					if l == m[3] {
						found = true
						break
					}
					body = append(body, l)
				}
				if !found {
					return nil, fmt.Errorf("line %d: here-document %s is not terminated", start, m[3])
				}
				in.Heredocs = append(in.Heredocs, strings.Join(body, "\n"))
			}
		}
		if err := d.add(in); err != nil {
			return nil, err
		}
	}
	if len(d.Stages) == 0 {
		return nil, fmt.Errorf("no FROM instruction")
	}
	return d, nil
}

func parseInstruction(line int, s string) (*instruction, error) {
	s = strings.TrimSpace(s)
	kw, rest, _ := strings.Cut(s, " ")
	if k, r, ok := strings.Cut(kw, "\t"); ok {
		kw, rest = k, r+" "+rest
	}
	in := &instruction{Line: line, Cmd: strings.ToUpper(kw), Flags: map[string][]string{}}
	rest = strings.TrimSpace(rest)
	if takesFlags[in.Cmd] {
		for strings.HasPrefix(rest, "--") {
			tok, r, _ := strings.Cut(rest, " ")
			name, val, _ := strings.Cut(tok[2:], "=")
			in.Flags[strings.ToLower(name)] = append(in.Flags[strings.ToLower(name)], val)
			rest = strings.TrimSpace(r)
		}
	}
	if in.Cmd == "HEALTHCHECK" {
		sub, r, _ := strings.Cut(rest, " ")
		in.Sub = strings.ToUpper(sub)
		if in.Sub != "CMD" && in.Sub != "NONE" {
			return nil, fmt.Errorf("line %d: HEALTHCHECK wants CMD or NONE, not %q", line, sub)
		}
		rest = strings.TrimSpace(r)
	}
	in.Args = rest
	if (execForm[in.Cmd] || in.Sub == "CMD") && strings.HasPrefix(rest, "[") {
		// Not valid JSON: Docker falls back to the shell form, and so do we.
		var exec []string
		if err := json.Unmarshal([]byte(rest), &exec); err == nil {
			if exec == nil {
				exec = []string{}
			}
			in.Exec = exec
		}
	}
	return in, nil
}

// add files the instruction under the current stage (or the global ARGs).
func (d *dockerfile) add(in *instruction) error {
	if in.Cmd != "FROM" {
		if len(d.Stages) == 0 {
			if in.Cmd != "ARG" {
				return fmt.Errorf("line %d: %s before the first FROM (only ARG may be)", in.Line, in.Cmd)
			}
			d.GlobalArgs = append(d.GlobalArgs, in)
			return nil
		}
		s := d.Stages[len(d.Stages)-1]
		s.Insts = append(s.Insts, in)
		return nil
	}
	f := strings.Fields(in.Args)
	if len(f) != 1 && !(len(f) == 3 && strings.EqualFold(f[1], "AS")) {
		return fmt.Errorf("line %d: FROM wants `image [AS name]`, got %q", in.Line, in.Args)
	}
	s := &stage{Index: len(d.Stages), From: in, Image: d.expandArgs(f[0])}
	if len(in.Flags["platform"]) > 0 {
		s.Platform = in.Flags["platform"][0]
	}
	if len(f) == 3 {
		s.Name = strings.ToLower(f[2])
		if d.stage(s.Name) != nil {
			return fmt.Errorf("line %d: a second stage named %q", in.Line, s.Name)
		}
	}
	s.Parent = d.stage(s.Image)
	d.Stages = append(d.Stages, s)
	return nil
}

// expandArgs expands $X, ${X} and ${X:-default} from the global ARGs'
// defaults; a variable without a value is left as written.
func (d *dockerfile) expandArgs(s string) string {
	vals := map[string]string{}
	for _, a := range d.GlobalArgs {
		for _, w := range strings.Fields(a.Args) {
			if k, v, ok := strings.Cut(w, "="); ok {
				vals[k] = strings.Trim(v, `"'`)
			}
		}
	}
	return os.Expand(s, func(k string) string {
		name, def, hasDef := strings.Cut(k, ":-")
		if v := vals[name]; v != "" {
			return v
		}
		if hasDef {
			return def
		}
		return "${" + k + "}"
	})
}

// ---------------------------------------------------------------------------
// Shell helpers for RUN commands.

var segmentSep = regexp.MustCompile(`&&|\|\||[;|\n]`)

// segments splits a shell command into its simple commands, roughly.
func segments(cmd string) []string {
	var out []string
	for _, s := range segmentSep.Split(cmd, -1) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

var aptInstallRE = regexp.MustCompile(`\bapt(?:-get)?\s+(?:-\S+\s+)*install\b`)

// aptInstalls are the segments of the RUN that run apt-get install.
func aptInstalls(in *instruction) []string {
	var out []string
	for _, s := range segments(in.text()) {
		if aptInstallRE.MatchString(s) {
			out = append(out, s)
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// The rules.

type rule struct {
	name  string
	check func(d *dockerfile) []string // the problems; none when it passes
}

var (
	digestRE  = regexp.MustCompile(`@[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-fA-F0-9]{32,}$`)
	numericRE = regexp.MustCompile(`^[0-9]+$`)
	urlRE     = regexp.MustCompile(`^(?:https?|git|ssh)://|^git@`)
	sudoRE    = regexp.MustCompile(`\bsudo\b`)
	aptRmRE   = regexp.MustCompile(`^rm\s.*/var/lib/apt/lists`)
)

// runtimeStages are the stages that ship: the default (final) one and the
// browser target.
func runtimeStages(d *dockerfile) []*stage {
	out := []*stage{d.final()}
	if b := d.stage("browser"); b != nil && b != d.final() {
		out = append(out, b)
	}
	return out
}

var rules = []rule{
	{"from-pinned", func(d *dockerfile) []string {
		var p []string
		for _, s := range d.Stages {
			img := s.Image
			switch {
			case s.Parent != nil, img == "scratch", digestRE.MatchString(img):
				continue
			case strings.Contains(img, "$"):
				p = append(p, fmt.Sprintf("line %d: FROM %s: the image has a variable without a default, so its tag cannot be checked", s.From.Line, s.From.Args))
				continue
			}
			// The tag follows the last ':' after the last '/' (a registry
			// host may have a port: localhost:5000/debian has no tag).
			_, tag, ok := strings.Cut(img[strings.LastIndex(img, "/")+1:], ":")
			switch {
			case !ok || tag == "":
				p = append(p, fmt.Sprintf("line %d: FROM %s has no tag: pin a version (or a digest), never the implicit latest", s.From.Line, img))
			case tag == "latest":
				p = append(p, fmt.Sprintf("line %d: FROM %s uses the tag latest: pin a version (or a digest)", s.From.Line, img))
			}
		}
		return p
	}},
	{"multi-stage", func(d *dockerfile) []string {
		if len(d.Stages) < 2 {
			return []string{fmt.Sprintf("%d stage(s): want at least two (the Go build and the runtime), so the toolchain stays out of the image", len(d.Stages))}
		}
		return nil
	}},
	{"non-root-user", func(d *dockerfile) []string {
		var p []string
		for _, s := range runtimeStages(d) {
			u := s.last("USER")
			if u == nil {
				p = append(p, fmt.Sprintf("%s (built by default or as a target) has no USER, so it runs as root: add USER 10001:10001", s.label()))
				continue
			}
			user, group, hasGroup := strings.Cut(strings.TrimSpace(u.Args), ":")
			switch {
			case !numericRE.MatchString(user) || (hasGroup && !numericRE.MatchString(group)):
				p = append(p, fmt.Sprintf("%s runs as USER %s (%s): use a numeric UID[:GID] so Kubernetes' runAsNonRoot can verify it", s.label(), u.Args, u))
			case strings.Trim(user, "0") == "":
				p = append(p, fmt.Sprintf("%s runs as USER %s (%s), which is root", s.label(), u.Args, u))
			}
		}
		return p
	}},
	{"entrypoint", func(d *dockerfile) []string {
		e := d.final().last("ENTRYPOINT")
		switch {
		case e == nil:
			return []string{"the final stage has no ENTRYPOINT: want the exec form ending in agent-server"}
		case e.Exec == nil:
			return []string{fmt.Sprintf("%s: use the exec (JSON) form, so signals reach acs and CMD appends flags", e)}
		case len(e.Exec) == 0 || e.Exec[len(e.Exec)-1] != "agent-server":
			return []string{fmt.Sprintf("%s: the ENTRYPOINT must end with agent-server", e)}
		case len(e.Exec) != 2 || path.Base(e.Exec[0]) != "acs":
			return []string{fmt.Sprintf("%s: no init wrapper (tini, dumb-init, a shell): the ENTRYPOINT must start acs itself, "+
				"which does init's work as PID 1; a wrapper as PID 1 keeps the pod's environment, session key included, "+
				"in its /proc/1/environ, readable by the agent's tools", e)}
		}
		return nil
	}},
	{"no-init-wrapper", func(d *dockerfile) []string {
		var p []string
		for _, s := range d.Stages {
			for _, in := range s.Insts {
				if in.Cmd != "RUN" {
					continue
				}
				for _, seg := range aptInstalls(in) {
					for _, w := range strings.Fields(seg) {
						if w == "tini" || w == "dumb-init" {
							p = append(p, fmt.Sprintf("line %d: installs %s: acs is the container's init itself, so the image needs no init wrapper", in.Line, w))
						}
					}
				}
			}
		}
		return p
	}},
	{"healthcheck", func(d *dockerfile) []string {
		h := d.final().last("HEALTHCHECK")
		switch {
		case h == nil:
			return []string{"the final stage has no HEALTHCHECK: add one that GETs /alive"}
		case h.Sub == "NONE":
			return []string{fmt.Sprintf("%s: the HEALTHCHECK is disabled", h)}
		case !strings.Contains(h.text(), "/alive"):
			return []string{fmt.Sprintf("%s: the HEALTHCHECK must target /alive", h)}
		}
		return nil
	}},
	{"expose-8000", func(d *dockerfile) []string {
		for _, e := range d.final().all("EXPOSE") {
			for _, w := range e.words() {
				if w == "8000" || strings.EqualFold(w, "8000/tcp") {
					return nil
				}
			}
		}
		return []string{"the final stage does not EXPOSE 8000 (the agent server's port)"}
	}},
	{"apt-hygiene", func(d *dockerfile) []string {
		var p []string
		for _, s := range d.Stages {
			for _, in := range s.Insts {
				if in.Cmd != "RUN" {
					continue
				}
				installs := aptInstalls(in)
				for _, seg := range installs {
					if !strings.Contains(seg, "--no-install-recommends") {
						p = append(p, fmt.Sprintf("line %d: %q: add --no-install-recommends", in.Line, seg))
					}
				}
				if len(installs) > 0 && !slices.ContainsFunc(segments(in.text()), aptRmRE.MatchString) {
					p = append(p, fmt.Sprintf("line %d: a RUN with apt-get install must also rm -rf /var/lib/apt/lists/* (in the same RUN, or the lists stay in a layer)", in.Line))
				}
			}
		}
		return p
	}},
	{"no-add-url", func(d *dockerfile) []string {
		var p []string
		for _, s := range d.Stages {
			for _, in := range s.Insts {
				if in.Cmd != "ADD" {
					continue
				}
				w := in.words()
				for _, src := range w[:max(len(w)-1, 0)] {
					if urlRE.MatchString(src) {
						p = append(p, fmt.Sprintf("%s: ADD fetches %s: download in a RUN with a checksum (or COPY from a stage) instead", in, src))
					}
				}
			}
		}
		return p
	}},
	{"no-sudo", func(d *dockerfile) []string {
		var p []string
		for _, s := range d.Stages {
			for _, in := range s.Insts {
				switch in.Cmd {
				case "RUN", "CMD", "ENTRYPOINT", "SHELL", "HEALTHCHECK":
					if sudoRE.MatchString(in.text()) {
						p = append(p, fmt.Sprintf("%s: no sudo: switch USER instead (and never install sudo)", in))
					}
				}
			}
		}
		return p
	}},
	{"browser-stage", func(d *dockerfile) []string {
		b := d.stage("browser")
		if b == nil {
			return []string{"no stage named browser (the --target with Chromium for the browser tools)"}
		}
		for _, in := range b.Insts {
			if in.Cmd != "RUN" {
				continue
			}
			for _, seg := range aptInstalls(in) {
				if slices.Contains(strings.Fields(seg), "chromium") {
					return nil
				}
			}
		}
		return []string{fmt.Sprintf("%s (line %d) does not apt-get install chromium", b.label(), b.From.Line)}
	}},
}

// lint runs every rule: rule name → problems (only the failing rules).
func lint(d *dockerfile) map[string][]string {
	out := map[string][]string{}
	for _, r := range rules {
		if p := r.check(d); len(p) > 0 {
			out[r.name] = p
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// The tests.

func TestDockerfile(t *testing.T) {
	src, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	d, err := parseDockerfile(string(src))
	if err != nil {
		t.Fatalf("sandbox/Dockerfile does not parse: %v", err)
	}
	if got := d.Directives["syntax"]; !strings.HasPrefix(got, "docker/dockerfile:") {
		t.Errorf("sandbox/Dockerfile: want a `# syntax=docker/dockerfile:1.x` directive on the first line (cache mounts need it), got %q", got)
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			for _, p := range r.check(d) {
				t.Errorf("sandbox/Dockerfile: %s", p)
			}
		})
	}
	// What the other parts of ACS rely on.
	if b := d.stage("base"); b == nil || d.final().Parent != b {
		t.Errorf("the final (default) stage must be FROM base, so `docker build` without --target gives the slim image")
	}
	if c := d.final().last("CMD"); c == nil || !slices.Equal(c.Exec, []string{"-port", "8000"}) {
		t.Errorf("the final stage's CMD must be [\"-port\", \"8000\"], got %v", c)
	}
}

// good passes every rule; the bad cases below each break it in one place.
const good = `# syntax=docker/dockerfile:1.7
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm AS build
RUN --mount=type=cache,target=/go/pkg/mod \
    go build -o /out/acs ./cmd/acs

FROM debian:bookworm-20251117-slim AS base
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/acs /usr/local/bin/acs
USER 10001:10001
EXPOSE 8000
HEALTHCHECK --interval=30s \
  CMD ["/bin/bash", "-c", "echo GET /alive"]
ENTRYPOINT ["/usr/local/bin/acs", "agent-server"]
CMD ["-port", "8000"]

FROM base AS browser
USER root
RUN apt-get update && apt-get install -y --no-install-recommends chromium && rm -rf /var/lib/apt/lists/*
USER 10001

FROM base AS final
`

func TestRulesPassGood(t *testing.T) {
	d, err := parseDockerfile(good)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range lint(d) {
		t.Errorf("rule %s fails the good Dockerfile: %v", name, p)
	}
	// Variants that must pass too.
	for _, v := range []struct{ old, new string }{
		{"debian:bookworm-20251117-slim", "debian@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{"debian:bookworm-20251117-slim", "registry.example:5000/team/debian:12.8-slim"},
		{"# syntax=docker/dockerfile:1.7\n", "# syntax=docker/dockerfile:1.7\nARG DEBIAN=debian:bookworm-20251117-slim\n"},
		{"EXPOSE 8000", "EXPOSE 8000/tcp 9000"},
		{"USER 10001:10001", "USER 10001"},
		{"FROM base AS final\n", "FROM base AS final\nUSER 0\nRUN true\nUSER 10001\n"},
	} {
		src := strings.Replace(good, v.old, v.new, 1)
		if src == good {
			t.Fatalf("variant %q → %q changes nothing", v.old, v.new)
		}
		d, err := parseDockerfile(src)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range lint(d) {
			t.Errorf("variant %q → %q: rule %s fails: %v", v.old, v.new, name, p)
		}
	}
}

func TestRulesCatchBadDockerfiles(t *testing.T) {
	const aptRun = "RUN apt-get update \\\n && apt-get install -y --no-install-recommends git \\\n && rm -rf /var/lib/apt/lists/*\n"
	cases := []struct {
		rule     string
		old, new string // good with old replaced by new; old "" means new is the whole file
		want     string // in a problem's text
	}{
		{"from-pinned", "debian:bookworm-20251117-slim", "debian:latest", "tag latest"},
		{"from-pinned", "debian:bookworm-20251117-slim", "debian", "has no tag"},
		{"from-pinned", "golang:1.26.8-bookworm", "golang", "golang has no tag"},
		{"from-pinned", "debian:bookworm-20251117-slim", "localhost:5000/debian", "has no tag"},
		{"from-pinned", "", "ARG IMG=debian:latest\n" + strings.Replace(good, "debian:bookworm-20251117-slim", "${IMG}", 1), "debian:latest uses the tag latest"},
		{"from-pinned", "debian:bookworm-20251117-slim", "${DEBIAN}", "variable without a default"},
		{"multi-stage", "", "FROM debian:12.8-slim\nUSER 10001\nEXPOSE 8000\nHEALTHCHECK CMD /alive\nENTRYPOINT [\"agent-server\"]\n", "want at least two"},
		{"non-root-user", "USER 10001:10001\n", "", "has no USER"},
		{"non-root-user", "USER 10001:10001\n", "USER acs\n", "numeric UID"},
		{"non-root-user", "USER 10001:10001\n", "USER 10001:acs\n", "numeric UID"},
		{"non-root-user", "USER 10001:10001\n", "USER 0:10001\n", "which is root"},
		{"non-root-user", "FROM base AS final\n", "FROM base AS final\nUSER root\n", `stage "final" runs as USER root`},
		{"non-root-user", "USER 10001\n\n", "\n", `stage "browser" runs as USER root`},
		{"entrypoint", `ENTRYPOINT ["/usr/local/bin/acs", "agent-server"]`, "ENTRYPOINT /usr/local/bin/acs agent-server", "exec (JSON) form"},
		{"entrypoint", `"agent-server"]`, `"serve"]`, "must end with agent-server"},
		{"entrypoint", `ENTRYPOINT ["/usr/local/bin/acs", "agent-server"]` + "\n", "", "no ENTRYPOINT"},
		{"entrypoint", `["/usr/local/bin/acs", "agent-server"]`, `["/usr/bin/tini", "--", "/usr/local/bin/acs", "agent-server"]`, "no init wrapper"},
		{"entrypoint", `["/usr/local/bin/acs", "agent-server"]`, `["/usr/bin/dumb-init", "/usr/local/bin/acs", "agent-server"]`, "no init wrapper"},
		{"entrypoint", `["/usr/local/bin/acs", "agent-server"]`, `["/bin/sh", "-c", "exec /usr/local/bin/acs agent-server"]`, "must end with agent-server"},
		{"entrypoint", `["/usr/local/bin/acs", "agent-server"]`, `["/bin/sh", "-c", "/usr/local/bin/acs \"$@\"", "agent-server"]`, "no init wrapper"},
		{"no-init-wrapper", "recommends git \\", "recommends git tini \\", "installs tini"},
		{"no-init-wrapper", "recommends chromium", "recommends chromium dumb-init", "installs dumb-init"},
		{"healthcheck", "HEALTHCHECK --interval=30s \\\n  CMD [\"/bin/bash\", \"-c\", \"echo GET /alive\"]\n", "", "no HEALTHCHECK"},
		{"healthcheck", "GET /alive", "GET /health", "must target /alive"},
		{"healthcheck", "FROM base AS final\n", "FROM base AS final\nHEALTHCHECK NONE\n", "disabled"},
		{"expose-8000", "EXPOSE 8000", "EXPOSE 8080", "does not EXPOSE 8000"},
		{"apt-hygiene", "-y --no-install-recommends git", "-y git", "add --no-install-recommends"},
		{"apt-hygiene", " \\\n && rm -rf /var/lib/apt/lists/*\nCOPY", "\nRUN rm -rf /var/lib/apt/lists/*\nCOPY", "same RUN"},
		{"apt-hygiene", "FROM base AS final\n", "FROM base AS final\nRUN <<EOF\napt-get install -y --no-install-recommends jq\nEOF\n", "same RUN"},
		{"no-add-url", "COPY --from", "ADD https://example.com/rg.tgz /tmp/\nCOPY --from", "ADD fetches https://example.com/rg.tgz"},
		{"no-add-url", "COPY --from", "ADD [\"git@github.com:x/y.git\", \"/src\"]\nCOPY --from", "ADD fetches git@github.com"},
		{"no-sudo", "USER 10001\n\n", "USER 10001\nRUN sudo chown 10001 /workspace\n\n", "no sudo"},
		{"no-sudo", "recommends git \\", "recommends git sudo \\", "no sudo"},
		{"browser-stage", "AS browser", "AS chrome", "no stage named browser"},
		{"browser-stage", "no-install-recommends chromium", "no-install-recommends firefox-esr", "does not apt-get install chromium"},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.rule] = true
		t.Run(c.rule+"/"+c.want, func(t *testing.T) {
			src := c.new
			if c.old != "" {
				if !strings.Contains(good, c.old) {
					t.Fatalf("the good Dockerfile has no %q", c.old)
				}
				src = strings.Replace(good, c.old, c.new, 1)
			}
			d, err := parseDockerfile(src)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			var r *rule
			for i := range rules {
				if rules[i].name == c.rule {
					r = &rules[i]
				}
			}
			if r == nil {
				t.Fatalf("no rule %q", c.rule)
			}
			p := r.check(d)
			if len(p) == 0 {
				t.Fatalf("rule %s passes a bad Dockerfile:\n%s", c.rule, src)
			}
			if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, c.want) }) {
				t.Errorf("rule %s: want a problem mentioning %q, got %q", c.rule, c.want, p)
			}
		})
	}
	for _, r := range rules {
		if !covered[r.name] {
			t.Errorf("rule %s has no bad Dockerfile that makes it fail", r.name)
		}
	}
}

func TestParser(t *testing.T) {
	t.Run("directives-escape-continuations-comments", func(t *testing.T) {
		src := "# syntax=docker/dockerfile:1.7\n# escape=`\n\n# a comment=not a directive\nfrom --platform=linux/arm64 img:1 as Build\nRUN echo a `  \n# a comment inside the continuation\n\n    && echo b\\\nENV X=1\n"
		d, err := parseDockerfile(src)
		if err != nil {
			t.Fatal(err)
		}
		if d.Directives["syntax"] != "docker/dockerfile:1.7" || d.Directives["escape"] != "`" || len(d.Directives) != 2 {
			t.Errorf("directives: %v", d.Directives)
		}
		s := d.Stages[0]
		if s.Name != "build" || s.Image != "img:1" || s.Platform != "linux/arm64" || s.From.Line != 5 {
			t.Errorf("stage: %+v", s)
		}
		if len(s.Insts) != 2 {
			t.Fatalf("want RUN and ENV, got %v", s.Insts)
		}
		run := s.Insts[0]
		if run.Cmd != "RUN" || run.Line != 6 || !slices.Equal(strings.Fields(run.Args), []string{"echo", "a", "&&", "echo", `b\`}) || run.Exec != nil {
			t.Errorf("run: %+v", run)
		}
	})
	t.Run("directives-only-at-the-top", func(t *testing.T) {
		d, err := parseDockerfile("# hello\n# escape=`\nFROM a:1\nRUN x \\\n y\n")
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Directives) != 0 || d.Stages[0].Insts[0].Args != "x  y" {
			t.Errorf("directives %v, RUN %q", d.Directives, d.Stages[0].Insts[0].Args)
		}
	})
	t.Run("exec-and-shell-form", func(t *testing.T) {
		d, err := parseDockerfile("FROM a:1\nCMD [\"a\", \"b c\"]\nENTRYPOINT [not json\nRUN a b\nHEALTHCHECK --timeout=3s CMD [\"x\"]\nHEALTHCHECK none\nEXPOSE [\"8000\"]\n")
		if err != nil {
			t.Fatal(err)
		}
		in := d.Stages[0].Insts
		if !slices.Equal(in[0].Exec, []string{"a", "b c"}) {
			t.Errorf("CMD exec form: %+v", in[0])
		}
		if in[1].Exec != nil || in[1].Args != "[not json" {
			t.Errorf("invalid JSON falls back to the shell form: %+v", in[1])
		}
		if in[2].Exec != nil || in[2].Args != "a b" {
			t.Errorf("RUN shell form: %+v", in[2])
		}
		if in[3].Sub != "CMD" || !slices.Equal(in[3].Exec, []string{"x"}) || in[3].Flags["timeout"][0] != "3s" {
			t.Errorf("HEALTHCHECK: %+v", in[3])
		}
		if in[4].Sub != "NONE" {
			t.Errorf("HEALTHCHECK NONE: %+v", in[4])
		}
		if in[5].Exec != nil {
			t.Errorf("EXPOSE has no exec form: %+v", in[5])
		}
	})
	t.Run("heredocs", func(t *testing.T) {
		d, err := parseDockerfile("FROM a:1\nRUN <<EOF\napt-get install x\nEOF\nCOPY <<-\"A\" /a\n\thello\n\tA\nRUN cat <<<word\nUSER 1\n")
		if err != nil {
			t.Fatal(err)
		}
		in := d.Stages[0].Insts
		if len(in) != 4 || !slices.Equal(in[0].Heredocs, []string{"apt-get install x"}) || !slices.Equal(in[1].Heredocs, []string{"hello"}) || in[2].Heredocs != nil || in[3].Cmd != "USER" {
			t.Errorf("instructions: %+v", in)
		}
	})
	t.Run("stages-inherit", func(t *testing.T) {
		d, err := parseDockerfile("ARG V=1.2\nFROM a:${V} AS one\nUSER 5\nFROM one AS two\nFROM b:${W:-3}\n")
		if err != nil {
			t.Fatal(err)
		}
		if d.Stages[0].Image != "a:1.2" || d.Stages[2].Image != "b:3" {
			t.Errorf("ARG expansion: %q %q", d.Stages[0].Image, d.Stages[2].Image)
		}
		if d.Stages[1].Parent != d.Stages[0] || d.Stages[1].last("USER").Args != "5" || d.Stages[2].last("USER") != nil {
			t.Errorf("inheritance: %+v", d.Stages)
		}
	})
	for _, bad := range []struct{ src, want string }{
		{"RUN x\n", "before the first FROM"},
		{"# just a comment\n", "no FROM"},
		{"FROM a b\n", "FROM wants"},
		{"FROM a:1 AS x\nFROM b:1 AS X\n", "second stage"},
		{"FROM a:1\nRUN <<EOF\nnever ends\n", "not terminated"},
		{"FROM a:1\nHEALTHCHECK --interval=1s curl x\n", "CMD or NONE"},
		{"# escape=x\nFROM a:1\n", "escape directive"},
	} {
		if _, err := parseDockerfile(bad.src); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("parse %q: want an error mentioning %q, got %v", bad.src, bad.want, err)
		}
	}
}
