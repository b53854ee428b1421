package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/v1wire"
)

func init() {
	register(command{"start", "start a conversation, show its start live, then follow it", runStart})
	register(command{"send", "send a message to a conversation", runSend})
	register(command{"ls", "list your conversations", runList})
	register(command{"search", "list the conversations whose title contains a text", runSearch})
	register(command{"show", "show one conversation", runShow})
	register(command{"diff", "show the Git changes of a conversation's workspace", runDiff})
	register(command{"download", "download a conversation (its trajectory, as a zip)", runDownload})
	register(command{"pause", "pause a conversation's agent", runPause})
	register(command{"resume", "resume a conversation (its sandbox, then its paused agent)", runResume})
	register(command{"delete", "delete a conversation", runDelete})
}

// printJSON writes v as indented JSON (the servers' own encoding for their
// types).
func (a *app) printJSON(v any) error {
	b, err := strictjson.Marshal(v)
	if err != nil {
		if b, err = json.Marshal(v); err != nil {
			return fmt.Errorf("encode the output: %w", err)
		}
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return fmt.Errorf("encode the output: %w", err)
	}
	out.WriteByte('\n')
	_, err = a.io.Stdout.Write(out.Bytes())
	return err
}

// printJSONLine writes v as one line of JSON.
func (a *app) printJSONLine(v any) error {
	b, err := strictjson.Marshal(v)
	if err != nil {
		if b, err = json.Marshal(v); err != nil {
			return fmt.Errorf("encode the output: %w", err)
		}
	}
	_, err = a.io.Stdout.Write(append(b, '\n'))
	return err
}

// secretFlags collects repeated --secret NAME=VALUE.
type secretFlags map[string]string

func (s secretFlags) String() string { return "" }

func (s secretFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", v)
	}
	s[name] = value
	return nil
}

func textMessage(text string, run bool) *agentwire.SendMessageRequest {
	return &agentwire.SendMessageRequest{Role: events.RoleUser, Content: []events.Content{events.TextItem(text)}, Run: run}
}

func runStart(ctx context.Context, a *app, args []string) error {
	fs := a.flags("start", `start "message" [--repo org/repo [--branch b]] [--sandbox id] [--secret NAME=VALUE]... [--no-run] [--detach]`,
		"Starts a conversation with the message and shows its start live, step by step (WORKING → … → READY,\n"+
			"each step with its time, and where the conversation was placed), or the error detail when the start\n"+
			"fails; then follows the conversation like \"acs watch\" until its agent is done. Secrets are sent\n"+
			"once, to this conversation's sandbox, and never printed.",
		`acs start "Add a README section on testing" --repo acme/api --branch main
acs start "Run the tests" --sandbox sb-1234 --secret NPM_TOKEN="$NPM_TOKEN" --detach`)
	repo := fs.String("repo", "", "the repository to work on, org/repo")
	branch := fs.String("branch", "", "the branch to check out (with --repo)")
	sandbox := fs.String("sandbox", "", "start in this sandbox (instead of the grouping strategy's choice)")
	title := fs.String("title", "", "the conversation's title")
	model := fs.String("model", "", "the LLM model (instead of your settings')")
	secrets := secretFlags{}
	fs.Var(secrets, "secret", "a secret for the sandbox's environment, NAME=VALUE (repeatable)")
	noRun := fs.Bool("no-run", false, "deliver the message without running the agent (and do not follow)")
	detach := fs.Bool("detach", false, "return once the conversation is READY, without following it")
	pos, err := a.parse(fs, args, 0, 1)
	if err != nil {
		return err
	}
	if *branch != "" && *repo == "" {
		return &usageError{cmd: "start", msg: "--branch needs --repo"}
	}
	if err := a.connect(); err != nil {
		return err
	}
	req := &v1wire.StartRequest{}
	if len(pos) == 1 && strings.TrimSpace(pos[0]) != "" {
		req.InitialMessage = textMessage(pos[0], !*noRun)
	}
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	req.SelectedRepository, req.SelectedBranch, req.SandboxID = opt(*repo), opt(*branch), opt(*sandbox)
	req.Title, req.LLMModel = opt(*title), opt(*model)
	if len(secrets) > 0 {
		req.Secrets = secrets
	}
	task, err := a.c.StartConversation(ctx, req)
	if err != nil {
		return err
	}
	// The task is polled soon, then less often: a start on a running
	// sandbox is READY within tens of milliseconds, a new one takes
	// longer. (stream-start would answer each status as it is stored, but
	// behind a proxy that buffers responses, as API Gateway does, it shows
	// nothing until the end.)
	p := &stepPrinter{a: a, started: time.Now()}
	for delay := startPollFirst; ; delay = min(2*delay, startPollEvery) {
		p.update(task)
		if task.Status == "READY" || task.Status == "ERROR" {
			break
		}
		if err := sleep(ctx, delay); err != nil {
			p.clear()
			return err
		}
		ts, err := a.c.GetStartTasks(ctx, task.ID)
		if err != nil {
			p.clear()
			return err
		}
		if len(ts) != 1 || ts[0] == nil {
			p.clear()
			return fmt.Errorf("start task %s disappeared", task.ID)
		}
		task = *ts[0]
	}
	if a.json {
		if err := a.printJSONLine(task); err != nil {
			return err
		}
	}
	if task.Status == "ERROR" {
		detail := "no detail"
		if task.Detail != nil {
			detail = *task.Detail
		}
		return fmt.Errorf("start failed: %s", detail)
	}
	if task.AppConversationID == nil {
		return fmt.Errorf("start task %s is READY without a conversation", task.ID)
	}
	if *noRun || *detach || req.InitialMessage == nil {
		if !a.json {
			fmt.Fprintf(a.io.Stdout, "Follow it with: acs watch %s\n", *task.AppConversationID)
		}
		return nil
	}
	return a.follow(ctx, *task.AppConversationID)
}

