package tools

import "github.com/acs-project/acs/events"

const browserStartRecordingDescription = `Start recording the browser session as a screencast: the frames of the current tab (following tab switches) are saved as images, with an index of their timestamps and URLs.

Call browser_stop_recording to finish and get the directory holding the recording.`

// browserStartRecording describes browser_start_recording, a tool of browser_tool_set. It takes
// no arguments: its schema is that of events.BrowserStartRecordingAction.
func browserStartRecording() base {
	return newBase[events.BrowserStartRecordingAction]("BrowserStartRecordingTool", browserStartRecordingDescription, nil)
}
