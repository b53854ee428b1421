package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// The README's example (compiled, not run: it needs a server).
func example(ctx context.Context, apiKey string) error {
	c := client.New("http://localhost:3000", apiKey) // the V1 API, as the key's user
	task, err := c.StartConversationAndWait(ctx, &v1wire.StartRequest{
		InitialMessage: &agentwire.SendMessageRequest{Role: "user", Run: true,
			Content: []events.Content{&events.TextContent{Text: "Create hello.txt"}}},
	}, time.Second) // streams the start until READY (polling each second if the stream ends early; ERROR: client.ErrStartFailed)
	if err != nil {
		return err
	}
	id := *task.AppConversationID
	for ev, err := range c.Events(ctx, id, client.Filter{"kind": {"ActionEvent"}}) { // follows next_page_id
		if err != nil {
			return err
		}
		fmt.Println(ev.Kind(), ev.EventBase().ID)
	}
	conv, err := c.GetConversation(ctx, id)
	if errors.Is(err, acs.ErrNotFound) { // error answers are *client.Error wrapping the domain *acs.Error
		return err
	}
	agent, err := client.AgentOf(conv) // the sandbox's agent server, with its session key
	if err != nil {
		return err
	}
	for ev, err := range agent.Subscribe(ctx, id, client.SubscribeOptions{All: true}) { // the events WebSocket
		if err != nil {
			return err
		}
		fmt.Println(ev.Kind())
	}
	return nil
}

var _ = example
