package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/acs-project/acs/events"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// observation converts a tool result: a first text block "[Tool '<name>'
// executed.]", then each text item (masked), each image as a data: URL, and
// other content (audio, resources) described in text. When the result has
// no content but structured content, that is shown as JSON text. IsError is
// the server's isError.
func observation(tool string, res *sdk.CallToolResult, mask func(string) string) *events.MCPToolObservation {
	obs := &events.MCPToolObservation{ToolName: tool}
	obs.IsError = res.IsError
	obs.Content = []events.Content{events.TextItem(fmt.Sprintf("[Tool '%s' executed.]", tool))}
	text := func(s string) { obs.Content = append(obs.Content, events.TextItem(mask(s))) }
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			text(c.Text)
		case *sdk.ImageContent:
			mime := c.MIMEType
			if mime == "" {
				mime = "image/png"
			}
			obs.Content = append(obs.Content, &events.ImageContent{Type: "image",
				ImageURLs: []string{"data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(c.Data)}})
		case *sdk.AudioContent:
			text(fmt.Sprintf("[audio content (%s, %d bytes) omitted]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			text(fmt.Sprintf("[resource link] %s %s", c.URI, c.Description))
		case *sdk.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Text != "":
				text(fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			default:
				text(fmt.Sprintf("[resource %s (%s, %d bytes) omitted]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			if b, err := json.Marshal(c); err == nil {
				text(string(b))
			}
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			text(string(b))
		}
	}
	return obs
}

// errorObservation is the observation of a call that did not produce a
// result (bad arguments, timeout, server gone). msg must already be safe.
func errorObservation(tool, msg string) *events.MCPToolObservation {
	obs := &events.MCPToolObservation{ToolName: tool}
	obs.IsError = true
	obs.SetText(fmt.Sprintf("Error calling MCP tool '%s': %s", tool, msg))
	return obs
}
