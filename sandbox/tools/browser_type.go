package tools

import "github.com/acs-project/acs/events"

const browserTypeDescription = `Type text into an input field, textarea or contenteditable element.

The element is focused and cleared, then the text is typed (input events fire as if a user typed). For a select element, the option with that text or value is chosen.

Parameters:
- index: The index of the element to type into (from browser_get_state)
- text: The text to type

Important: only use indices from your latest browser_get_state output. To submit a form, click its submit button afterwards.`

// browserTypeArgs are the arguments of browser_type
// (events.BrowserTypeAction).
type browserTypeArgs struct {
	Index int    `json:"index" jsonschema:"required,minimum=0" description:"The index of the input element (from browser_get_state)"`
	Text  string `json:"text" jsonschema:"required" description:"The text to type"`
}

var _ = events.BrowserTypeAction(browserTypeArgs{})

// browserType describes browser_type, a tool of browser_tool_set.
func browserType() base {
	return newBase[browserTypeArgs]("BrowserTypeTool", browserTypeDescription, nil)
}