// startPollFirst is the first interval at which acs start polls its start
// task; each next one doubles, up to startPollEvery (which also paces the
// redrawing of the step in progress).
const (
	startPollFirst = 20 * time.Millisecond
	startPollEvery = 250 * time.Millisecond
)

// stepPrinter shows a start task's steps: each as it completes, with its
// duration; on a terminal, the step in progress on a line redrawn in
// place.
type stepPrinter struct {
	a       *app
	started time.Time
	printed int  // steps written
	header  bool // the first line is written
	drawn   bool // a progress line is on screen
	spin    int
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (p *stepPrinter) clear() {
	if p.drawn {
		fmt.Fprint(p.a.io.Stdout, "\r\x1b[K")
		p.drawn = false
	}
}

func (p *stepPrinter) update(t v1wire.StartTask) {
	if p.a.json {
		return
	}
	w := p.a.io.Stdout
	if !p.header {
		p.header = true
		fmt.Fprintf(w, "Starting (task %s)\n", t.ID)
	}
	done := t.Status == "READY" || t.Status == "ERROR"
	steps := t.Steps
	for ; p.printed < len(steps); p.printed++ {
		i := p.printed
		last := i == len(steps)-1
		if last && !done {
			break
		}
		p.clear()
		st := steps[i]
		mark, style, took := "✓", styleGreen, ""
		if !last {
			took = fmtDuration(steps[i+1].StartedAt.Sub(st.StartedAt.Time))
		}
		if last {
			took = "total " + fmtDuration(st.StartedAt.Sub(t.CreatedAt.Time))
			if st.Status == "ERROR" {
				mark, style = "✗", styleRed
			}
		}
		line := fmt.Sprintf("  %s %-22s %8s", p.a.paint(style, mark), st.Status, took)
		if st.Detail != nil && *st.Detail != "" {
			line += "  " + oneLine(*st.Detail)
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	if done {
		p.clear()
		if t.Status == "READY" {
			conv, sb := "", ""
			if t.AppConversationID != nil {
				conv = *t.AppConversationID
			}
			if t.SandboxID != nil {
				sb = *t.SandboxID
			}
			fmt.Fprintf(w, "Conversation %s is READY in sandbox %s\n", conv, sb)
			if t.Placement != nil && *t.Placement != "" {
				fmt.Fprintf(w, "Placement: %s\n", *t.Placement)
			}
		}
		return
	}
	if p.a.io.StdoutTTY && len(steps) > 0 {
		cur := steps[len(steps)-1]
		p.spin++
		fmt.Fprintf(w, "\r\x1b[K  %s %-22s %8s", p.a.paint(styleCyan, spinner[p.spin%len(spinner)]), cur.Status,
			fmtDuration(time.Since(cur.StartedAt.Time)))
		p.drawn = true
	}
}

func fmtDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

func runSend(ctx context.Context, a *app, args []string) error {
	fs := a.flags("send", `send <conversation-id> "message" [--no-run] [--watch]`,
		"Sends a message to the conversation (resuming its sandbox first when paused) and runs the agent on it.",
		`acs send 6f1c0e9a2b3d4c5e8f7a6b5c4d3e2f1a "Now add a test for it" --watch`)
	noRun := fs.Bool("no-run", false, "deliver the message without running the agent")
	watch := fs.Bool("watch", false, "then follow the conversation like \"acs watch\"")
	pos, err := a.parse(fs, args, 2, 2)
	if err != nil {
		return err
	}
	if strings.TrimSpace(pos[1]) == "" {
		return &usageError{cmd: "send", msg: "the message is empty"}
	}
	if err := a.connect(); err != nil {
		return err
	}
	m := textMessage(pos[1], !*noRun)
	var before map[string]bool // the events not to show again
	if *watch {
		if before, err = a.eventIDs(ctx, pos[0]); err != nil {
			return err
		}
	}
	res, err := a.c.SendMessage(ctx, pos[0], &v1wire.SendMessageRequest{Role: m.Role, Content: m.Content, Run: m.Run})
	if err != nil {
		return err
	}
	if a.json {
		if err := a.printJSONLine(res); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.io.Stdout, "Sent to %s (sandbox %s).\n", pos[0], res.SandboxStatus)
	}
	if *watch && !*noRun {
		return a.followFrom(ctx, pos[0], before)
	}
	return nil
}

func runList(ctx context.Context, a *app, args []string) error {
	return listConversations(ctx, a, "ls", args, false)
}

func runSearch(ctx context.Context, a *app, args []string) error {
	return listConversations(ctx, a, "search", args, true)
}

func listConversations(ctx context.Context, a *app, name string, args []string, query bool) error {
	usage, desc, example := "ls [--limit N]", "Lists your conversations, newest first.", "acs ls\nacs ls --json | jq -r '.[].id'"
	minArgs := 0
	if query {
		usage, desc, example = "search <text> [--limit N]", "Lists your conversations whose title contains the text.", `acs search "README"`
		minArgs = 1
	}
	fs := a.flags(name, usage, desc, example)
	limit := fs.Int("limit", 50, "list at most this many")
	pos, err := a.parse(fs, args, minArgs, minArgs)
	if err != nil {
		return err
	}
	if *limit < 1 {
		return &usageError{cmd: name, msg: "--limit must be at least 1"}
	}
	if err := a.connect(); err != nil {
		return err
	}
	f := client.Filter{"limit": {strconv.Itoa(min(*limit, 100))}}
	if query {
		f.Set("title__contains", pos[0])
	}
	list := []v1wire.Conversation{}
	for c, err := range a.c.Conversations(ctx, f) {
		if err != nil {
			return err
		}
		list = append(list, c)
		if len(list) >= *limit {
			break
		}
	}
	if a.json {
		return a.printJSON(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(a.io.Stdout, "No conversations.")
		return nil
	}
	tw := tabwriter.NewWriter(a.io.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTITLE\tSTATUS\tSANDBOX\tREPO\tMODEL\tUPDATED")
	for _, c := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, trunc(or(c.Title, "-"), 40), convStatus(c), c.SandboxID,
			or(c.SelectedRepository, "-"), or(c.LLMModel, "-"), ago(c.UpdatedAt.Time))
	}
	return tw.Flush()
}

func or(s *string, def string) string {
	if s == nil || *s == "" {
		return def
	}
	return *s
}

func trunc(s string, n int) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// convStatus is "SANDBOX_STATUS/execution_status".
func convStatus(c v1wire.Conversation) string {
	if c.ExecutionStatus == nil || *c.ExecutionStatus == "" {
		return c.SandboxStatus
	}
	return c.SandboxStatus + "/" + *c.ExecutionStatus
}

// ago is how long ago t was, roughly.
func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case t.IsZero():
		return "-"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02")
}

func runShow(ctx context.Context, a *app, args []string) error {
	fs := a.flags("show", "show <conversation-id>", "Shows a conversation: its title, status, sandbox, repository, model and times.",
		"acs show 6f1c0e9a2b3d4c5e8f7a6b5c4d3e2f1a\nacs show 6f1c0e9a2b3d4c5e8f7a6b5c4d3e2f1a --json | jq -r .execution_status")
	pos, err := a.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := a.connect(); err != nil {
		return err
	}
	c, err := a.c.GetConversation(ctx, pos[0])
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(c)
	}
	tw := tabwriter.NewWriter(a.io.Stdout, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("ID", c.ID)
	row("Title", or(c.Title, "-"))
	row("Status", convStatus(c))
	row("Sandbox", c.SandboxID)
	repo := or(c.SelectedRepository, "-")
	if c.SelectedBranch != nil {
		repo += " @ " + *c.SelectedBranch
	}
	row("Repository", repo)
	row("Model", or(c.LLMModel, "-"))
	row("Agent", c.AgentKind)
	row("Created", c.CreatedAt.Local().Format(time.DateTime))
	row("Updated", c.UpdatedAt.Local().Format(time.DateTime)+" ("+ago(c.UpdatedAt.Time)+")")
	if c.ConversationURL != nil {
		row("Agent server", *c.ConversationURL)
	}
	if c.ParentConversationID != nil {
		row("Parent", *c.ParentConversationID)
	}
	return tw.Flush()
}

// fileDiff is one changed file with its diff.
type fileDiff struct {
	Status   string  `json:"status"`
	Path     string  `json:"path"`
	Original *string `json:"original"`
	Modified *string `json:"modified"`
	Diff     string  `json:"diff"`
}

func runDiff(ctx context.Context, a *app, args []string) error {
	fs := a.flags("diff", "diff <conversation-id> [--path dir]",
		"Shows the Git changes of the conversation's workspace: each changed file and its unified diff.\n"+
			"--json gives each file's status, path, original and modified content, and diff.",
		"acs diff 6f1c0e9a2b3d4c5e8f7a6b5c4d3e2f1a")
	path := fs.String("path", "", "the repository's directory (default: the project directory)")
	stat := fs.Bool("stat", false, "list the changed files only")
	pos, err := a.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := a.connect(); err != nil {
		return err
	}
	changes, err := a.c.GitChanges(ctx, pos[0], *path)
	if err != nil {
		return err
	}
	out := []fileDiff{}
	for _, ch := range changes {
		fd := fileDiff{Status: ch.Status, Path: ch.Path}
		if !*stat {
			p := ch.Path
			if *path != "" {
				p = strings.TrimRight(*path, "/") + "/" + ch.Path
			}
			d, err := a.c.GitDiff(ctx, pos[0], p)
			if err != nil {
				return fmt.Errorf("diff %s: %w", ch.Path, err)
			}
			fd.Original, fd.Modified = d.Original, d.Modified
			from, to := "a/"+ch.Path, "b/"+ch.Path
			if d.Original == nil {
				from = "/dev/null"
			}
			if d.Modified == nil {
				to = "/dev/null"
			}
			fd.Diff = UnifiedDiff(from, to, deref(d.Original), deref(d.Modified))
		}
		out = append(out, fd)
	}
	if a.json {
		return a.printJSON(out)
	}
	if len(out) == 0 {
		fmt.Fprintln(a.io.Stdout, "No changes.")
		return nil
	}
	r := NewRenderer(a.io.Stdout, a.color)
	for _, fd := range out {
		fmt.Fprintf(a.io.Stdout, "%s %s\n", a.paint(styleBold, fd.Status), fd.Path)
		if fd.Diff != "" {
			r.diff(fd.Diff)
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func runDownload(ctx context.Context, a *app, args []string) error {
	fs := a.flags("download", "download <conversation-id> [-o file]",
		"Downloads the conversation as a zip archive (its metadata and every event: the trajectory).",
		"acs download 6f1c0e9a2b3d4c5e8f7a6b5c4d3e2f1a -o run.zip\nacs download 6f1c0e9a2b3d4c5e8f7a6b5c4d3e2f1a -o - | unzip -l /dev/stdin")
	outFile := fs.String("o", "", "write to this file (\"-\": stdout; default <id>.zip)")
	pos, err := a.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := a.connect(); err != nil {
		return err
	}
	b, err := a.c.DownloadConversation(ctx, pos[0])
	if err != nil {
		return err
	}
	if *outFile == "-" {
		_, err := a.io.Stdout.Write(b)
		return err
	}
	if *outFile == "" {
		*outFile = pos[0] + ".zip"
	}
	// A transcript can hold what the agent read and ran: readable by the
	// user only, as the saved login is.
	if err := os.WriteFile(*outFile, b, 0o600); err != nil {
		return fmt.Errorf("save the download: %w", err)
	}
	if a.json {
		return a.printJSON(map[string]any{"file": *outFile, "bytes": len(b)})
	}
	fmt.Fprintf(a.io.Stdout, "Saved %s (%d bytes).\n", *outFile, len(b))
	return nil
}

// agentOf is the agent server of a running conversation.
func (a *app) agentOf(ctx context.Context, id string) (v1wire.Conversation, *client.Agent, error) {
	c, err := a.c.GetConversation(ctx, id)
	if err != nil {
		return c, nil, err
	}
	if c.ConversationURL == nil || c.SessionAPIKey == nil {
		return c, nil, fmt.Errorf("conversation %s is not running: its sandbox %s is %s", id, c.SandboxID, c.SandboxStatus)
	}
	ag, err := client.AgentOf(c, a.httpOpts()...)
	return c, ag, err
}

func runPause(ctx context.Context, a *app, args []string) error {
	fs := a.flags("pause", "pause <conversation-id>",
		"Pauses the conversation's agent at its next step (its sandbox keeps running; \"acs sandboxes pause\"\n"+
			"stops the sandbox). Continue with \"acs resume\".",
		"acs pause 6f1c0e9a2b3d4c5e8f7a6b5c4d3e2f1a")
	pos, err := a.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := a.connect(); err != nil {
		return err
	}
	_, ag, err := a.agentOf(ctx, pos[0])
	if err != nil {
		return err
	}
	if err := ag.Pause(ctx, pos[0]); err != nil {
		return err
	}
	return a.done(map[string]any{"id": pos[0], "paused": true}, "Paused %s.", pos[0])
}

func runResume(ctx context.Context, a *app, args []string) error {
	fs := a.flags("resume", "resume <conversation-id>",
		"Resumes the conversation: its sandbox when paused, then its agent when paused.",
		"acs resume 6f1c0e9a2b3d4c5e8f7a6b5c4d3e2f1a")
	pos, err := a.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := a.connect(); err != nil {
		return err
	}
	id := pos[0]
	c, err := a.c.GetConversation(ctx, id)
	if err != nil {
		return err
	}
	if c.ConversationURL == nil {
		if err := a.c.ResumeSandbox(ctx, c.SandboxID); err != nil {
			return err
		}
		for c.ConversationURL == nil || c.SessionAPIKey == nil {
			if c.SandboxStatus == "ERROR" || c.SandboxStatus == "MISSING" {
				return fmt.Errorf("sandbox %s is %s", c.SandboxID, c.SandboxStatus)
			}
			if err := sleep(ctx, 500*time.Millisecond); err != nil {
				return err
			}
			if c, err = a.c.GetConversation(ctx, id); err != nil {
				return err
			}
		}
	}
	ag, err := client.AgentOf(c, a.httpOpts()...)
	if err != nil {
		return err
	}
	info, err := ag.GetConversation(ctx, id)
	if err != nil {
		return err
	}
	status := string(info.ExecutionStatus)
	if status == "paused" {
		if err := runPaused(ctx, ag, id); err != nil {
			return err
		}
		status = "running"
	}
	return a.done(map[string]any{"id": id, "sandbox_status": "RUNNING", "execution_status": status},
		"Resumed %s: sandbox RUNNING, agent %s.", id, status)
}

// runPaused runs the paused agent of conversation id. A pause takes
// effect after the step in flight: until that step ends, the agent server
// answers a run 409 (already running) though it reports the agent paused,
// so a resume right after a pause waits for the step, asking again (20 ms
// doubling to 1 s) while the agent is still reported paused.
func runPaused(ctx context.Context, ag *client.Agent, id string) error {
	wait := 20 * time.Millisecond
	for {
		err := ag.Run(ctx, id)
		if client.StatusOf(err) != http.StatusConflict {
			return err
		}
		info, ierr := ag.GetConversation(ctx, id)
		if ierr != nil || info.ExecutionStatus != "paused" {
			return err
		}
		if serr := sleep(ctx, wait); serr != nil {
			return serr
		}
		wait = min(2*wait, time.Second)
	}
}

func runDelete(ctx context.Context, a *app, args []string) error {
	fs := a.flags("delete", "delete <conversation-id>",
		"Deletes the conversation (and its sandbox when no other conversation uses it).",
		"acs delete 6f1c0e9a2b3d4c5e8f7a6b5c4d3e2f1a")
	pos, err := a.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := a.connect(); err != nil {
		return err
	}
	if err := a.c.DeleteConversation(ctx, pos[0]); err != nil {
		return err
	}
	return a.done(map[string]any{"id": pos[0], "deleted": true}, "Deleted %s.", pos[0])
}

// done reports a command's success: v with --json, the message otherwise.
func (a *app) done(v any, format string, args ...any) error {
	if a.json {
		return a.printJSON(v)
	}
	fmt.Fprintf(a.io.Stdout, format+"\n", args...)
	return nil
}
