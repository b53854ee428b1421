package sealbox_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/sealbox"
)

func newBox(t *testing.T, fill byte) *sealbox.Box {
	t.Helper()
	b, err := sealbox.New(bytes.Repeat([]byte{fill}, sealbox.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	b := newBox(t, 1)
	for _, plain := range []string{"", "sk-secret-value", strings.Repeat("long ", 10000), "ünïcödé \x00 bytes \xff"} {
		sealed, err := b.Seal(plain)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(sealed, "v1:") {
			t.Fatalf("sealed value %q lacks the v1: label", sealed)
		}
		if _, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sealed, "v1:")); err != nil {
			t.Fatalf("not base64url: %v", err)
		}
		if plain != "" && strings.Contains(sealed, plain) {
			t.Fatal("sealed value contains the plaintext")
		}
		got, err := b.Open(sealed)
		if err != nil || got != plain {
			t.Fatalf("open: %q %v", got, err)
		}
	}
}

func TestSealsDiffer(t *testing.T) {
	b := newBox(t, 1)
	seen := map[string]bool{}
	for range 100 {
		s, err := b.Seal("same value")
		if err != nil {
			t.Fatal(err)
		}
		if seen[s] {
			t.Fatal("two seals of one value are equal")
		}
		seen[s] = true
	}
}

func TestWrongKey(t *testing.T) {
	sealed, _ := newBox(t, 1).Seal("sk-secret-value")
	for name, other := range map[string]*sealbox.Box{
		"OtherKey":        newBox(t, 2),
		"OtherPassphrase": sealbox.FromPassphrase("another"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := other.Open(sealed)
			if !errors.Is(err, sealbox.ErrDecrypt) {
				t.Fatalf("open with the wrong key: %v, want ErrDecrypt", err)
			}
			if strings.Contains(err.Error(), "sk-secret-value") || strings.Contains(err.Error(), sealed) {
				t.Fatalf("error leaks the value: %v", err)
			}
		})
	}
}

func TestTampered(t *testing.T) {
	b := newBox(t, 1)
	sealed, _ := b.Seal("sk-secret-value")
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sealed, "v1:"))
	for i := range raw {
		mod := bytes.Clone(raw)
		mod[i] ^= 0x01
		if _, err := b.Open("v1:" + base64.RawURLEncoding.EncodeToString(mod)); !errors.Is(err, sealbox.ErrDecrypt) {
			t.Fatalf("flipping byte %d: %v, want ErrDecrypt", i, err)
		}
	}
	// Dropping or appending bytes.
	for _, mod := range [][]byte{raw[:len(raw)-1], append(bytes.Clone(raw), 0)} {
		if _, err := b.Open("v1:" + base64.RawURLEncoding.EncodeToString(mod)); err == nil {
			t.Fatal("a truncated or extended value opened")
		}
	}
}

func TestNotSealed(t *testing.T) {
	b := newBox(t, 1)
	for _, v := range []string{
		"", "sk-plain-secret", "v1:", "v1:not base64!", "v2:AAAA",
		"v1:" + base64.RawURLEncoding.EncodeToString(make([]byte, 27)), // shorter than nonce+tag
		"v1:" + base64.URLEncoding.EncodeToString([]byte("padded==")),
	} {
		_, err := b.Open(v)
		if !errors.Is(err, sealbox.ErrNotSealed) {
			t.Fatalf("open %q: %v, want ErrNotSealed", v, err)
		}
		if v != "" && strings.Contains(err.Error(), v) {
			t.Fatalf("error leaks the value: %v", err)
		}
	}
}

func TestNewKeySize(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := sealbox.New(make([]byte, n)); !errors.Is(err, acs.ErrInvalid) {
			t.Fatalf("%d-byte key: %v, want ErrInvalid", n, err)
		}
	}
}

