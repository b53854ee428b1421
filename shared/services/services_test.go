package services_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/services"
)

// queue is a queue that accepts every message.
type queue struct{ acs.Queue }

func (queue) Send(context.Context, acs.Message, time.Duration) error { return nil }

// A set restricted to a route's needs keeps the adapters the route
// declares and fails loudly on the others.
func TestOnlyFailsOnUndeclaredAdapters(t *testing.T) {
	set := services.Build(services.Adapters{Queue: queue{}})
	ctx := context.Background()
	declared := set.Only("start_conversation", config.NeedQueue)
	if err := declared.Starts.Queue.Send(ctx, acs.Message{}, 0); err != nil {
		t.Errorf("declared queue: %v", err)
	}
	if _, err := declared.Sandboxes.Runtime.Status(ctx, "sb"); !errors.Is(err, services.ErrUnwired) {
		t.Errorf("undeclared runtime: %v, want ErrUnwired", err)
	}
	if err := declared.Sandboxes.Blobs.Delete(ctx, "k"); !errors.Is(err, services.ErrUnwired) {
		t.Errorf("undeclared blobs: %v, want ErrUnwired", err)
	}
	undeclared := set.Only("get_me", 0)
	if err := undeclared.Starts.Queue.Send(ctx, acs.Message{}, 0); !errors.Is(err, services.ErrUnwired) {
		t.Errorf("undeclared queue: %v, want ErrUnwired", err)
	}
	if set.Starts.Queue.Send(ctx, acs.Message{}, 0) != nil {
		t.Error("Only changed the set it restricts")
	}
}

// Every service of a set shares one lifecycle.
func TestBuildSharesTheLifecycle(t *testing.T) {
	set := services.Build(services.Adapters{})
	if set.Conversations.Life != set.Sandboxes || set.Starts.Lifecycle != set.Sandboxes {
		t.Error("the services do not share the set's lifecycle")
	}
}
