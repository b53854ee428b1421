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

const finishDescription = `Signals the completion of the current task or conversation.

Use this tool when:
- You have successfully completed the user's requested task
- You cannot proceed further due to technical limitations or missing information

The message should include:
- A clear summary of actions taken and their results
- Any next steps for the user
- Explanation if you're unable to complete the task
- Any follow-up questions if more information is needed`

type thinkTool struct{ base }

func newThink(context.Context, Env, json.RawMessage) (Tool, error) {
	return &thinkTool{base{kind: "ThinkTool", description: thinkDescription,
		params: object([]string{"thought"}, map[string]any{"thought": prop("string", "The thought to log.")})}}, nil
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

type finishTool struct{ base }

func newFinish(context.Context, Env, json.RawMessage) (Tool, error) {
	return &finishTool{base{kind: "FinishTool", description: finishDescription,
		params: object([]string{"message"}, map[string]any{"message": prop("string", "Final message to send to the user")})}}, nil
}

func (t *finishTool) Execute(_ context.Context, a events.Action) (events.Observation, error) {
	fa, ok := a.(*events.FinishAction)
	if !ok {
		return nil, fmt.Errorf("finish: unexpected action %T", a)
	}
	obs := &events.FinishObservation{}
	obs.SetText(fa.Message)
	return obs, nil
}

func init() {
	Register("think", newThink)
	Register("finish", newFinish)
}