func TestFromPassphrase(t *testing.T) {
	a, b := sealbox.FromPassphrase("correct horse"), sealbox.FromPassphrase("correct horse")
	sealed, _ := a.Seal("value")
	if got, err := b.Open(sealed); err != nil || got != "value" {
		t.Fatalf("same passphrase: %q %v", got, err)
	}
	// The key is not the plain SHA-256 of the passphrase.
	sum := sha256.Sum256([]byte("correct horse"))
	plainHash, _ := sealbox.New(sum[:])
	if _, err := plainHash.Open(sealed); !errors.Is(err, sealbox.ErrDecrypt) {
		t.Fatalf("passphrase key is not domain-separated: %v", err)
	}
	if fmt.Sprint(a) != "sealbox.Box{key:hidden}" || fmt.Sprintf("%#v", a) != "sealbox.Box{key:hidden}" {
		t.Fatalf("box prints as %v / %#v", a, a)
	}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "dir", "seal.key")
	b1, err := sealbox.LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.TrimSpace(string(raw)); len(s) != 64 || strings.Trim(s, "0123456789abcdef") != "" {
		t.Fatalf("key file holds %d characters, not 64 hex digits", len(s))
	}
	if runtime.GOOS != "windows" {
		st, _ := os.Stat(path)
		if st.Mode().Perm() != 0o600 {
			t.Fatalf("key file mode %v, want 0600", st.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}

	// Reloading gives the same key.
	sealed, _ := b1.Seal("kept across restarts")
	b2, err := sealbox.LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b2.Open(sealed); err != nil || got != "kept across restarts" {
		t.Fatalf("reloaded key: %q %v", got, err)
	}

	// A new file is a new key.
	b3, err := sealbox.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "other.key"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b3.Open(sealed); !errors.Is(err, sealbox.ErrDecrypt) {
		t.Fatalf("another key file opened the value: %v", err)
	}
}

func TestKeyFileAcceptsWhitespace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seal.key")
	if err := os.WriteFile(path, []byte("\n  "+strings.Repeat("ab", 32)+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want, _ := sealbox.New(bytes.Repeat([]byte{0xab}, 32))
	sealed, _ := want.Seal("x")
	b, err := sealbox.LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Open(sealed); err != nil || got != "x" {
		t.Fatalf("%q %v", got, err)
	}
}

func TestKeyFileMalformed(t *testing.T) {
	for name, content := range map[string]string{
		"Empty":    "",
		"NotHex":   strings.Repeat("zz", 32),
		"TooShort": strings.Repeat("ab", 31),
		"TooLong":  strings.Repeat("ab", 33),
		"Huge":     strings.Repeat("ab", 10000),
		"Binary":   string(bytes.Repeat([]byte{0xab}, 32)),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "seal.key")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := sealbox.LoadOrCreateKeyFile(path)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "malformed") {
				t.Fatalf("malformed key file: %v", err)
			}
			if got, _ := os.ReadFile(path); string(got) != content {
				t.Fatal("a malformed key file was replaced")
			}
		})
	}
	t.Run("Directory", func(t *testing.T) {
		path := t.TempDir()
		if _, err := sealbox.LoadOrCreateKeyFile(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("directory as key file: %v", err)
		}
	})
}

// A key file others can read still loads (with a warning): refusing it
// would lock the server out of every sealed value.
func TestKeyFileLoosePermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seal.key")
	if err := os.WriteFile(path, []byte(strings.Repeat("ab", 32)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sealbox.LoadOrCreateKeyFile(path); err != nil {
		t.Fatal(err)
	}
}

func TestKeyFilePermissionDenied(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("needs POSIX permissions enforced (not root)")
	}
	path := filepath.Join(t.TempDir(), "seal.key")
	if err := os.WriteFile(path, []byte(strings.Repeat("ab", 32)), 0o000); err != nil {
		t.Fatal(err)
	}
	if _, err := sealbox.LoadOrCreateKeyFile(path); err == nil || !errors.Is(err, os.ErrPermission) {
		t.Fatalf("unreadable key file: %v", err)
	}
}

// Processes racing to create the key file all end up with one key.
func TestKeyFileConcurrentCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seal.key")
	boxes := make([]*sealbox.Box, 16)
	var wg sync.WaitGroup
	for i := range boxes {
		wg.Go(func() {
			b, err := sealbox.LoadOrCreateKeyFile(path)
			if err != nil {
				t.Error(err)
				return
			}
			boxes[i] = b
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	sealed, _ := boxes[0].Seal("shared")
	for i, b := range boxes {
		if got, err := b.Open(sealed); err != nil || got != "shared" {
			t.Fatalf("box %d has another key: %v", i, err)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	b := newBox(t, 7)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				v := fmt.Sprint(i, "-", j)
				s, err := b.Seal(v)
				if err != nil {
					t.Error(err)
					return
				}
				if got, err := b.Open(s); err != nil || got != v {
					t.Errorf("%q %v", got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
