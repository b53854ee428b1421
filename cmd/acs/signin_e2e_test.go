package main_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	cdpage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/internal/testbin"
	"github.com/acs-project/acs/internal/testwait"
)

// Browser sign-in, end to end: a real `acs serve`, headless Chromium
// (chromedp) and, for OpenID Connect, the real provider scripts/test.sh
// starts (ACS_TEST_OIDC_ISSUER; its client is acs-test / acs-test-secret,
// see scripts/oidc-provider.mjs).

// signInServe is an `acs serve` whose console the test reads.
type signInServe struct {
	url string
	out *testwait.Buffer
}

var linkRE = regexp.MustCompile(`http://\S+/login\?token=\S+`)

func startSignInServe(t *testing.T, env ...string) *signInServe {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	cmd := exec.Command(testbin.ACS(t), "serve", "--addr-file", addrFile)
	cmd.Env = append(os.Environ(), "ACS_ADDR=127.0.0.1:0", "ACS_DATA_DIR="+t.TempDir(), "ACS_API_KEY="+apiKey,
		"LLM_MODEL=openai/e2e-model", "LLM_API_KEY=sk-e2e")
	cmd.Env = append(cmd.Env, env...)
	out := &testwait.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	s := &signInServe{out: out}
	testwait.For(t, 30*time.Second, "acs serve to print its sign-in link", func() bool {
		b, err := os.ReadFile(addrFile)
		s.url = "http://" + string(b)
		return err == nil && len(b) > 0 && linkRE.MatchString(out.String())
	})
	return s
}

// link is the one-time sign-in link acs serve printed.
func (s *signInServe) link() string { return linkRE.FindString(s.out.String()) }

func needChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("ACS_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("no Chromium binary found, and ACS_REQUIRE_CHROMIUM=1 requires one")
	}
	t.Skip("skipping: no Chromium binary found")
	return ""
}

// newChromium starts a headless Chromium; each call to the returned
// function is a fresh tab after every cookie was cleared.
func newChromium(t *testing.T) func(t *testing.T) context.Context {
	path := needChromium(t)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(path),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()))
	browser, cancelBrowser := chromedp.NewContext(alloc)
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	return func(t *testing.T) context.Context {
		tab, cancelTab := chromedp.NewContext(browser)
		ctx, cancel := context.WithTimeout(tab, 60*time.Second)
		t.Cleanup(func() { cancel(); cancelTab() })
		if err := chromedp.Do(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
			t.Fatal(err)
		}
		return ctx
	}
}

