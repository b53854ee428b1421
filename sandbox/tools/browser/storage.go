package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"

	"github.com/acs-project/acs/events"
)

// StorageState is Playwright's storage-state shape, which
// browser_get_storage returns and browser_set_storage takes.
type StorageState struct {
	Cookies []StorageCookie `json:"cookies"`
	Origins []StorageOrigin `json:"origins"`
}

// StorageCookie is one cookie. Expires is seconds since the Unix epoch, -1
// for a session cookie. SameSite is Strict, Lax or None.
type StorageCookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain"`
	Path     string  `json:"path"`
	Expires  float64 `json:"expires"`
	HTTPOnly bool    `json:"httpOnly"`
	Secure   bool    `json:"secure"`
	SameSite string  `json:"sameSite"`
}

// StorageOrigin is the localStorage of one origin.
type StorageOrigin struct {
	Origin       string        `json:"origin"`
	LocalStorage []StorageItem `json:"localStorage"`
}

// StorageItem is one localStorage entry.
type StorageItem struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func (b *Browser) getStorage(o *op) (result, error) {
	c, cancel := o.on(b.root)
	res, err := chromedp.CallBrowser(c, storage.GetCookies, storage.GetCookiesParams{})
	cancel()
	if err != nil {
		return result{}, fmt.Errorf("read cookies: %w", err)
	}
	st := StorageState{Cookies: []StorageCookie{}, Origins: []StorageOrigin{}}
	for _, ck := range res.Cookies {
		ss := string(ck.SameSite)
		if ss == "" {
			ss = "Lax"
		}
		exp := ck.Expires
		if ck.Session {
			exp = -1
		}
		st.Cookies = append(st.Cookies, StorageCookie{Name: ck.Name, Value: ck.Value, Domain: ck.Domain, Path: ck.Path,
			Expires: exp, HTTPOnly: ck.HTTPOnly, Secure: ck.Secure, SameSite: ss})
	}
	// localStorage of the current tab's origin first, then of the other
	// open tabs we are attached to.
	seen := map[string]bool{}
	tabs := append([]*tab{b.cur}, b.tabs...)
	for _, t := range tabs {
		if t.ctx == nil {
			continue
		}
		org, err := script[*StorageOrigin](o, t, jsStorageGet)
		if err != nil {
			if t == b.cur {
				return result{}, fmt.Errorf("read localStorage: %w", err)
			}
			continue
		}
		if org == nil || seen[org.Origin] {
			continue
		}
		seen[org.Origin] = true
		if org.LocalStorage == nil {
			org.LocalStorage = []StorageItem{}
		}
		st.Origins = append(st.Origins, *org)
	}
	j, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return result{}, err
	}
	return result{text: string(j)}, nil
}

// setCookie is a cookie of browser_set_storage: Playwright's shape, where
// url can stand for domain and path.
type setCookie struct {
	Name     string   `json:"name"`
	Value    string   `json:"value"`
	URL      string   `json:"url"`
	Domain   string   `json:"domain"`
	Path     string   `json:"path"`
	Expires  *float64 `json:"expires"`
	HTTPOnly bool     `json:"httpOnly"`
	Secure   bool     `json:"secure"`
	SameSite string   `json:"sameSite"`
}

