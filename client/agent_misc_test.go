package client_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentwire"
)

// TestAgentGetBashEvents runs a command through the typed client and reads
// its events back in one batch, in the order asked, nil for unknown ids.
func TestAgentGetBashEvents(t *testing.T) {
	ag, _, _ := newAgentServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := ag.ExecuteBash(ctx, &agentwire.ExecuteBashRequest{Command: "echo batch", Timeout: 30})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ag.GetBashEvents(ctx, out.ID, strings.Repeat("f", 32), out.CommandID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[1] != nil || got[0] == nil || got[2] == nil {
		t.Fatalf("got %d items: %s", len(got), got)
	}
	var first, third struct{ Kind, ID, Stdout string }
	if err := json.Unmarshal(got[0], &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got[2], &third); err != nil {
		t.Fatal(err)
	}
	if first.Kind != "BashOutput" || first.ID != out.ID || first.Stdout != "batch\n" {
		t.Fatalf("first = %s", got[0])
	}
	if third.Kind != "BashCommand" || third.ID != out.CommandID {
		t.Fatalf("third = %s", got[2])
	}
	if got, err := ag.GetBashEvents(ctx); err != nil || len(got) != 0 {
		t.Fatalf("no ids: %v %v", got, err)
	}
	var ce *client.Error
	if _, err := ag.GetBashEvents(ctx, make([]string, 101)...); !errors.As(err, &ce) || ce.Status != 422 {
		t.Fatalf("101 ids: %v", err)
	}
}

// TestAgentDownloadTrajectory downloads a finished conversation's
// trajectory through the typed client: a zip holding its meta, state and
// every event, the LLM key masked; an unknown conversation is a 404.
func TestAgentDownloadTrajectory(t *testing.T) {
	ag, _, llm := newAgentServer(t)
	ctx := ctxFor(t, time.Minute)
	info, err := ag.CreateConversation(ctx, startRequestFor(t, llm, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if err := ag.SendMessage(ctx, info.ID, message("hello")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the run to finish", func() bool {
		c, err := ag.GetConversation(ctx, info.ID)
		return err == nil && c.ExecutionStatus == "finished"
	})
	n, err := ag.CountEvents(ctx, info.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ag.DownloadTrajectory(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("not a zip: %v", err)
	}
	names := map[string]bool{}
	evCount := 0
	for _, f := range zr.File {
		names[f.Name] = true
		if strings.HasPrefix(f.Name, "events/") {
			evCount++
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(rc)
		rc.Close()
		if bytes.Contains(data, []byte("sk-test")) {
			t.Errorf("%s holds the LLM key", f.Name)
		}
	}
	if !names["meta.json"] || !names["state.json"] || evCount != n || n == 0 {
		t.Fatalf("entries %v: %d events, want %d", names, evCount, n)
	}
	var ce *client.Error
	if _, err := ag.DownloadTrajectory(ctx, "7d4b1e7c-1f0a-4a57-9e61-2a8c4f3b9d10"); !errors.As(err, &ce) || ce.Status != 404 {
		t.Fatalf("unknown conversation: %v", err)
	}
}

// TestAgentInstalledSkills manages an installed skill through the typed
// client: install, list, disable, refresh, uninstall; a skill that is not
// installed is a 404 for refresh.
func TestAgentInstalledSkills(t *testing.T) {
	ag, _, _ := newAgentServer(t)
	ctx := ctxFor(t, time.Minute)
	src := filepath.Join(t.TempDir(), "notes")
	write := func(body string) {
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, "SKILL.md"), []byte("---\nname: note-taking\ndescription: "+body+"\n---\nTake notes.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("first")
	sk, err := ag.InstallSkill(ctx, agentwire.InstallSkillRequest{Source: src})
	if err != nil || sk.Name != "note-taking" || !sk.Enabled || sk.Description != "first" {
		t.Fatalf("install: %+v %v", sk, err)
	}
	if _, err := ag.InstallSkill(ctx, agentwire.InstallSkillRequest{Source: src}); client.StatusOf(err) != 409 {
		t.Fatalf("install twice: %v", err)
	}
	if err := ag.SetSkillEnabled(ctx, "note-taking", false); err != nil {
		t.Fatal(err)
	}
	write("second")
	sk, err = ag.RefreshSkill(ctx, "note-taking")
	if err != nil || sk.Description != "second" || sk.Enabled {
		t.Fatalf("refresh: %+v %v", sk, err)
	}
	if got, err := ag.InstalledSkill(ctx, "note-taking"); err != nil || got.Description != "second" {
		t.Fatalf("get: %+v %v", got, err)
	}
	list, err := ag.InstalledSkills(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "note-taking" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := ag.UninstallSkill(ctx, "note-taking"); err != nil {
		t.Fatal(err)
	}
	if _, err := ag.RefreshSkill(ctx, "note-taking"); client.StatusOf(err) != 404 {
		t.Fatalf("refresh after uninstall: %v", err)
	}
	if _, err := ag.InstalledSkill(ctx, "Not_A_Name"); client.StatusOf(err) != 422 {
		t.Fatalf("bad name: %v", err)
	}
}
