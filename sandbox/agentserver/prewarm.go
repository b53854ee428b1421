package agentserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agent"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/gitreview"
)

// prewarmTools are the tools the throwaway conversation of Prewarm is
// built with: the control plane's default set.
var prewarmTools = []string{"terminal", "file_editor", "task_tracker"}

// Prewarm creates a throwaway conversation in a temporary directory, with
// its working directory made a git repository, encodes its info, and
// removes it all: the first-use costs of a conversation (the JSON codecs'
// type caches, the tools' and the event log's first set-up, a first git
// init) are paid here instead of by the first conversation a user starts.
// A fresh agent server's first conversation took twice as long as later
// ones. The conversation is never registered, reported to a webhook or
// visible on any route; a failure is logged and changes nothing.
func (s *Server) Prewarm(ctx context.Context) {
	dir, err := os.MkdirTemp("", "acs-prewarm-")
	if err != nil {
		slog.Warn("agent server: prewarm", "error", err)
		return
	}
	defer os.RemoveAll(dir)
	work := filepath.Join(dir, "work")
	tools := make([]agentwire.ToolRef, 0, len(prewarmTools))
	for _, name := range prewarmTools {
		tools = append(tools, agentwire.ToolRef{Name: name, Params: []byte("{}")})
	}
	raw, err := json.Marshal(agentwire.StartConversationRequest{
		Agent:     &agentwire.Agent{Kind: "Agent", Tools: tools},
		Workspace: agentwire.Workspace{WorkingDir: work}, MaxIterations: 1,
	})
	if err != nil {
		slog.Warn("agent server: prewarm", "error", err)
		return
	}
	var req agentwire.StartConversationRequest
	if err := strictjson.Unmarshal(raw, &req); err != nil {
		slog.Warn("agent server: prewarm", "error", err)
		return
	}
	c, err := agent.Create(ctx, uuid.New(), req, agent.Options{Dir: filepath.Join(dir, "conversation"),
		Masker: s.masker, Cipher: s.cipher, SkillDirs: s.cfg.SkillDirs})
	if err != nil {
		slog.Warn("agent server: prewarm", "error", err)
		return
	}
	defer c.Close()
	if err := gitreview.Init(ctx, work); err != nil {
		slog.Info("agent server: prewarm: git init", "error", err)
	}
	if _, err := json.Marshal(c.Info()); err != nil {
		slog.Warn("agent server: prewarm", "error", err)
	}
}
