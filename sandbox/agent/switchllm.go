package agent

import (
	"context"

	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm"
)

// SwitchLLM makes the conversation's next LLM calls use cfg (a call in
// flight finishes with the previous configuration). The configuration is
// persisted (credentials sealed as the start request's are) and shown as
// agent.llm in the conversation's info; its credentials are masked from now
// on. Metrics are kept by cfg.UsageID: the same usage_id goes on
// accumulating, a new one starts its own entry. It returns ErrClosed for a
// closed conversation.
func (c *Conversation) SwitchLLM(ctx context.Context, cfg llm.Config) error {
	c.masker.Add(secretValues(agentwire.StartConversationRequest{Agent: &agentwire.Agent{LLM: cfg}})...)
	return call(c, func() error {
		if c.closed {
			return ErrClosed
		}
		a := agentwire.Agent{}
		if c.meta.Request.Agent != nil {
			a = *c.meta.Request.Agent
		}
		prev := c.meta.Request.Agent
		a.LLM = cfg
		c.meta.Request.Agent = &a
		if err := c.writeMeta(); err != nil {
			c.meta.Request.Agent = prev
			return err
		}
		client := llm.New(cfg)
		client.OnWait = c.rateLimited
		c.client = client
		c.markChanged()
		return nil
	})
}
