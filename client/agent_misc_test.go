package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/sandbox/bashapi"
)

// TestAgentGetBashEvents runs a command through the typed client and reads
// its events back in one batch, in the order asked, nil for unknown ids.
func TestAgentGetBashEvents(t *testing.T) {
	ag, _, _ := newAgentServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := ag.ExecuteBash(ctx, &bashapi.ExecuteBashRequest{Command: "echo batch", Timeout: 30})
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
