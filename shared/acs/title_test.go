package acs_test

import (
	"strings"
	"testing"
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
