package tools

import "github.com/acs-project/acs/sandbox/tools/browser"

const browserSetStorageDescription = `Set cookies and localStorage in the browser from a storage state in the Playwright format (as returned by browser_get_storage).

Parameters:
- storage_state: An object with "cookies" (a list of {name, value, domain, path, expires, httpOnly, secure, sameSite}; "url" may replace domain and path) and "origins" (a list of {origin, localStorage: [{name, value}]})

Pages loaded afterwards see the cookies and items; reload a page that is already open.`

// browserSetStorageArgs are the arguments of browser_set_storage
// (events.BrowserSetStorageAction). storage_state is raw JSON in the
// action; its schema is Playwright's shape as the browser reads it.
type browserSetStorageArgs struct {
	StorageState storageStateArgs `json:"storage_state" jsonschema:"required" description:"Storage state with 'cookies' and 'origins' (as returned by browser_get_storage)"`
}

type storageStateArgs struct {
	Cookies []storageCookieArgs `json:"cookies" description:"Cookies to set"`
	Origins []storageOriginArgs `json:"origins" description:"localStorage items per origin"`
}

type storageCookieArgs struct {
	Name     string  `json:"name" jsonschema:"required" description:"Cookie name"`
	Value    string  `json:"value" jsonschema:"required" description:"Cookie value"`
	URL      string  `json:"url" description:"URL the cookie belongs to (instead of domain and path)"`
	Domain   string  `json:"domain" description:"Cookie domain"`
	Path     string  `json:"path" description:"Cookie path"`
	Expires  float64 `json:"expires" description:"Expiry as seconds since the Unix epoch; -1 for a session cookie"`
	HTTPOnly bool    `json:"httpOnly" description:"HttpOnly flag"`
	Secure   bool    `json:"secure" description:"Secure flag"`
	SameSite string  `json:"sameSite" jsonschema:"enum=Strict|Lax|None" description:"SameSite policy"`
}

type storageOriginArgs struct {
	Origin       string            `json:"origin" jsonschema:"required" description:"Origin, e.g. https://example.com"`
	LocalStorage []storageItemArgs `json:"localStorage" jsonschema:"required"`
}

type storageItemArgs struct {
	Name  string `json:"name" jsonschema:"required" description:"Key"`
	Value string `json:"value" jsonschema:"required" description:"Value"`
}

var _ = browser.StorageItem(storageItemArgs{})

// browserSetStorage describes browser_set_storage, a tool of browser_tool_set.
func browserSetStorage() base {
	return newBase[browserSetStorageArgs]("BrowserSetStorageTool", browserSetStorageDescription, nil)
}
