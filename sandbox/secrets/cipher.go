package secrets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/acs-project/acs/sandbox/agentwire"
)

// Cipher seals secret values for storage with AES-256-GCM under a key derived
// (SHA-256) from a passphrase such as OH_SECRET_KEY.
type Cipher struct{ aead cipher.AEAD }

// sealedPrefix marks a sealed value.
const sealedPrefix = "acs-sealed:v1:"

// NewCipher derives the key from passphrase. It returns nil for an empty
// passphrase (no encryption available).
func NewCipher(passphrase string) *Cipher {
	if passphrase == "" {
		return nil
	}
	k := sha256.Sum256([]byte("acs secrets v1\x00" + passphrase))
	block, err := aes.NewCipher(k[:])
	if err != nil {
		panic(err) // 32-byte keys are always valid
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &Cipher{aead: aead}
}

// Seal encrypts v with a fresh random nonce.
func (c *Cipher) Seal(v string) string {
	nonce := make([]byte, c.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(fmt.Sprintf("secrets: random nonce: %v", err))
	}
	out := c.aead.Seal(nonce, nonce, []byte(v), nil)
	return sealedPrefix + base64.RawStdEncoding.EncodeToString(out)
}

// ErrNotSealed is returned by Open for a value Seal did not produce.
var ErrNotSealed = errors.New("secrets: value is not sealed")

// Open decrypts a value produced by Seal under the same passphrase. It
// returns ErrNotSealed for other values and an error when the key differs or
// the value was altered.
func (c *Cipher) Open(s string) (string, error) {
	rest, ok := strings.CutPrefix(s, sealedPrefix)
	if !ok {
		return "", ErrNotSealed
	}
	b, err := base64.RawStdEncoding.DecodeString(rest)
	if err != nil || len(b) < c.aead.NonceSize() {
		return "", errors.New("secrets: sealed value is malformed")
	}
	n := c.aead.NonceSize()
	plain, err := c.aead.Open(nil, b[:n], b[n:], nil)
	if err != nil {
		return "", errors.New("secrets: sealed value does not open with this key (was OH_SECRET_KEY changed?)")
	}
	return string(plain), nil
}

// IsSealed reports whether s looks like a sealed value.
func IsSealed(s string) bool { return strings.HasPrefix(s, sealedPrefix) }

// LookupTimeout bounds a LookupSecret fetch.
const LookupTimeout = 30 * time.Second

// maxLookupBytes bounds a looked-up value.
const maxLookupBytes = 64 << 10

// Resolve returns the value of src: a StaticSecret's value, or the body of an
// HTTP GET to a LookupSecret's url with its headers (bounded by
// LookupTimeout and 64 KiB; trailing line breaks trimmed). Errors name the
// URL without its query and never contain the header values.
func Resolve(ctx context.Context, hc *http.Client, src agentwire.SecretSource) (string, error) {
	if src.Kind != "LookupSecret" {
		return src.Value, nil
	}
	where := src.URL
	if u, err := url.Parse(src.URL); err == nil {
		u.RawQuery, u.User, u.Fragment = "", nil, ""
		where = u.String()
	}
	ctx, cancel := context.WithTimeout(ctx, LookupTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.URL, nil)
	if err != nil {
		return "", fmt.Errorf("look up secret at %s: bad url", where)
	}
	for k, v := range src.Headers {
		req.Header.Set(k, v)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("look up secret at %s: %w", where, ctx.Err())
		}
		return "", fmt.Errorf("look up secret at %s: request failed", where)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLookupBytes+1))
	if err != nil {
		return "", fmt.Errorf("look up secret at %s: read: %w", where, err)
	}
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("look up secret at %s: HTTP %d", where, resp.StatusCode)
	}
	if len(body) > maxLookupBytes {
		return "", fmt.Errorf("look up secret at %s: value longer than %d bytes", where, maxLookupBytes)
	}
	return strings.TrimRight(string(body), "\r\n"), nil
}
