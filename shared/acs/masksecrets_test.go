package acs_test

import (
	"slices"
	"testing"

	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
)

// TestMaskSecrets: every value SecretsIn finds is replaced by
// <secret-hidden>; values under 4 bytes are left, and where two values
// overlap the longer one is masked whole.
func TestMaskSecrets(t *testing.T) {
	secrets := map[string]string{"TOKEN": "abcd-1234", "PREFIX": "abcd", "SHORT": "xyz", "OTHER": "zz-99"}
	cases := []struct{ text, want string }{
		{"no secret here", "no secret here"},
		{"use abcd-1234 now", "use <secret-hidden> now"},
		{"abcd alone", "<secret-hidden> alone"},
		{"xyz stays", "xyz stays"},
		{"abcd-1234/zz-99/abcd-1234", "<secret-hidden>/<secret-hidden>/<secret-hidden>"},
		{"abcd-12", "<secret-hidden>-12"},
	}
	for _, tc := range cases {
		if got := acs.MaskSecrets(tc.text, secrets); got != tc.want {
			t.Errorf("MaskSecrets(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestSecretHiddenIsTheAgentServers: the control plane masks with the
// agent server's mark.
func TestSecretHiddenIsTheAgentServers(t *testing.T) {
	if acs.SecretHidden != agentwire.SecretHidden {
		t.Fatalf("acs.SecretHidden = %q, agentwire.SecretHidden = %q", acs.SecretHidden, agentwire.SecretHidden)
	}
}

// TestLeaks: one refusal per secret whose value the text holds, by name;
// titles and messages are refused in their own words.
func TestLeaks(t *testing.T) {
	secrets := map[string]string{"B_TOKEN": "bbbb-2", "A_TOKEN": "aaaa-1", "SHORT": "ab"}
	got := acs.TitleText.Leaks("ab aaaa-1 bbbb-2", secrets)
	want := []string{
		"the title contains the value of secret A_TOKEN; secret values may not appear in titles",
		"the title contains the value of secret B_TOKEN; secret values may not appear in titles",
	}
	if !slices.Equal(got, want) {
		t.Errorf("TitleText.Leaks = %q, want %q", got, want)
	}
	if got, want := acs.MessageText.Refusal("A_TOKEN"), "the message contains the value of secret A_TOKEN; refer to it by name instead"; got != want {
		t.Errorf("MessageText.Refusal = %q, want %q", got, want)
	}
	if got := acs.InitialMessageText.Leaks("nothing here", secrets); got != nil {
		t.Errorf("Leaks without a secret = %q, want none", got)
	}
}
