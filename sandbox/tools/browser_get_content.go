package tools

import (
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/browser"
)

const browserGetContentDescription = `Extract the page's visible text as readable markdown-like text (headings, paragraphs, list items, table rows).

Use this tool to read the page. At most {{.MaxChars}} characters are returned per call; when more remain, the output says so and gives the start_from_char to continue with.

Parameters:
- extract_links: Whether to include links as [text](url) (optional, default: false)
- start_from_char: Character offset to start from (optional, default: 0)`

// browserGetContentArgs are the arguments of browser_get_content
// (events.BrowserGetContentAction).
type browserGetContentArgs struct {
	ExtractLinks  bool `json:"extract_links" description:"Whether to include links in the content as [text](url). Default: false"`
	StartFromChar int  `json:"start_from_char" jsonschema:"minimum=0" description:"Character offset to start from in the page content. Default: 0"`
}

var _ = events.BrowserGetContentAction(browserGetContentArgs{})

// browserGetContent describes browser_get_content, a tool of browser_tool_set.
func browserGetContent() base {
	return newBase[browserGetContentArgs]("BrowserGetContentTool", browserGetContentDescription, struct{ MaxChars int }{browser.MaxContentChars})
}
