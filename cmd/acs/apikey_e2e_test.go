package main_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/shared/v1wire"
)

// The local user's API key (ACS_API_KEY, or one generated on first start and
// kept in <data dir>/api_key) and how it survives restarts.

// noLLM is an LLM base URL for servers these tests never start agents on.
const noLLM = "http://127.0.0.1:9/v1"

// startServeNoKey starts `acs serve` with ACS_API_KEY unset (an empty value
// is unset; the last of duplicate variables wins).
func startServeNoKey(t *testing.T, dataDir string) *acsServe {
	t.Helper()
	return startServe(t, dataDir, noLLM, "ACS_API_KEY=")
}

// wantMe checks what GET /api/v1/users/me answers for key.
func wantMe(t *testing.T, s *acsServe, key string, code int) {
	t.Helper()
	me, err := s.api(key).Me(t.Context())
	if code != 200 {
		if client.StatusOf(err) != code {
			t.Fatalf("GET /api/v1/users/me with key %.12s...: %v, want HTTP %d", key, err, code)
		}
		return
	}
	s.ok(err, 200, fmt.Sprintf("GET /api/v1/users/me with key %.12s...", key))
	if me.ID != "admin" || !me.Admin {
		t.Fatalf("the key is not the admin's: %+v", me)
	}
}

// bootstrapKeyID finds the id of the admin's key whose value is key (by its
// listed prefix), or "".
func bootstrapKeyID(t *testing.T, s *acsServe, as, key string) string {
	t.Helper()
	keys, err := s.api(as).ListKeys(t.Context())
	s.ok(err, 200, "list keys")
	for _, k := range keys {
		if k.Prefix == key[:8] {
			return k.ID
		}
	}
	return ""
}

// makeKey makes a key of the user of as.
func makeKey(t *testing.T, s *acsServe, as, name string) v1wire.NewKey {
	t.Helper()
	k, err := s.api(as).CreateKey(t.Context(), name)
	s.ok(err, 201, "create key "+name)
	return k
}

// deleteKey revokes the key id with the key as.
func deleteKey(t *testing.T, s *acsServe, as, id string) {
	t.Helper()
	s.ok(s.api(as).DeleteKey(t.Context(), id), 200, "delete key "+id)
}

func TestGeneratedAPIKey(t *testing.T) {
	dataDir := t.TempDir()
	keyFile := filepath.Join(dataDir, "api_key")
	s := startServeNoKey(t, dataDir)

	fi, err := os.Stat(keyFile)
	if err != nil {
		t.Fatalf("no generated key file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("api_key mode %v, want 0600", fi.Mode().Perm())
	}
	raw, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(raw))
	if !strings.HasPrefix(key, "acs_") || len(key) < 20 {
		t.Fatalf("generated key %q", key)
	}
	wantMe(t, s, key, 200)
	wantMe(t, s, key+"x", 401)
	wantMe(t, s, "acs_not-the-key-0123456789", 401)
	wantMe(t, s, "", 401)
	s.stop() // the log is complete once the process has exited
	if !strings.Contains(s.log.String(), "API key (generated; saved in "+keyFile+"): "+key) {
		t.Fatalf("the generated key was not printed:\n%s", s.log)
	}

	// A restart reuses the saved key (and does not print it again).
	s = startServeNoKey(t, dataDir)
	wantMe(t, s, key, 200)
	wantMe(t, s, key+"x", 401)
	s.stop()
	if raw2, _ := os.ReadFile(keyFile); string(raw2) != string(raw) {
		t.Fatalf("api_key changed on restart: %q -> %q", raw, raw2)
	}
	if strings.Contains(s.log.String(), key) {
		t.Fatalf("the saved key was printed again:\n%s", s.log)
	}

	// Setting ACS_API_KEY replaces the generated key.
	s = startServe(t, dataDir, noLLM)
	wantMe(t, s, apiKey, 200)
	wantMe(t, s, key, 401)
}

