package client_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentserver"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/agentwire/llmconfig"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/acs"
)

// TestAgentMetadataProfilesAndSwitching drives the agent server's
// metadata, profile and model-switching routes through client.Agent.
func TestAgentMetadataProfilesAndSwitching(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	llm := llmtest.New(llmtest.Reply{Text: "Done.", Repeat: true})
	t.Cleanup(llm.Close)
	srv, err := agentserver.New(ctx, agentserver.Config{SessionKeys: []string{sessionKey}, SecretKey: "meta-test-secret",
		ConversationsDir: filepath.Join(dir, "conversations"), WorkspaceDir: filepath.Join(dir, "workspace"),
		LLMModel: "openai/test-model", LLMModels: []string{"anthropic/claude-x"}, LLMBaseURL: llm.URL,
		BuildSHA: "unknown", BuildRef: "unknown"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close() })
	a := client.NewAgent(hs.URL, sessionKey)

	// Metadata.
	providers, err := a.LLMProviders(ctx)
	if err != nil || !reflect.DeepEqual(providers, []string{"anthropic", "openai"}) {
		t.Fatalf("providers %v %v", providers, err)
	}
	models, err := a.LLMModels(ctx, "openai")
	if err != nil || !reflect.DeepEqual(models, []string{"openai/llmtest", "openai/test-model"}) {
		t.Fatalf("models %v %v", models, err)
	}
	verified, err := a.VerifiedLLMModels(ctx)
	if err != nil || !reflect.DeepEqual(verified, map[string][]string{"anthropic": {"claude-x"}, "openai": {"test-model"}}) {
		t.Fatalf("verified %v %v", verified, err)
	}
	if s, err := a.AgentSettingsSchema(ctx); err != nil || s.ModelName != "AgentSettings" {
		t.Fatalf("agent schema %+v %v", s, err)
	}
	if s, err := a.ConversationSettingsSchema(ctx); err != nil || s.ModelName != "ConversationSettings" {
		t.Fatalf("conversation schema %+v %v", s, err)
	}
	if st, err := a.VSCodeStatus(ctx); err != nil || st.Enabled || st.Running {
		t.Fatalf("vscode %+v %v", st, err)
	}
	if _, err := a.DesktopURL(ctx); !errors.Is(err, acs.ErrSandboxFailed) {
		t.Fatalf("desktop without one: %v", err)
	}

	// Profiles.
	key := "sk-client-profile-key-42"
	cfg := llmconfig.Default()
	cfg.Model, cfg.BaseURL, cfg.APIKey, cfg.NumRetries = "openai/profile-model", &llm.URL, &key, 0
	if m, err := a.SaveProfile(ctx, "main", &agentwire.SaveProfileRequest{LLM: cfg}); err != nil || m.Name != "main" {
		t.Fatalf("save %+v %v", m, err)
	}
	if _, err := a.ActivateProfile(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	if m, err := a.RenameProfile(ctx, "main", "primary"); err != nil || m.Name != "primary" {
		t.Fatalf("rename %+v %v", m, err)
	}
	list, err := a.ListProfiles(ctx)
	if err != nil || len(list.Profiles) != 1 || list.Profiles[0].Name != "primary" || !list.Profiles[0].APIKeySet ||
		list.ActiveProfile == nil || *list.ActiveProfile != "primary" {
		t.Fatalf("list %+v %v", list, err)
	}
	hidden, err := a.GetProfile(ctx, "primary", "")
	if err != nil || !hidden.APIKeySet || string(hidden.Config) == "" || contains(hidden.Config, key) {
		t.Fatalf("get %s %v", hidden.Config, err)
	}
	if shown, err := a.GetProfile(ctx, "primary", "plaintext"); err != nil || !contains(shown.Config, key) {
		t.Fatalf("get plaintext %s %v", shown.Config, err)
	}
	if _, err := a.GetProfile(ctx, "main", ""); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("old name: %v", err)
	}

	// Switching a conversation's LLM.
	info, err := a.CreateConversation(ctx, startRequestFor(t, llm, filepath.Join(dir, "workspace")))
	if err != nil {
		t.Fatal(err)
	}
	other := llmconfig.Default()
	other.Model, other.BaseURL, other.NumRetries, other.UsageID = "openai/switched", &llm.URL, 0, "agent"
	if err := a.SwitchLLM(ctx, info.ID, other); err != nil {
		t.Fatal(err)
	}
	if got, err := a.GetConversation(ctx, info.ID); err != nil || got.Agent.LLM.Model != "openai/switched" {
		t.Fatalf("after switch_llm: %v %v", got.Agent.LLM.Model, err)
	}
	if err := a.SendMessage(ctx, info.ID, message("hi")); err != nil {
		t.Fatal(err)
	}
	if err := llm.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if m := llm.Requests()[0].Model; m != "switched" {
		t.Fatalf("the LLM call used %q", m)
	}
	if err := a.SwitchProfile(ctx, info.ID, "primary"); err != nil {
		t.Fatal(err)
	}
	if !testwait.Until(10*time.Second, func() bool {
		got, err := a.GetConversation(ctx, info.ID)
		return err == nil && got.Agent.LLM.Model == "openai/profile-model" && got.ExecutionStatus != agentwire.StatusRunning
	}) {
		t.Fatal("switch_profile not shown")
	}
	if err := a.SwitchProfile(ctx, info.ID, "ghost"); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("unknown profile: %v", err)
	}
	if err := a.SwitchACPModel(ctx, info.ID, "x"); !errors.Is(err, acs.ErrInvalid) {
		t.Fatalf("switch_acp_model: %v", err)
	}
	if err := a.SwitchLLM(ctx, "00000000-0000-0000-0000-000000000009", other); !errors.Is(err, acs.ErrNotFound) {
		t.Fatalf("unknown conversation: %v", err)
	}
	if _, err := a.DeleteProfile(ctx, "primary"); err != nil {
		t.Fatal(err)
	}
	if list, err := a.ListProfiles(ctx); err != nil || len(list.Profiles) != 0 || list.ActiveProfile != nil {
		t.Fatalf("after delete %+v %v", list, err)
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }
