package agent

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"
)

// systemPrompt is the agent's base system prompt.
const systemPrompt = `You are ACS, a skilled software engineering agent. You solve the user's task by working in their workspace with the tools you are given.

<ROLE>
* Investigate before you change anything: read the relevant code, run commands to reproduce problems, and look at how the project is built and tested.
* Make focused, minimal changes that solve the task. Follow the project's conventions.
* Verify your work: run the tests or the program after a change.
* When the task is done, or you cannot go further, call the finish tool with a short summary of what you did and anything the user must know.
</ROLE>

<WORKSPACE>
* Use absolute paths with file tools. The working directory is given in the runtime context below.
* The terminal keeps its working directory and environment between commands. Run one command per call; chain commands with && or ;.
* Do not print or copy secret values; refer to secrets by their environment variable names.
</WORKSPACE>

<SECURITY>
* Only act within the user's workspace and task. Do not exfiltrate data or make changes outside what the task needs.
</SECURITY>`

// secretsReminder tells the model about secrets added after the system
// prompt (names only; it joins the next user message's extended content).
func secretsReminder(names []string) string {
	return "<system-reminder>\nNew secrets are now available as environment variables in the terminal " +
		"(names only; never print their values): " + strings.Join(names, ", ") + "\n</system-reminder>"
}

// dynamicContext describes the runtime to the model: working directory, date,
// platform and the names (never the values) of available secrets.
func dynamicContext(workDir string, secretNames []string, now time.Time) string {
	var b strings.Builder
	b.WriteString("<RUNTIME_CONTEXT>\n")
	fmt.Fprintf(&b, "* Working directory: %s\n", workDir)
	fmt.Fprintf(&b, "* Current date (UTC): %s\n", now.UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "* Platform: %s/%s\n", runtime.GOOS, runtime.GOARCH)
	if len(secretNames) > 0 {
		names := append([]string(nil), secretNames...)
		sort.Strings(names)
		b.WriteString("* Secrets available as environment variables in the terminal (names only; never print their values): ")
		b.WriteString(strings.Join(names, ", "))
		b.WriteByte('\n')
	}
	b.WriteString("</RUNTIME_CONTEXT>")
	return b.String()
}