func TestRevokedBootstrapKeyStaysRevoked(t *testing.T) {
	dataDir := t.TempDir()
	s := startServe(t, dataDir, noLLM)
	other := makeKey(t, s, apiKey, "second")
	id := bootstrapKeyID(t, s, apiKey, apiKey)
	if id == "" || id == other.ID {
		t.Fatalf("the bootstrap key is not listed (id %q)", id)
	}
	deleteKey(t, s, other.Key, id)
	wantMe(t, s, apiKey, 401)
	s.stop()

	for i := 0; i < 2; i++ {
		s = startServe(t, dataDir, noLLM)
		wantMe(t, s, apiKey, 401)
		wantMe(t, s, other.Key, 200)
		if id := bootstrapKeyID(t, s, other.Key, apiKey); id != "" {
			t.Fatalf("restart %d: the revoked key is listed again as %s", i+1, id)
		}
		s.stop()
		if !strings.Contains(s.log.String(), "was revoked") {
			t.Fatalf("no warning about the revoked key:\n%s", s.log)
		}
	}

	// The same holds for a generated key.
	dataDir = t.TempDir()
	s = startServeNoKey(t, dataDir)
	raw, _ := os.ReadFile(filepath.Join(dataDir, "api_key"))
	key := strings.TrimSpace(string(raw))
	other = makeKey(t, s, key, "second")
	deleteKey(t, s, other.Key, bootstrapKeyID(t, s, key, key))
	s.stop()
	s = startServeNoKey(t, dataDir)
	wantMe(t, s, key, 401)
	wantMe(t, s, other.Key, 200)
}

func TestChangedAPIKey(t *testing.T) {
	const newKey = "changed-admin-key-9876543210" // another prefix than apiKey
	dataDir := t.TempDir()
	s := startServe(t, dataDir, noLLM)
	wantMe(t, s, apiKey, 200)
	other := makeKey(t, s, apiKey, "kept")
	s.stop()

	s = startServe(t, dataDir, noLLM, "ACS_API_KEY="+newKey)
	wantMe(t, s, newKey, 200)
	wantMe(t, s, apiKey, 401)
	wantMe(t, s, other.Key, 200) // keys made through the API are kept
	if bootstrapKeyID(t, s, newKey, apiKey) != "" {
		t.Fatal("the old key is still listed")
	}
	s.stop()

	// Restarting with the new key changes nothing; going back to the old
	// value is a change too.
	s = startServe(t, dataDir, noLLM, "ACS_API_KEY="+newKey)
	wantMe(t, s, newKey, 200)
	wantMe(t, s, apiKey, 401)
	s.stop()
	s = startServe(t, dataDir, noLLM)
	wantMe(t, s, apiKey, 200)
	wantMe(t, s, newKey, 401)
	wantMe(t, s, other.Key, 200)
}

// browserSession signs in as a browser does, by the one-time link or by
// posting an API key to /login: the session cookie's value.
func browserSession(t *testing.T, s *acsServe, link, key string) string {
	t.Helper()
	req, err := http.NewRequest("GET", link, nil)
	if key != "" {
		req, err = http.NewRequest("POST", s.url+"/login", strings.NewReader(url.Values{"api_key": {key}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", s.url)
	}
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == "acs_session" && c.Value != "" {
			return c.Value
		}
	}
	t.Fatalf("signing in answered %d without a session cookie", res.StatusCode)
	return ""
}

// TestKeySessionsEndWithTheKey: a browser session made with an API key
// ends when the key is revoked, and when acs serve restarts with another
// ACS_API_KEY; a session made with the sign-in link goes on.
func TestKeySessionsEndWithTheKey(t *testing.T) {
	const newKey = "changed-admin-key-9876543210"
	dataDir := t.TempDir()
	s := startServe(t, dataDir, noLLM)
	testwait.For(t, 30*time.Second, "the sign-in link", func() bool { return linkRE.MatchString(s.log.String()) })
	byLink := browserSession(t, s, linkRE.FindString(s.log.String()), "")
	byBootstrap := browserSession(t, s, "", apiKey)
	made := makeKey(t, s, apiKey, "browser")
	byMade := browserSession(t, s, "", made.Key)
	want := func(step string, sessions map[string]int) {
		t.Helper()
		for name, code := range sessions {
			cookie := map[string]string{"link": byLink, "bootstrap key": byBootstrap, "made key": byMade}[name]
			if got := meWithCookie(t, s.url, cookie); got != code {
				t.Errorf("%s: the %s's session answers %d, want %d", step, name, got, code)
			}
		}
	}
	want("signed in", map[string]int{"link": 200, "bootstrap key": 200, "made key": 200})
	deleteKey(t, s, apiKey, made.ID)
	want("the made key revoked", map[string]int{"link": 200, "bootstrap key": 200, "made key": 401})
	s.stop()
	s = startServe(t, dataDir, noLLM, "ACS_API_KEY="+newKey)
	want("restarted with a new ACS_API_KEY", map[string]int{"link": 200, "bootstrap key": 401, "made key": 401})
}
