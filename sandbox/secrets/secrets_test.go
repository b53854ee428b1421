package secrets_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/secrets"
)

const (
	plain   = "s3cr3t-TOKEN-value"
	quoted  = `pa"ss\word<&>`
	multi   = "line-one\nline-two"
	hidden  = secrets.Hidden
	unicode = "clé-ünïcødé"
)

func TestMask(t *testing.T) {
	m := secrets.NewMasker(plain, quoted, multi, unicode, "", "abc")
	jsonOf := func(v string, html bool) string {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(html)
		_ = e.Encode(map[string]string{"text": "before " + v + " after"})
		return strings.TrimSpace(b.String())
	}
	cases := []struct {
		name, in, want string
	}{
		{"plain", "x " + plain + " y", "x " + hidden + " y"},
		{"twice", plain + plain, hidden + hidden},
		{"none", "nothing here", "nothing here"},
		{"too short to be a secret", "abc", "abc"},
		{"prefix only", plain[:5], plain[:5]},
		{"terminal line breaks", "a line-one\r\nline-two b", "a " + hidden + " b"},
		{"unix line breaks", "a " + multi + " b", "a " + hidden + " b"},
		{"json escaped", jsonOf(quoted, false), `{"text":"before ` + hidden + ` after"}`},
		{"json html escaped", jsonOf(quoted, true), `{"text":"before ` + hidden + ` after"}`},
		{"json multi-line", jsonOf(multi, false), `{"text":"before ` + hidden + ` after"}`},
		{"unicode", "«" + unicode + "»", "«" + hidden + "»"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.Mask(tc.in); got != tc.want {
				t.Errorf("Mask(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if got := string(m.MaskBytes([]byte(tc.in))); got != tc.want {
				t.Errorf("MaskBytes(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if m.Contains([]byte(tc.in)) != (tc.in != tc.want) {
				t.Errorf("Contains(%q) disagrees with Mask", tc.in)
			}
		})
	}
	var nilM *secrets.Masker
	if nilM.Mask(plain) != plain {
		t.Error("nil masker must be the identity")
	}
	if m.Len() != 4 {
		t.Errorf("Len = %d, want 4 (short values ignored)", m.Len())
	}
}

func TestMaskAddLater(t *testing.T) {
	m := secrets.NewMasker()
	if got := m.Mask(plain); got != plain {
		t.Fatalf("empty masker changed text: %q", got)
	}
	m.Add(plain)
	if got := m.Mask(plain); got != hidden {
		t.Fatalf("after Add: %q", got)
	}
}

// TestStreamWriter writes text holding secrets in every possible two-way and
// random many-way split: the output must equal masking the whole text.
func TestStreamWriter(t *testing.T) {
	m := secrets.NewMasker(plain, "abcabd", "xyzw")
	texts := []string{
		"start " + plain + " middle " + plain + " end",
		"abcabcabd abcab xy xyzw xyz",
		plain[:len(plain)-1] + " not quite",
		"ends with a prefix " + plain[:6],
	}
	for _, text := range texts {
		want := m.Mask(text)
		for cut := 0; cut <= len(text); cut++ {
			var out bytes.Buffer
			w := m.Writer(&out)
			w.Write([]byte(text[:cut]))
			w.Write([]byte(text[cut:]))
			w.Close()
			if out.String() != want {
				t.Fatalf("split at %d of %q: got %q, want %q", cut, text, out.String(), want)
			}
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 200 {
			var out bytes.Buffer
			w := m.Writer(&out)
			rest := text
			for rest != "" {
				n := 1 + r.IntN(min(len(rest), 5))
				w.Write([]byte(rest[:n]))
				// What was forwarded so far must never hold a secret.
				if strings.Contains(out.String(), plain) || strings.Contains(out.String(), "abcabd") {
					t.Fatalf("secret escaped mid-stream: %q", out.String())
				}
				rest = rest[n:]
			}
			w.Close()
			if out.String() != want {
				t.Fatalf("random split of %q: got %q, want %q", text, out.String(), want)
			}
		}
	}
}

func TestSafeCut(t *testing.T) {
	m := secrets.NewMasker("secret")
	cases := []struct {
		in   string
		n    int
		want int
	}{
		{"abc secret", 10, 10},
		{"abc secret", 6, 4},      // straddles
		{"abc sec", 7, 4},         // incomplete tail may continue
		{"abc sex", 7, 7},         // cannot be a secret
		{"secret secret", 3, 0},   // inside the first
		{"no match at all", 5, 5}, // nothing
	}
	for _, tc := range cases {
		if got := m.SafeCut([]byte(tc.in), tc.n); got != tc.want {
			t.Errorf("SafeCut(%q, %d) = %d, want %d", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestMiddleware(t *testing.T) {
	m := secrets.NewMasker(plain)
	h := m.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := "file: " + plain + "\n"
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		// Written byte by byte, as a streaming download would.
		for i := range len(body) {
			w.Write([]byte{body[i]})
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "file: "+hidden+"\n" {
		t.Fatalf("body %q", b)
	}
}

func TestLogHandler(t *testing.T) {
	m := secrets.NewMasker(plain)
	var buf bytes.Buffer
	lg := slog.New(m.Handler(slog.NewJSONHandler(&buf, nil)))
	lg.With("bound", "x").Info("msg "+plain, "s", plain, "err", errors.New("failed with "+plain),
		slog.Group("g", "inner", plain), "b", []byte(plain), "n", 3)
	if strings.Contains(buf.String(), plain) {
		t.Fatalf("log leaked: %s", buf.String())
	}
	if strings.Count(buf.String(), hidden) != 5 {
		t.Fatalf("expected 5 masked values: %s", buf.String())
	}
}

func TestCipher(t *testing.T) {
	c := secrets.NewCipher("passphrase")
	s := c.Seal(plain)
	if strings.Contains(s, plain) || !secrets.IsSealed(s) {
		t.Fatalf("sealed form %q", s)
	}
	if s2 := c.Seal(plain); s2 == s {
		t.Fatal("two seals of one value must differ (fresh nonce)")
	}
	got, err := c.Open(s)
	if err != nil || got != plain {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := secrets.NewCipher("other").Open(s); err == nil {
		t.Fatal("another key must not open the value")
	}
	// A character in the middle carries six bits of the sealed bytes; the
	// last ones may carry none.
	i, alt := len(s)/2, byte('A')
	if s[i] == alt {
		alt = 'B'
	}
	if _, err := c.Open(s[:i] + string(alt) + s[i+1:]); err == nil {
		t.Fatal("an altered value must not open")
	}
	if _, err := c.Open(plain); !errors.Is(err, secrets.ErrNotSealed) {
		t.Fatalf("plain value: %v", err)
	}
	if secrets.NewCipher("") != nil {
		t.Fatal("empty passphrase must give no cipher")
	}
}

func TestResolve(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			if r.Header.Get("Authorization") != "Bearer lookup-cred" {
				w.WriteHeader(403)
				return
			}
			io.WriteString(w, "looked-up-value\n")
		case "/big":
			w.Write(bytes.Repeat([]byte("x"), 70<<10))
		default:
			w.WriteHeader(404)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	cases := []struct {
		name    string
		src     agentwire.SecretSource
		want    string
		wantErr string
	}{
		{"static", agentwire.SecretSource{Kind: "StaticSecret", Value: "v"}, "v", ""},
		{"lookup", agentwire.SecretSource{Kind: "LookupSecret", URL: srv.URL + "/ok?token=q1", Headers: map[string]string{"Authorization": "Bearer lookup-cred"}}, "looked-up-value", ""},
		{"forbidden", agentwire.SecretSource{Kind: "LookupSecret", URL: srv.URL + "/ok?token=q1", Headers: map[string]string{"Authorization": "Bearer wrong-cred"}}, "", "HTTP 403"},
		{"too big", agentwire.SecretSource{Kind: "LookupSecret", URL: srv.URL + "/big"}, "", "longer than"},
		{"unreachable", agentwire.SecretSource{Kind: "LookupSecret", URL: "http://127.0.0.1:1/x?token=q1"}, "", "request failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := secrets.Resolve(ctx, nil, tc.src)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				for _, leak := range []string{"q1", "wrong-cred"} {
					if strings.Contains(err.Error(), leak) {
						t.Fatalf("error leaks %q: %v", leak, err)
					}
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Resolve = %q, %v", got, err)
			}
		})
	}
}

func BenchmarkMaskNoSecret(b *testing.B) {
	m := secrets.NewMasker(plain, quoted, multi)
	text := strings.Repeat("ordinary terminal output line with nothing secret\n", 200)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		m.Mask(text)
	}
}

func BenchmarkMaskWithSecret(b *testing.B) {
	m := secrets.NewMasker(plain, quoted, multi)
	text := strings.Repeat("ordinary terminal output line with "+plain+"\n", 200)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		m.Mask(text)
	}
}
