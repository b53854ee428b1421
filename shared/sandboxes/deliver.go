package sandboxes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/shared/acs"
)

// MessageDigest is the digest of a user message's content as the control
// plane delivers it and as the agent server reports it back in a
// MessageEvent (both sides encode it canonically).
func MessageDigest(content []events.Content) string {
	sum := sha256.Sum256(strictjson.MustMarshal(content))
	return hex.EncodeToString(sum[:])
}

// DeliverMessage sends a user message to the conversation on the agent
// server, first recording its digest on the conversation's record (convID,
// hex or dashed), so that the events webhook recognises the MessageEvent
// the agent server reports for it as the user's. A record that cannot be
// updated is logged and the message is sent anyway (it is then stored as
// an unverified message rather than lost). The error is the send's.
func DeliverMessage(ctx context.Context, st acs.ConversationStore, client *client.Agent, convID string, msg *agentwire.SendMessageRequest) error {
	RecordDelivery(ctx, st, convID, msg.Content)
	return client.SendMessage(ctx, convID, msg)
}

// RecordDelivery records on the conversation's record that a user message
// with this content is being delivered (see DeliverMessage); a failure is
// logged.
func RecordDelivery(ctx context.Context, st acs.ConversationStore, convID string, content []events.Content) {
	id, err := acs.NormalizeID(convID)
	if err != nil {
		slog.Warn("sandboxes: record delivery: bad conversation id", "conversation", convID)
		return
	}
	digest := MessageDigest(content)
	if _, err := st.UpdateConversation(ctx, id, func(c *acs.Conversation) error {
		c.RecordDelivery(digest)
		return nil
	}); err != nil && !errors.Is(err, acs.ErrNotFound) {
		slog.Warn("sandboxes: record delivery", "conversation", id, "error", err)
	}
}

// PendingStore keeps the messages queued for conversations and the
// conversations they are delivered to.
type PendingStore interface {
	acs.ConversationStore
	acs.PendingMessageStore
}

// FlushPending delivers the messages queued under keys to the conversation,
// in order, with run=true, and removes them (delivered or not, as the
// reference does; a failure is logged).
func FlushPending(ctx context.Context, st PendingStore, client *client.Agent, convID string, keys ...string) {
	for _, key := range keys {
		msgs, err := st.ListPendingMessages(ctx, key)
		if err != nil {
			slog.Warn("sandboxes: list pending messages", "key", key, "error", err)
			continue
		}
		for _, m := range msgs {
			var content []events.Content
			if err := strictjson.Unmarshal(m.Content, &content); err != nil {
				slog.Warn("sandboxes: unreadable pending message dropped", "id", m.ID, "error", err)
			} else if err := DeliverMessage(ctx, st, client, convID, &agentwire.SendMessageRequest{Role: events.RoleUser, Content: content, Run: true}); err != nil {
				slog.Warn("sandboxes: pending message not delivered", "id", m.ID, "conversation", convID, "error", err)
			}
			if err := st.DeletePendingMessage(ctx, key, m.ID); err != nil {
				slog.Warn("sandboxes: remove pending message", "id", m.ID, "error", err)
			}
		}
	}
}