func (b *Browser) setStorage(o *op, a *events.BrowserSetStorageAction) (result, error) {
	var st struct {
		Cookies []setCookie     `json:"cookies"`
		Origins []StorageOrigin `json:"origins"`
	}
	if err := json.Unmarshal(a.StorageState, &st); err != nil {
		return result{}, userErrorf("storage_state is not a valid storage state: %v. Expected {\"cookies\": [...], \"origins\": [...]} as browser_get_storage returns it.", err)
	}
	var params []*network.CookieParam
	for i, ck := range st.Cookies {
		if ck.Name == "" {
			return result{}, userErrorf("cookies[%d] has no name.", i)
		}
		if ck.Domain == "" && ck.URL == "" {
			return result{}, userErrorf("cookies[%d] (%s) needs either a domain (and path) or a url.", i, ck.Name)
		}
		p := &network.CookieParam{Name: ck.Name, Value: ck.Value, URL: ck.URL, Domain: ck.Domain, Path: ck.Path,
			Secure: ck.Secure, HTTPOnly: ck.HTTPOnly}
		if p.Domain != "" && p.Path == "" {
			p.Path = "/"
		}
		if p.Domain != "" {
			p.URL = ""
		}
		if ck.Expires != nil && *ck.Expires > 0 {
			p.Expires = cdp.TimeSinceEpoch(*ck.Expires)
		}
		switch strings.ToLower(ck.SameSite) {
		case "":
		case "strict":
			p.SameSite = network.CookieSameSiteStrict
		case "lax":
			p.SameSite = network.CookieSameSiteLax
		case "none":
			p.SameSite = network.CookieSameSiteNone
		default:
			return result{}, userErrorf("cookies[%d] (%s) has sameSite %q: use Strict, Lax or None.", i, ck.Name, ck.SameSite)
		}
		params = append(params, p)
	}
	if len(params) > 0 {
		c, cancel := o.on(b.root)
		_, err := chromedp.CallBrowser(c, storage.SetCookies, storage.SetCookiesParams{Cookies: params})
		cancel()
		if err != nil {
			if o.ctx.Err() != nil || b.root.Err() != nil {
				return result{}, err
			}
			return result{}, userErrorf("Setting the cookies failed: %v", err)
		}
	}
	items := 0
	for i, org := range st.Origins {
		if len(org.LocalStorage) == 0 {
			continue
		}
		u, err := url.Parse(org.Origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return result{}, userErrorf("origins[%d].origin %q is not an http(s) origin such as https://example.com.", i, org.Origin)
		}
		origin := u.Scheme + "://" + u.Host
		n, err := b.setLocalStorage(o, origin, org.LocalStorage)
		if err != nil {
			return result{}, err
		}
		items += n
	}
	return result{text: fmt.Sprintf("Set %d cookies and %d localStorage items (in %d origins).", len(params), items, countNonEmpty(st.Origins))}, nil
}

func countNonEmpty(os []StorageOrigin) int {
	n := 0
	for _, o := range os {
		if len(o.LocalStorage) > 0 {
			n++
		}
	}
	return n
}

// setLocalStorage writes items into origin's localStorage: in the current
// tab when it shows that origin, else in a hidden helper tab whose requests
// are answered with an empty page, so nothing is fetched from the origin.
func (b *Browser) setLocalStorage(o *op, origin string, items []StorageItem) (int, error) {
	cur := b.cur
	if org, err := evalOn[string](o, cur, `location.origin`); err == nil && org == origin {
		return script[int](o, cur, jsStorageSet, items)
	}
	ctx, cancel := chromedp.NewContext(b.root)
	defer cancel()
	if err := b.firstRun(o, ctx, cancel); err != nil {
		return 0, fmt.Errorf("open a helper tab: %w", err)
	}
	tgt := chromedp.FromContext(ctx).Target
	b.hidden[string(tgt.TargetID)] = true
	helper := &tab{id: tgt.TargetID, ctx: ctx, tr: newTracker()}

	ectx, ecancel := context.WithCancel(ctx)
	defer ecancel()
	paused := cdp.Events(ectx, tgt, fetch.RequestPaused)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range paused {
			if err != nil {
				return
			}
			_, _ = cdp.Call(ectx, tgt, fetch.FulfillRequest, fetch.FulfillRequestParams{
				RequestID:    ev.RequestID,
				ResponseCode: 200,
				ResponseHeaders: []*fetch.HeaderEntry{
					{Name: "Content-Type", Value: "text/html; charset=utf-8"},
				},
				Body: []byte("<!doctype html><title></title>"),
			})
		}
	}()
	defer func() { ecancel(); <-done }()
	c, ccancel := o.on(ctx)
	_, err := chromedp.Call(c, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}})
	ccancel()
	if err != nil {
		return 0, fmt.Errorf("intercept requests of the helper tab: %w", err)
	}
	if _, err := run(o, helper, chromedp.Navigate(origin+"/")); err != nil {
		if o.ctx.Err() != nil || b.root.Err() != nil {
			return 0, err
		}
		return 0, userErrorf("Could not open origin %s to set its localStorage: %v", origin, err)
	}
	return script[int](o, helper, jsStorageSet, items)
}
