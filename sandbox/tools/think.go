package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/acs-project/acs/events"
)

const thinkDescription = `Use the tool to think about something. It will not obtain new information or make any changes to the repository, but just log the thought. Use it when complex reasoning or brainstorming is needed.

Common use cases:
1. When exploring a repository and discovering the source of a bug, call this tool to brainstorm several unique ways of fixing the bug, and assess which change(s) are likely to be simplest and most effective.
2. After receiving test results, use this tool to brainstorm ways to fix failing tests.
3. When planning a complex refactoring, use this tool to outline different approaches and their tradeoffs.
4. When designing a new feature, use this tool to think through architecture decisions and implementation details.
5. When debugging a complex issue, use this tool to organize your thoughts and hypotheses.

The tool simply logs your thought process for better transparency and does not execute any code or make changes.`

// thinkArgs are the arguments of think (events.ThinkAction).
type thinkArgs struct {
	Thought string `json:"thought" jsonschema:"required" description:"The thought to log."`
}

var _ = events.ThinkAction(thinkArgs{})

type thinkTool struct{ base }

func newThink(context.Context, Env, json.RawMessage) (Tool, error) {
	return &thinkTool{newBase[thinkArgs]("ThinkTool", thinkDescription, nil)}, nil
}

func (t *thinkTool) Execute(_ context.Context, a events.Action) (events.Observation, error) {
	if _, ok := a.(*events.ThinkAction); !ok {
		return nil, fmt.Errorf("think: unexpected action %T", a)
	}
	obs := &events.ThinkObservation{}
	obs.SetText("Your thought has been logged.")
	return obs, nil
}

// Instant: a thought changes nothing (see Instant).
func (t *thinkTool) Instant() bool { return true }

func init() { Register("think", newThink) }
