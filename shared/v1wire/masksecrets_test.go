package v1wire_test

import (
	"testing"

	"github.com/acs-project/acs/shared/v1wire"
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
		if got := v1wire.MaskSecrets(tc.text, secrets); got != tc.want {
			t.Errorf("MaskSecrets(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}
