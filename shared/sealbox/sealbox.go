// Package sealbox is the acs.Sealer: AES-256-GCM with a fresh random nonce
// per value.
//
// A sealed value is "v1:" followed by the unpadded base64url encoding of
// nonce (12 bytes) || ciphertext || tag (16 bytes). The "v1:" label is
// authenticated too. Sealing one value twice gives different results; Open
// fails for a value sealed with another key, a modified one, or one that was
// never sealed, and its errors never include the value.
package sealbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/acs-project/acs/shared/acs"
)

// KeySize is the length of a key in bytes.
const KeySize = 32

const (
	prefix = "v1:"
	// aad binds the version label (and this package's purpose) to every
	// sealed value.
	aad = "acs/sealbox/v1"
	// passphraseDomain separates passphrase-derived keys from other uses of
	// SHA-256 of the same passphrase.
	passphraseDomain = "acs/sealbox/v1/passphrase\x00"
	nonceSize        = 12
	tagSize          = 16
)

// Errors of Open, matched with errors.Is.
var (
	// ErrNotSealed: the value is not a sealed value (no "v1:" label, bad
	// encoding, or too short).
	ErrNotSealed = errors.New("sealbox: value is not sealed")
	// ErrDecrypt: the value was sealed with another key or modified.
	ErrDecrypt = errors.New("sealbox: cannot open sealed value (wrong key or tampered)")
)

// Box seals and opens values with one key. It is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

var _ acs.Sealer = (*Box)(nil)

// New returns a box for a 32-byte key; an error wrapping acs.ErrInvalid for
// a key of another length.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("sealbox: key is %d bytes, want %d: %w", len(key), KeySize, acs.ErrInvalid)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("sealbox: %w", err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("sealbox: %w", err)
	}
	return &Box{aead: aead}, nil
}

// FromPassphrase returns a box whose key is the SHA-256 of a
// domain-separated passphrase. The key is only as strong as the passphrase
// (there is no salt or stretching): use a long random one, or a key file.
func FromPassphrase(p string) *Box {
	sum := sha256.Sum256([]byte(passphraseDomain + p))
	b, err := New(sum[:])
	if err != nil {
		panic(err) // unreachable: the key is always 32 bytes
	}
	return b
}

// LoadOrCreateKeyFile returns a box for the key in path: 32 bytes,
// hex-encoded (surrounding white space ignored). When path does not exist it
// creates it, and its directory, with a new random key, atomically: the file
// appears complete or not at all (on file systems with hard links), and when
// several processes race to create it they all end up with the same key. The file is created with mode 0600;
// an existing file readable by others is used with a warning. A malformed
// file is an error naming it (and never a reason to replace it).
func LoadOrCreateKeyFile(path string) (*Box, error) {
	key, err := readKeyFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key, err = createKeyFile(path)
	}
	if err != nil {
		return nil, err
	}
	return New(key)
}

func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sealbox: read key file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("sealbox: read key file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("sealbox: key file %s is not a regular file", path)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		slog.Warn("sealbox: key file is readable by other users; chmod 600 it", "path", path, "mode", st.Mode().Perm().String())
	}
	// A valid file is 64 hex digits and perhaps a newline: read a little
	// more, to tell a long file from a valid one without reading it all.
	limit := int64(2*KeySize + 64)
	raw, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, fmt.Errorf("sealbox: read key file %s: %w", path, err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(key) != KeySize || int64(len(raw)) == limit {
		return nil, fmt.Errorf("sealbox: key file %s is malformed: want %d hex digits (%d random bytes)", path, 2*KeySize, KeySize)
	}
	return key, nil
}

func createKeyFile(path string) ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("sealbox: generate key: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sealbox: create key file directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("sealbox: create key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(key) + "\n")
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("sealbox: write key file: %w", err)
	}
	// Link, unlike rename, never replaces a file another process created
	// meanwhile: the loser of a race reads the winner's key.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readKeyFile(path)
		}
		// No hard links here (some file systems): create exclusively
		// instead, which still never replaces another process's key.
		if err := writeExclusive(path, key); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return readKeyFile(path)
			}
			return nil, fmt.Errorf("sealbox: create key file %s: %w", path, err)
		}
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return key, nil
}

func writeExclusive(path string, key []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(hex.EncodeToString(key) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// Seal encrypts plain and returns "v1:" + base64url(nonce || ciphertext).
func (b *Box) Seal(plain string) (string, error) {
	out := b.aead.Seal(nil, nil, []byte(plain), []byte(aad))
	return prefix + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open decrypts a value Seal returned. Errors wrap ErrNotSealed (not a
// sealed value) or ErrDecrypt (another key, or modified); they never include
// the value.
func (b *Box) Open(sealed string) (string, error) {
	rest, ok := strings.CutPrefix(sealed, prefix)
	if !ok {
		return "", fmt.Errorf("%w: missing the %q label", ErrNotSealed, prefix)
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return "", fmt.Errorf("%w: malformed base64url", ErrNotSealed)
	}
	if len(raw) < nonceSize+tagSize {
		return "", fmt.Errorf("%w: %d bytes is too short", ErrNotSealed, len(raw))
	}
	plain, err := b.aead.Open(nil, nil, raw, []byte(aad))
	if err != nil {
		return "", ErrDecrypt
	}
	return string(plain), nil
}

// String hides the key from logs.
func (b *Box) String() string { return "sealbox.Box{key:hidden}" }

// GoString hides the key from %#v.
func (b *Box) GoString() string { return b.String() }
