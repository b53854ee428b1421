package tools

import "github.com/acs-project/acs/events"

const browserListTabsDescription = `List the open browser tabs.

Each tab is shown with its {{.TabIDLen}}-character tab id, its URL and title; the current tab is marked. Use the tab id with browser_switch_tab and browser_close_tab.`

// browserListTabs describes browser_list_tabs, a tool of browser_tool_set. It takes
// no arguments: its schema is that of events.BrowserListTabsAction.
func browserListTabs() base {
	return newBase[events.BrowserListTabsAction]("BrowserListTabsTool", browserListTabsDescription, tabIDLimits)
}
