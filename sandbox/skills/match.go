package skills

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Activation is a skill activated by a trigger found in a message.
type Activation struct {
	Skill Skill
	// Trigger is the skill's trigger (as written in the skill) that matched.
	Trigger string
}

// isTokenRune reports whether r belongs to a token: letters, digits, '_' and
// '-'. Everything else separates tokens.
func isTokenRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-'
}

// tokenize lower-cases s and splits it into tokens.
func tokenize(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !isTokenRune(r) })
}

// Match returns the keyword-activated skills — type "knowledge", and
// "agentskills" skills that declare triggers — that are not named in
// activated and have a trigger occurring in text. Repo skills never match.
//
// Matching is case-insensitive and whole-token: text is split into tokens at
// every character that is not a letter, digit, '_' or '-', and a trigger
// made of such tokens (possibly several words) matches when its tokens occur
// consecutively in text. So "git" matches "Git.", "(git)" and "use git now"
// but not "github" or "git-lfs", and "pull request" matches "open a pull
// request." but not "pull requests". A trigger containing other characters
// (such as "c++" or "/deploy") matches as a case-insensitive substring
// (runs of white space compared as one space) that does not start or end
// inside a token.
//
// Each skill is activated at most once, by its first trigger (in the skill's
// order) that matches; results keep the order of skills, and a name that
// appears twice in skills is considered once.
func Match(skills []Skill, text string, activated map[string]bool) []Activation {
	var out []Activation
	var tokens []string
	var norm string
	tokenized, normalized := false, false
	done := map[string]bool{}
	for _, sk := range skills {
		if sk.Type != TypeKnowledge && sk.Type != TypeAgentSkills {
			continue
		}
		if len(sk.Triggers) == 0 || activated[sk.Name] || done[sk.Name] {
			continue
		}
		for _, trig := range sk.Triggers {
			var ok bool
			if isPlainTrigger(trig) {
				if !tokenized {
					tokens, tokenized = tokenize(text), true
				}
				ok = matchTokens(tokens, tokenize(trig))
			} else {
				if !normalized {
					norm, normalized = normalizeSpace(strings.ToLower(text)), true
				}
				ok = matchBounded(norm, normalizeSpace(strings.ToLower(strings.TrimSpace(trig))))
			}
			if ok {
				done[sk.Name] = true
				out = append(out, Activation{Skill: sk, Trigger: trig})
				break
			}
		}
	}
	return out
}

// isPlainTrigger reports whether trig consists only of token characters and
// white space (and has at least one token).
func isPlainTrigger(trig string) bool {
	hasToken := false
	for _, r := range trig {
		switch {
		case isTokenRune(r):
			hasToken = true
		case unicode.IsSpace(r):
		default:
			return false
		}
	}
	return hasToken
}

// matchTokens reports whether want occurs as a consecutive run in have.
func matchTokens(have, want []string) bool {
	if len(want) == 0 {
		return false
	}
outer:
	for i := 0; i+len(want) <= len(have); i++ {
		for j, w := range want {
			if have[i+j] != w {
				continue outer
			}
		}
		return true
	}
	return false
}

// normalizeSpace replaces every run of white space by one space.
func normalizeSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// matchBounded finds want in s at a position that neither starts nor ends in
// the middle of a token.
func matchBounded(s, want string) bool {
	if want == "" {
		return false
	}
	first, _ := utf8.DecodeRuneInString(want)
	last, _ := utf8.DecodeLastRuneInString(want)
	for off := 0; off <= len(s)-len(want); {
		i := strings.Index(s[off:], want)
		if i < 0 {
			return false
		}
		start, end := off+i, off+i+len(want)
		okStart, okEnd := true, true
		if isTokenRune(first) && start > 0 {
			prev, _ := utf8.DecodeLastRuneInString(s[:start])
			okStart = !isTokenRune(prev)
		}
		if isTokenRune(last) && end < len(s) {
			next, _ := utf8.DecodeRuneInString(s[end:])
			okEnd = !isTokenRune(next)
		}
		if okStart && okEnd {
			return true
		}
		_, size := utf8.DecodeRuneInString(s[start:])
		off = start + size
	}
	return false
}

