package acs

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTitleRunes is how many characters a title derived from a message keeps
// before its ellipsis.
const MaxTitleRunes = 60

// FallbackTitle is the title of a conversation that has neither an explicit
// title nor a first message with text: "Conversation " and the first five
// characters of its id.
func FallbackTitle(id string) string {
	return "Conversation " + id[:min(5, len(id))]
}

// TitleFromMessage derives a conversation's title from the text of its
// first user message: the first line that has any, trimmed, with runs of
// white space collapsed to one space, and, when longer than MaxTitleRunes
// characters, cut at the last word boundary within them (in the middle of a
// word only when the first word is longer) with "…" appended. It returns ""
// for a message with no text.
func TitleFromMessage(text string) string {
	var line string
	for _, l := range strings.Split(text, "\n") {
		if line = strings.Join(strings.FieldsFunc(l, unicode.IsSpace), " "); line != "" {
			break
		}
	}
	if utf8.RuneCountInString(line) <= MaxTitleRunes {
		return line
	}
	runes := []rune(line)
	cut := string(runes[:MaxTitleRunes])
	if runes[MaxTitleRunes] != ' ' {
		if i := strings.LastIndexByte(cut, ' '); i > 0 {
			cut = cut[:i]
		}
	}
	cut = strings.TrimRightFunc(cut, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(",;:-–—", r) })
	return cut + "…"
}

// Untitled reports whether c still has the title it was given for want of
// one (FallbackTitle, or none): no title came with its start request or its
// first message, nobody renamed it and no agent server reported one.
func (c *Conversation) Untitled() bool {
	return !c.TitlePending && c.TitleAt.IsZero() && (c.Title == nil || *c.Title == FallbackTitle(c.ID))
}

// TitleByFirstMessage titles an Untitled conversation by title, derived
// (TitleFromMessage) from its first user message. Like a title derived at
// start, it leaves TitleAt as it is: any title the agent server reports,
// and a rename, replace it. It reports whether the title changed: never for
// an empty title or a conversation that has one.
func (c *Conversation) TitleByFirstMessage(title string) bool {
	if title == "" || !c.Untitled() {
		return false
	}
	c.Title = &title
	return true
}
