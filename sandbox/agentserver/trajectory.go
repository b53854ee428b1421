package agentserver

import (
	"log/slog"
	"net/http"

	"github.com/acs-project/acs/sandbox/agent"
)

// trajectoryPrefix is the path of the trajectory download, before the
// conversation id. Its zip bypasses the response masker (masking compressed
// bytes could only corrupt them): WriteTrajectory masks each entry before
// compressing it.
const trajectoryPrefix = "/api/file/download-trajectory/"

// downloadTrajectory serves GET /api/file/download-trajectory/{id}: the
// conversation's persisted record (meta, state, events) as a zip with its
// secrets masked (agent.Conversation.WriteTrajectory), as an attachment
// named <id hex>.zip. An unknown conversation is 404, an id that is no UUID
// 422 (withConversation). A failure midway breaks the transfer off, so the
// client sees a broken download rather than a short archive.
func (s *Server) downloadTrajectory(w http.ResponseWriter, r *http.Request, c *agent.Conversation) {
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", `attachment; filename="`+c.ID().String()+`.zip"`)
	if err := c.WriteTrajectory(r.Context(), w, nil); err != nil {
		if r.Context().Err() == nil {
			slog.Error("trajectory download failed", "conversation", c.ID().String(), "error", s.masker.Mask(err.Error()))
		}
		panic(http.ErrAbortHandler)
	}
}
