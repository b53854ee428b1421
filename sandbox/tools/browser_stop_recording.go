package tools

import "github.com/acs-project/acs/events"

const browserStopRecordingDescription = `Stop the recording started with browser_start_recording.

The output gives the directory holding the frames and their index.json (timestamps and URLs), and the number of frames.`

// browserStopRecording describes browser_stop_recording, a tool of browser_tool_set. It takes
// no arguments: its schema is that of events.BrowserStopRecordingAction.
func browserStopRecording() base {
	return newBase[events.BrowserStopRecordingAction]("BrowserStopRecordingTool", browserStopRecordingDescription, nil)
}