// ExtraInfo renders activated skills as the <EXTRA_INFO> blocks the reference
// appends to a user message's extended content. Each activation becomes
//
//	<EXTRA_INFO>
//	The following information has been included based on a keyword match for "<trigger>".
//	It may or may not be relevant to the user's request.
//	Skill location: <path>          (only when the skill has a Path)
//	<content>
//	</EXTRA_INFO>
//
// and blocks are separated by one newline. It returns "" for no activations.
func ExtraInfo(acts []Activation) string {
	var b strings.Builder
	for i, a := range acts {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("<EXTRA_INFO>\n")
		b.WriteString("The following information has been included based on a keyword match for \"")
		b.WriteString(a.Trigger)
		b.WriteString("\".\nIt may or may not be relevant to the user's request.\n")
		if a.Skill.Path != "" {
			b.WriteString("Skill location: ")
			b.WriteString(a.Skill.Path)
			b.WriteByte('\n')
		}
		b.WriteString(a.Skill.Content)
		b.WriteString("\n</EXTRA_INFO>")
	}
	return b.String()
}

// SystemPrompt renders the skills that belong in the system prompt, or ""
// when there are none:
//
//   - every "repo" skill, in the given order, inside one <REPO_CONTEXT>
//     section as "[BEGIN context from [<name>]]\n<content>\n[END Context]";
//   - every "agentskills" skill not marked DisableModelInvocation, in the
//     given order, inside one <AVAILABLE_SKILLS> section as
//     <skill><name/><description/><location/></skill> entries (XML-escaped;
//     the description falls back to the first non-heading line of the
//     content, at most 200 characters; location is omitted without a Path).
//
// The two sections are separated by a blank line. Knowledge skills are not
// listed: they reach the model through ExtraInfo when triggered.
func SystemPrompt(skills []Skill) string {
	var repo, avail []Skill
	for _, sk := range skills {
		switch sk.Type {
		case TypeRepo:
			repo = append(repo, sk)
		case TypeAgentSkills:
			if !sk.DisableModelInvocation {
				avail = append(avail, sk)
			}
		}
	}
	var parts []string
	if len(repo) > 0 {
		var b strings.Builder
		b.WriteString("<REPO_CONTEXT>\n")
		b.WriteString("The following information has been included based on several files defined in user's repository.\n")
		b.WriteString("Please follow them while working.\n")
		for _, sk := range repo {
			b.WriteString("\n[BEGIN context from [")
			b.WriteString(sk.Name)
			b.WriteString("]]\n")
			b.WriteString(sk.Content)
			b.WriteString("\n[END Context]\n")
		}
		b.WriteString("</REPO_CONTEXT>")
		parts = append(parts, b.String())
	}
	if len(avail) > 0 {
		var b strings.Builder
		b.WriteString("<AVAILABLE_SKILLS>\n")
		b.WriteString("The following skills are available. When one is relevant to your task, read the file at its location for its full instructions.\n")
		for _, sk := range avail {
			b.WriteString("<skill>\n<name>")
			b.WriteString(escapeXML(sk.Name))
			b.WriteString("</name>\n<description>")
			b.WriteString(escapeXML(describe(sk)))
			b.WriteString("</description>\n")
			if sk.Path != "" {
				b.WriteString("<location>")
				b.WriteString(escapeXML(sk.Path))
				b.WriteString("</location>\n")
			}
			b.WriteString("</skill>\n")
		}
		b.WriteString("</AVAILABLE_SKILLS>")
		parts = append(parts, b.String())
	}
	return strings.Join(parts, "\n\n")
}

// describe returns the skill's description, else its first non-heading line
// (at most 200 characters).
func describe(sk Skill) string {
	if sk.Description != "" {
		return sk.Description
	}
	for _, line := range strings.Split(sk.Content, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if utf8.RuneCountInString(line) > 200 {
			line = string([]rune(line)[:200])
		}
		return line
	}
	return ""
}
