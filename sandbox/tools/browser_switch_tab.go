package tools

import "github.com/acs-project/acs/events"

const browserSwitchTabDescription = `Switch to another open tab, which becomes the current tab for all further browser actions.

Parameters:
- tab_id: The {{.TabIDLen}}-character id of the tab (from browser_list_tabs or browser_get_state)`

// browserSwitchTabArgs are the arguments of browser_switch_tab
// (events.BrowserSwitchTabAction).
type browserSwitchTabArgs struct {
	TabID string `json:"tab_id" jsonschema:"required,minLength={{.TabIDLen}},maxLength={{.TabIDLen}}" description:"{{.TabIDLen}}-character id of the tab to switch to (from browser_list_tabs)"`
}

var _ = events.BrowserSwitchTabAction(browserSwitchTabArgs{})

// browserSwitchTab describes browser_switch_tab, a tool of browser_tool_set.
func browserSwitchTab() base {
	return newBase[browserSwitchTabArgs]("BrowserSwitchTabTool", browserSwitchTabDescription, tabIDLimits)
}
