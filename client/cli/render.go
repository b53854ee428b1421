package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/acs-project/acs/events"
)

// ANSI styles (used only when colors are on).
const (
	styleReset  = "\x1b[0m"
	styleBold   = "\x1b[1m"
	styleDim    = "\x1b[2m"
	styleRed    = "\x1b[31m"
	styleGreen  = "\x1b[32m"
	styleYellow = "\x1b[33m"
	styleBlue   = "\x1b[34m"
	styleCyan   = "\x1b[36m"
)

// maxOutputLines bounds the lines of one observation's output shown.
const maxOutputLines = 40

// Renderer writes conversation events as a person reads them: user and
// agent messages, each command with its output, file edits as unified
// diffs, errors and execution status changes. Events without a reader
// (system prompt, tokens, LLM logs, condensations) are left out.
type Renderer struct {
	w     io.Writer
	color bool
	// Status is the last execution status seen ("" before any).
	Status string
}

// NewRenderer returns a renderer writing to w, with ANSI colors if color.
func NewRenderer(w io.Writer, color bool) *Renderer { return &Renderer{w: w, color: color} }

func (r *Renderer) style(s, text string) string {
	if !r.color || text == "" {
		return text
	}
	return s + text + styleReset
}

func (r *Renderer) printf(format string, args ...any) { fmt.Fprintf(r.w, format, args...) }

// block writes text indented, at most maxOutputLines lines of it.
func (r *Renderer) block(text, style string) {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return
	}
	lines := strings.Split(text, "\n")
	more := 0
	if len(lines) > maxOutputLines {
		more = len(lines) - maxOutputLines
		lines = lines[:maxOutputLines]
	}
	for _, l := range lines {
		r.printf("  %s\n", r.style(style, l))
	}
	if more > 0 {
		r.printf("  %s\n", r.style(styleDim, fmt.Sprintf("… %d more lines", more)))
	}
}

// Render writes one event.
func (r *Renderer) Render(ev events.Event) {
	switch e := ev.(type) {
	case *events.MessageEvent:
		who := string(e.Source)
		if who == "" {
			who = string(e.LLMMessage.Role)
		}
		style := styleBlue
		if who == "agent" {
			style = styleGreen
		}
		r.printf("%s %s\n", r.style(styleBold+style, who+":"), firstLineRest(e.LLMMessage.Text()))
	case *events.ActionEvent:
		r.action(e)
	case *events.ObservationEvent:
		r.observation(e)
	case *events.AgentErrorEvent:
		r.printf("%s %s: %s\n", r.style(styleRed+styleBold, "error:"), e.ToolName, e.Error)
	case *events.ConversationErrorEvent:
		r.printf("%s %s: %s\n", r.style(styleRed+styleBold, "conversation error:"), e.Code, e.Detail)
	case *events.UserRejectObservation:
		r.printf("%s %s (%s)\n", r.style(styleYellow, "rejected:"), e.RejectionReason, e.RejectionSource)
	case *events.PauseEvent:
		r.printf("%s\n", r.style(styleYellow, "— paused by the user"))
	case *events.ConversationStateUpdateEvent:
		if st := StatusOf(e); st != "" && st != r.Status {
			r.Status = st
			style := styleDim
			switch st {
			case "error", "stuck":
				style = styleRed
			case "waiting_for_confirmation":
				style = styleYellow
			}
			r.printf("%s\n", r.style(style, "— "+st))
		}
	}
}

// firstLineRest keeps a multi-line message readable: its first line after
// the speaker, the rest indented below.
func firstLineRest(text string) string {
	text = strings.TrimRight(text, "\n")
	first, rest, ok := strings.Cut(text, "\n")
	if !ok {
		return first
	}
	return first + "\n" + indent(rest, "  ")
}

