package tools

import "github.com/acs-project/acs/events"

const browserGetStorageDescription = `Get the browser's storage state: all cookies and the localStorage of the open pages' origins, as JSON in the Playwright storage-state format:
{"cookies": [{"name", "value", "domain", "path", "expires", "httpOnly", "secure", "sameSite"}], "origins": [{"origin", "localStorage": [{"name", "value"}]}]}

Use it to save a logged-in session, and browser_set_storage to restore it later.`

// browserGetStorage describes browser_get_storage, a tool of browser_tool_set. It takes
// no arguments: its schema is that of events.BrowserGetStorageAction.
func browserGetStorage() base {
	return newBase[events.BrowserGetStorageAction]("BrowserGetStorageTool", browserGetStorageDescription, nil)
}