func run(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// eval evaluates a script (awaiting the promise it may return).
func eval[T any](t *testing.T, ctx context.Context, script string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](script, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// page is the current location (path and query) and the body's text.
func page(t *testing.T, ctx context.Context) (string, string) {
	t.Helper()
	return eval[string](t, ctx, `location.pathname + location.search`), eval[string](t, ctx, `document.body ? document.body.innerText : ""`)
}

// fetchMe is GET /api/v1/users/me from the page, with its cookies: the
// status and body.
func fetchMe(t *testing.T, ctx context.Context) string {
	t.Helper()
	return eval[string](t, ctx, `fetch("/api/v1/users/me").then(async r => r.status + " " + await r.text())`)
}

// sessionCookie is the browser's acs_session cookie ("" when none).
func sessionCookie(t *testing.T, ctx context.Context) string {
	t.Helper()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cookies {
		if c.Name == "acs_session" {
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteLax || c.Path != "/" {
				t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Lax, Path=/", c)
			}
			return c.Value
		}
	}
	return ""
}

// meWithCookie calls GET /api/v1/users/me from Go with a session cookie.
func meWithCookie(t *testing.T, base, cookie string) int {
	code, _ := meAs(t, base, cookie)
	return code
}

// meAs is GET /api/v1/users/me with a session cookie: status and body.
func meAs(t *testing.T, base, cookie string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/v1/users/me", nil)
	req.AddCookie(&http.Cookie{Name: "acs_session", Value: cookie})
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestBrowserSignIn(t *testing.T) {
	web := t.TempDir()
	if err := os.WriteFile(filepath.Join(web, "index.html"), []byte(`<!doctype html><title>app</title><p id="app">the web app</p>`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(web, "app.js"), []byte(`console.log("app")`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startSignInServe(t, "ACS_WEB_DIR="+web)
	tab := newChromium(t)

	t.Run("OneTimeLinkWorksOnce", func(t *testing.T) {
		ctx := tab(t)
		link := s.link()
		run(t, ctx, chromedp.Navigate(link+"&next=/settings/app"))
		if loc, text := page(t, ctx); loc != "/settings/app" || !strings.Contains(text, "the web app") {
			t.Fatalf("after the link: at %s: %q", loc, text)
		}
		if me := fetchMe(t, ctx); !strings.HasPrefix(me, `200 {"id":"admin"`) {
			t.Fatalf("users/me with the session: %s", me)
		}
		if sessionCookie(t, ctx) == "" {
			t.Fatal("no session cookie")
		}
		// The same link again, in a browser without the session.
		ctx = tab(t)
		run(t, ctx, chromedp.Navigate(link))
		if loc, text := page(t, ctx); !strings.HasPrefix(loc, "/login") || !strings.Contains(text, "invalid, has expired or was used already") {
			t.Fatalf("a second use of the link: at %s: %q", loc, text)
		}
		if sessionCookie(t, ctx) != "" {
			t.Fatal("a used link made a session")
		}
		// The refusal, whose URL holds the token, has no form: "Sign in
		// again" leads to one, and a key signs in there.
		run(t, ctx, chromedp.Click(chromedp.CSS("#retry")), chromedp.WaitVisible(chromedp.CSS("#api_key")),
			chromedp.SendKeys(chromedp.CSS("#api_key"), apiKey), chromedp.Click(chromedp.CSS("#sign_in")),
			chromedp.WaitVisible(chromedp.CSS("#app")))
	})

	t.Run("SessionlessVisitGoesToSignInThenAPIKey", func(t *testing.T) {
		ctx := tab(t)
		run(t, ctx, chromedp.Navigate(s.url+"/conversations/abc?x=1"))
		loc, _ := page(t, ctx)
		if loc != "/login?next=%2Fconversations%2Fabc%3Fx%3D1" {
			t.Fatalf("a session-less page visit went to %s", loc)
		}
		// A wrong key: the page says so, and nothing is signed in.
		run(t, ctx, chromedp.SendKeys(chromedp.CSS("#api_key"), "acs_wrong-key"), chromedp.Click(chromedp.CSS("#sign_in")),
			chromedp.WaitVisible(chromedp.CSS("#error")))
		if _, text := page(t, ctx); !strings.Contains(text, "invalid API key") {
			t.Fatalf("a wrong key: %q", text)
		}
		run(t, ctx, chromedp.SendKeys(chromedp.CSS("#api_key"), apiKey), chromedp.Click(chromedp.CSS("#sign_in")),
			chromedp.WaitVisible(chromedp.CSS("#app")))
		if loc, _ := page(t, ctx); loc != "/conversations/abc?x=1" {
			t.Fatalf("signed in by key, at %s", loc)
		}
		if me := fetchMe(t, ctx); !strings.HasPrefix(me, `200 {"id":"admin"`) {
			t.Fatalf("users/me with the session: %s", me)
		}
	})

	t.Run("SignOut", func(t *testing.T) {
		ctx := tab(t)
		run(t, ctx, chromedp.Navigate(s.url+"/login"), chromedp.SendKeys(chromedp.CSS("#api_key"), apiKey),
			chromedp.Click(chromedp.CSS("#sign_in")), chromedp.WaitVisible(chromedp.CSS("#app")))
		cookie := sessionCookie(t, ctx)
		if meWithCookie(t, s.url, cookie) != 200 {
			t.Fatal("the session does not authenticate")
		}
		run(t, ctx, chromedp.Navigate(s.url+"/logout"), chromedp.Click(chromedp.CSS("#sign_out")), chromedp.WaitVisible(chromedp.CSS("#note")))
		if loc, text := page(t, ctx); loc != "/login?signed_out=1" || !strings.Contains(text, "You are signed out") {
			t.Fatalf("after signing out: at %s: %q", loc, text)
		}
		if sessionCookie(t, ctx) != "" {
			t.Fatal("the cookie is still there")
		}
		if code := meWithCookie(t, s.url, cookie); code != 401 {
			t.Fatalf("the ended session's cookie answers %d, want 401", code)
		}
		run(t, ctx, chromedp.Navigate(s.url+"/"))
		if loc, _ := page(t, ctx); !strings.HasPrefix(loc, "/login") {
			t.Fatalf("signed out, / went to %s", loc)
		}
	})

	t.Run("RevokedSessionsEnd", func(t *testing.T) {
		ctx := tab(t)
		run(t, ctx, chromedp.Navigate(s.url+"/login"), chromedp.SendKeys(chromedp.CSS("#api_key"), apiKey),
			chromedp.Click(chromedp.CSS("#sign_in")), chromedp.WaitVisible(chromedp.CSS("#app")))
		cookie := sessionCookie(t, ctx)
		n, err := client.New(s.url, apiKey).RevokeSessions(t.Context(), "me")
		if err != nil || n < 1 {
			t.Fatalf("revoked %d sessions: %v", n, err)
		}
		if code := meWithCookie(t, s.url, cookie); code != 401 {
			t.Fatalf("a revoked session answers %d, want 401", code)
		}
		run(t, ctx, chromedp.Navigate(s.url+"/conversations"))
		if loc, _ := page(t, ctx); !strings.HasPrefix(loc, "/login?next=") {
			t.Fatalf("with a revoked session, a page visit went to %s", loc)
		}
	})

	t.Run("CrossSitePostIsRefused", func(t *testing.T) {
		ctx := tab(t)
		run(t, ctx, chromedp.Navigate(s.url+"/login"), chromedp.SendKeys(chromedp.CSS("#api_key"), apiKey),
			chromedp.Click(chromedp.CSS("#sign_in")), chromedp.WaitVisible(chromedp.CSS("#app")))
		admin := client.New(s.url, apiKey)
		before, err := admin.ListKeys(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		// Another origin (same site: 127.0.0.1 on another port, so the Lax
		// cookie goes along) posts a form to ACS.
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/api/v1/keys" enctype="text/plain">
<input name='{"name":"evil","x":"' value='"}'></form><script>document.getElementById("f").submit()</script>`, s.url)
		}))
		defer evil.Close()
		run(t, ctx, chromedp.Navigate(evil.URL))
		testwait.For(t, 20*time.Second, "the cross-site post's answer", func() bool {
			loc, _ := page(t, ctx)
			return loc == "/api/v1/keys"
		})
		if _, text := page(t, ctx); !strings.Contains(text, "Cross-site request refused") {
			t.Fatalf("the cross-site post was answered %q", text)
		}
		after, err := admin.ListKeys(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Fatalf("the cross-site post made a key: %d keys, then %d", len(before), len(after))
		}
		// The same request from ACS's own page works.
		run(t, ctx, chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS("#app")))
		out := eval[string](t, ctx, `fetch("/api/v1/keys", {method: "POST", headers: {"Content-Type": "application/json"}, body: '{"name":"mine"}'}).then(r => String(r.status))`)
		if out != "201" {
			t.Fatalf("a same-origin POST with the session answered %s", out)
		}
	})
}

func TestBrowserSignInWithOIDC(t *testing.T) {
	issuer := os.Getenv("ACS_TEST_OIDC_ISSUER")
	if issuer == "" {
		t.Skip("skipping: ACS_TEST_OIDC_ISSUER is unset (scripts/test.sh starts the provider)")
	}
	s := startSignInServe(t, "ACS_OIDC_ISSUER="+issuer, "ACS_OIDC_CLIENT_ID=acs-test", "ACS_OIDC_CLIENT_SECRET=acs-test-secret",
		"ACS_OIDC_NAME=Test IdP", "ACS_OIDC_ALLOWED_DOMAINS=example.com")
	tab := newChromium(t)
	signIn := func(t *testing.T, ctx context.Context, login string) (string, string) {
		t.Helper()
		run(t, ctx, chromedp.Navigate(s.url+"/login?next=/"), chromedp.WaitVisible(chromedp.CSS("#oidc")))
		if _, text := page(t, ctx); !strings.Contains(text, "Sign in with Test IdP") {
			t.Fatalf("sign-in page: %q", text)
		}
		run(t, ctx, chromedp.Click(chromedp.CSS("#oidc")),
			chromedp.WaitVisible(chromedp.CSS(`input[name="login"]`)),
			chromedp.SendKeys(chromedp.CSS(`input[name="login"]`), login),
			chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "any"),
			chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
		var href string
		consented := false
		if !testwait.Until(30*time.Second, func() bool {
			var err error
			href, err = chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
			if err == nil && !consented && strings.HasPrefix(href, issuer) {
				// The provider asks a native client's user to confirm.
				text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
				if strings.Contains(text, "Authorize") {
					consented = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button[autofocus]`))) == nil
				}
			}
			// A 303 never commits its URL: at the callback, the browser
			// shows its answer (a refusal).
			return err == nil && strings.HasPrefix(href, s.url) && !strings.HasPrefix(href, s.url+"/login/oidc?")
		}) {
			_, text := page(t, ctx)
			t.Fatalf("the provider did not send the browser back to ACS: at %s: %q", href, text)
		}
		return page(t, ctx)
	}

	ctx := tab(t)
	loc, text := signIn(t, ctx, "ada")
	// The web UI at / says who is signed in once it has asked the API.
	testwait.Until(10*time.Second, func() bool {
		loc, text = page(t, ctx)
		return strings.Contains(text, "signed in as ada@example.com")
	})
	if loc != "/" || !strings.Contains(text, "signed in as ada@example.com") {
		t.Fatalf("after signing in with the provider: at %s: %q", loc, text)
	}
	code, me := meAs(t, s.url, sessionCookie(t, ctx))
	if code != 200 || !strings.Contains(me, `"name":"ada@example.com"`) || strings.Contains(me, `"admin":true`) {
		t.Fatalf("users/me: %d %s", code, me)
	}
	// The same identity again is the same user.
	ctx2 := tab(t)
	signIn(t, ctx2, "ada")
	if _, again := meAs(t, s.url, sessionCookie(t, ctx2)); again != me {
		t.Fatalf("a second sign-in of the identity is another user:\n%s\n%s", me, again)
	}
	// An identity without a verified address is refused, readably.
	ctx3 := tab(t)
	loc, text = signIn(t, ctx3, "unverified-bob")
	// The browser is at the callback once it commits, maybe before its
	// answer is drawn.
	testwait.Until(10*time.Second, func() bool {
		loc, text = page(t, ctx3)
		return strings.Contains(text, "verified e-mail")
	})
	if !strings.HasPrefix(loc, "/login") || !strings.Contains(text, "verified e-mail") {
		t.Fatalf("an unverified identity: at %s: %q", loc, text)
	}
	if sessionCookie(t, ctx3) != "" {
		t.Fatal("a refused sign-in made a session")
	}
}

// TestSignedInUICannotBeFramed: a page on another port of the same host,
// which is the same site and so gets the session cookie, frames the
// signed-in UI. The browser shows an error page in the frame instead, for
// ACS's own UI and for a frontend of ACS_WEB_DIR.
func TestSignedInUICannotBeFramed(t *testing.T) {
	web := t.TempDir()
	if err := os.WriteFile(filepath.Join(web, "index.html"), []byte(`<!doctype html><title>app</title><p id="app">the web app</p>`), 0o644); err != nil {
		t.Fatal(err)
	}
	tab := newChromium(t)
	for _, tc := range []struct {
		name string
		env  []string
		ui   string // an element of the signed-in UI
	}{
		{"OwnUI", nil, "#who"},
		{"WebDir", []string{"ACS_WEB_DIR=" + web}, "#app"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSignInServe(t, tc.env...)
			ctx := tab(t)
			run(t, ctx, chromedp.Navigate(s.link()+"&next=/conversations"), chromedp.WaitVisible(chromedp.CSS(tc.ui)))
			framer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, `<!doctype html><title>framer</title><iframe id="ui" src="%s/conversations"></iframe>`, s.url)
			}))
			defer framer.Close()
			run(t, ctx, chromedp.Navigate(framer.URL))
			// The frame commits either ACS's document or, refused, an error
			// page that names ACS's URL as unreachable.
			var frame *cdp.Frame
			testwait.For(t, 20*time.Second, "the frame to commit a document", func() bool {
				tree, err := chromedp.Call(ctx, cdpage.GetFrameTree, cdp.Empty{})
				if err != nil || len(tree.FrameTree.ChildFrames) != 1 {
					return false
				}
				frame = tree.FrameTree.ChildFrames[0].Frame
				return strings.HasPrefix(frame.URL, s.url) || strings.HasPrefix(frame.UnreachableURL, s.url)
			})
			if !strings.HasPrefix(frame.URL, "chrome-error:") {
				t.Fatalf("another port's page framed the signed-in UI: the frame shows %s", frame.URL)
			}
		})
	}
}
