package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/acs-project/acs/events"
)

const finishDescription = `Signals the completion of the current task or conversation.

Use this tool when:
- You have successfully completed the user's requested task
- You cannot proceed further due to technical limitations or missing information

The message should include:
- A clear summary of actions taken and their results
- Any next steps for the user
- Explanation if you're unable to complete the task
- Any follow-up questions if more information is needed`

// finishArgs are the arguments of finish (events.FinishAction).
type finishArgs struct {
	Message string `json:"message" jsonschema:"required" description:"Final message to send to the user"`
}

var _ = events.FinishAction(finishArgs{})

type finishTool struct{ base }

func newFinish(context.Context, Env, json.RawMessage) (Tool, error) {
	return &finishTool{newBase[finishArgs]("FinishTool", finishDescription, nil)}, nil
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

func init() { Register("finish", newFinish) }
