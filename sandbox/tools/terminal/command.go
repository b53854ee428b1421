package terminal

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// splitCommands splits command into the top-level statements that are
// separated by newlines. Statements joined with ";", "&&", "||", "|" or "&"
// on one line stay together, and a newline that ends a here-document does not
// start a new statement (as in the reference implementation). When the
// command does not parse, it is returned whole: bash will report the error.
func splitCommands(command string) []string {
	if strings.TrimSpace(command) == "" {
		return []string{""}
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil || len(f.Stmts) < 2 {
		return []string{command}
	}
	var parts []string
	start := int(f.Stmts[0].Pos().Offset())
	for i := 1; i < len(f.Stmts); i++ {
		prev, next := f.Stmts[i-1], f.Stmts[i]
		end, nextStart := int(prev.End().Offset()), int(next.Pos().Offset())
		if end > nextStart || end > len(command) || nextStart > len(command) {
			continue
		}
		if strings.Contains(command[end:nextStart], "\n") && !hasHeredoc(prev) {
			parts = append(parts, strings.TrimRight(command[start:nextStart], " \t\n"))
			start = nextStart
		}
	}
	parts = append(parts, strings.TrimRight(command[start:], " \t\n"))
	return parts
}

func hasHeredoc(n syntax.Node) bool {
	found := false
	syntax.Walk(n, func(n syntax.Node) bool {
		if r, ok := n.(*syntax.Redirect); ok && (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) {
			found = true
		}
		return !found
	})
	return found
}

// looksLikeLiteral reports whether command starts like a JSON or Python
// literal (a list of objects or an object with quoted keys) rather than a
// shell command; models sometimes pass their tool arguments there.
func looksLikeLiteral(command string) bool {
	c := strings.TrimSpace(command)
	return strings.HasPrefix(c, "[{") || strings.HasPrefix(c, `{"`) || strings.HasPrefix(c, "{'")
}

const literalHint = "The command looks like a JSON/Python literal, not a shell command, so it was NOT executed. " +
	"Pass the shell command itself as the `command` string (for example `ls -la`), " +
	"not a JSON array or object; to write such data to a file use a heredoc, e.g. `cat > data.json <<'EOF' ... EOF`."

func multipleCommandsText(parts []string) string {
	var b strings.Builder
	b.WriteString("Cannot execute multiple commands at once.\n")
	b.WriteString("Please run each command separately OR chain them into a single command via && or ;\n")
	b.WriteString("Provided commands:")
	for i, p := range parts {
		fmt.Fprintf(&b, "\n(%d) %s", i+1, p)
	}
	return b.String()
}

// namedKeys maps the special key names accepted with is_input to the bytes an
// xterm-like terminal sends for them.
var namedKeys = map[string]string{
	"UP":        "\x1b[A",
	"DOWN":      "\x1b[B",
	"RIGHT":     "\x1b[C",
	"LEFT":      "\x1b[D",
	"HOME":      "\x1b[H",
	"END":       "\x1b[F",
	"PGUP":      "\x1b[5~",
	"PAGEUP":    "\x1b[5~",
	"PPAGE":     "\x1b[5~",
	"PGDN":      "\x1b[6~",
	"PAGEDOWN":  "\x1b[6~",
	"NPAGE":     "\x1b[6~",
	"TAB":       "\t",
	"ESC":       "\x1b",
	"ESCAPE":    "\x1b",
	"BS":        "\x7f",
	"BSPACE":    "\x7f",
	"BACKSPACE": "\x7f",
	"DEL":       "\x1b[3~",
	"DELETE":    "\x1b[3~",
	"ENTER":     "\r",
}

// specialKey returns the bytes for a special key name ("C-c", "UP", "TAB",
// ...) and whether input is one.
func specialKey(input string) (string, bool) {
	k := strings.TrimSpace(input)
	if len(k) == 3 && (k[0] == 'C' || k[0] == 'c') && k[1] == '-' {
		c := k[2]
		switch {
		case c >= 'a' && c <= 'z':
			return string(rune(c - 'a' + 1)), true
		case c >= 'A' && c <= 'Z':
			return string(rune(c - 'A' + 1)), true
		case c == '@' || c == ' ':
			return "\x00", true
		case c >= '[' && c <= '_':
			return string(rune(c & 0x1f)), true
		case c == '?':
			return "\x7f", true
		}
		return "", false
	}
	seq, ok := namedKeys[strings.ToUpper(k)]
	return seq, ok
}
