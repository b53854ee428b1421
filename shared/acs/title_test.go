package acs_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/acs-project/acs/shared/acs"
)

func TestTitleFromMessage(t *testing.T) {
	long := "Refactor the billing module so that invoices are generated asynchronously by a worker"
	tests := []struct{ name, text, want string }{
		{"short", "Fix the login bug", "Fix the login bug"},
		{"trimmed", "   Fix the login bug \t ", "Fix the login bug"},
		{"collapsed", "Fix   the\tlogin \u00a0 bug", "Fix the login bug"},
		{"first line", "Fix the login bug\nIt fails when the password has a quote.", "Fix the login bug"},
		{"first line with text", "\n  \r\n\tFix the login bug\r\nmore", "Fix the login bug"},
		{"exactly the limit", strings.Repeat("a", 60), strings.Repeat("a", 60)},
		{"cut at a word boundary", long, "Refactor the billing module so that invoices are generated…"},
		{"cut where a word ends", strings.Repeat("abcd ", 12) + "tail", strings.Repeat("abcd ", 11) + "abcd…"},
		{"punctuation before the cut", "Please look at these files, and then " + strings.Repeat("x", 40), "Please look at these files, and then…"},
		{"dash before the cut", strings.Repeat("word ", 11) + "abc - " + strings.Repeat("y", 30), strings.Repeat("word ", 11) + "abc…"},
		{"one long word", strings.Repeat("x", 80), strings.Repeat("x", 60) + "…"},
		{"multibyte", strings.Repeat("é", 70), strings.Repeat("é", 60) + "…"},
		{"multibyte words", strings.Repeat("日本語 ", 20), strings.TrimSpace(strings.Repeat("日本語 ", 15)) + "…"},
		{"empty", "", ""},
		{"blank", " \n\t\n ", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := acs.TitleFromMessage(tc.text)
			if got != tc.want {
				t.Fatalf("TitleFromMessage(%q)\n got %q\nwant %q", tc.text, got, tc.want)
			}
			if n := utf8.RuneCountInString(got); n > acs.MaxTitleRunes+1 || !utf8.ValidString(got) {
				t.Fatalf("title %q: %d characters", got, n)
			}
		})
	}
}

func TestFallbackTitle(t *testing.T) {
	if got := acs.FallbackTitle("0123456789abcdef"); got != "Conversation 01234" {
		t.Fatalf("FallbackTitle = %q", got)
	}
}

func TestTitleByFirstMessage(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef"
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		conv    acs.Conversation
		title   string
		changed bool
		want    string
	}{
		{"fallback title", acs.Conversation{ID: id, Title: str("Conversation 01234")}, "Fix the bug", true, "Fix the bug"},
		{"no title", acs.Conversation{ID: id}, "Fix the bug", true, "Fix the bug"},
		{"no text", acs.Conversation{ID: id, Title: str("Conversation 01234")}, "", false, "Conversation 01234"},
		{"explicit title", acs.Conversation{ID: id, Title: str("Chosen")}, "Fix the bug", false, "Chosen"},
		{"explicit title that looks like the fallback of another id", acs.Conversation{ID: id, Title: str("Conversation 98765")}, "Fix the bug", false, "Conversation 98765"},
		{"renamed to the fallback", acs.Conversation{ID: id, Title: str("Conversation 01234"), TitleAt: at.Add(-time.Hour), TitlePending: true}, "Fix the bug", false, "Conversation 01234"},
		{"reported by the agent server", acs.Conversation{ID: id, Title: str("Conversation 01234"), TitleAt: at.Add(-time.Hour)}, "Fix the bug", false, "Conversation 01234"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.conv
			if got := c.TitleByFirstMessage(tc.title); got != tc.changed || c.Title == nil || *c.Title != tc.want {
				t.Fatalf("changed %v, title %v; want %v, %q", got, c.Title, tc.changed, tc.want)
			}
			if !c.TitleAt.Equal(tc.conv.TitleAt) {
				t.Fatalf("TitleAt %v, was %v", c.TitleAt, tc.conv.TitleAt)
			}
		})
	}
	// Once titled, the conversation is no longer untitled; a report and a
	// rename still replace the title.
	c := acs.Conversation{ID: id}
	c.TitleByFirstMessage("Fix the bug")
	if c.Untitled() || c.TitleByFirstMessage("Another") {
		t.Fatal("a titled conversation was titled again")
	}
	c.ApplyReportedTitle("Reported", at)
	if *c.Title != "Reported" {
		t.Fatalf("a report: %q", *c.Title)
	}
	c.RenameByUser("Mine", at.Add(2*time.Minute))
	if *c.Title != "Mine" {
		t.Fatalf("a rename: %q", *c.Title)
	}
}