// StatusOf is the execution status an event reports: the value of an
// execution_status update, or the execution_status of a full_state
// snapshot ("" for any other event).
func StatusOf(ev events.Event) string {
	e, ok := ev.(*events.ConversationStateUpdateEvent)
	if !ok {
		return ""
	}
	var s string
	switch e.Key {
	case "execution_status":
		_ = json.Unmarshal(e.Value, &s)
	case "full_state":
		var st struct {
			ExecutionStatus string `json:"execution_status"`
		}
		_ = json.Unmarshal(e.Value, &st)
		s = st.ExecutionStatus
	}
	return s
}

func (r *Renderer) action(e *events.ActionEvent) {
	var thought []string
	for _, t := range e.Thought {
		if s := strings.TrimSpace(t.Text); s != "" {
			thought = append(thought, s)
		}
	}
	if len(thought) > 0 {
		r.printf("%s %s\n", r.style(styleBold+styleGreen, "agent:"), firstLineRest(strings.Join(thought, "\n")))
	}
	switch a := e.Action.(type) {
	case *events.TerminalAction:
		r.printf("%s %s\n", r.style(styleBold+styleCyan, "agent $"), firstLineRest(a.Command))
	case *events.FileEditorAction:
		r.printf("%s %s %s\n", r.style(styleCyan, "edit:"), a.Command, a.Path)
	case *events.PlanningFileEditorAction:
		r.printf("%s %s %s\n", r.style(styleCyan, "plan:"), a.Command, a.Path)
	case *events.FinishAction:
		r.printf("%s %s\n", r.style(styleBold+styleGreen, "agent (done):"), firstLineRest(a.Message))
	case *events.ThinkAction:
		r.printf("%s %s\n", r.style(styleDim, "thinking:"), firstLineRest(a.Thought))
	default:
		args := strings.TrimSpace(e.ToolCall.Arguments)
		if len(args) > 300 {
			args = args[:300] + "…"
		}
		r.printf("%s %s %s\n", r.style(styleCyan, "tool:"), e.ToolName, args)
	}
}

func (r *Renderer) observation(e *events.ObservationEvent) {
	o := e.Observation
	base := o.Common()
	switch ob := o.(type) {
	case *events.TerminalObservation:
		text := base.Text()
		r.block(text, "")
		if ob.ExitCode != nil && *ob.ExitCode != 0 && !strings.Contains(text, "exit code") {
			r.printf("  %s\n", r.style(styleRed, fmt.Sprintf("[exit %d]", *ob.ExitCode)))
		}
		if ob.Timeout {
			r.printf("  %s\n", r.style(styleYellow, "[timed out: still running]"))
		}
		return
	case *events.FileEditorObservation:
		if r.fileDiff(&ob.FileEditorResult, base) {
			return
		}
	case *events.PlanningFileEditorObservation:
		if r.fileDiff(&ob.FileEditorResult, base) {
			return
		}
	case *events.FinishObservation, *events.ThinkObservation:
		return // the action said it all
	}
	style := styleDim
	if base.IsError {
		style = styleRed
	}
	r.block(base.Text(), style)
}

// fileDiff writes a file edit as a unified diff; false when the result is
// no edit (a view, an error).
func (r *Renderer) fileDiff(res *events.FileEditorResult, base *events.ObservationBase) bool {
	if base.IsError || res.Command == events.EditorView || res.NewContent == nil {
		return false
	}
	old := ""
	if res.OldContent != nil {
		old = *res.OldContent
	}
	path := ""
	if res.Path != nil {
		path = *res.Path
	}
	from := "a" + path
	if !res.PrevExist || res.OldContent == nil {
		from = "/dev/null"
	}
	r.diff(UnifiedDiff(from, "b"+path, old, *res.NewContent))
	return true
}

// diff writes a unified diff, colored by line.
func (r *Renderer) diff(d string) {
	for _, l := range strings.Split(strings.TrimRight(d, "\n"), "\n") {
		style := ""
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			style = styleBold
		case strings.HasPrefix(l, "+"):
			style = styleGreen
		case strings.HasPrefix(l, "-"):
			style = styleRed
		case strings.HasPrefix(l, "@@"):
			style = styleCyan
		}
		r.printf("  %s\n", r.style(style, l))
	}
}
