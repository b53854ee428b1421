package client

import (
	"context"
	"net/http"

	"github.com/acs-project/acs/sandbox/agentwire"
)

// StartGoal starts a goal loop in a conversation: the agent works toward
// objective, a judge audits each run, until the objective is complete or
// maxIterations rounds ran (0: the server's default, 10; at most
// agentwire.MaxGoalIterations). The loop's progress is the conversation's goal
// (ConversationInfo.Goal) and its "goal" state-update events. A 400 for an
// empty objective, 422 for maxIterations out of range, 409 while a run or
// goal loop is in progress, 404 for an unknown conversation. It is never
// retried.
func (a *Agent) StartGoal(ctx context.Context, convID, objective string, maxIterations int) error {
	req := agentwire.StartGoalRequest{Objective: objective}
	if maxIterations != 0 {
		req.MaxIterations = &maxIterations
	}
	return a.t.call(ctx, request{method: http.MethodPost, path: "/api/conversations/" + escape(convID) + "/goal", body: &req}, nil)
}

// ResumeGoal continues a conversation's last interrupted goal loop (400
// no_resumable_goal when there is none).
func (a *Agent) ResumeGoal(ctx context.Context, convID string) error {
	return a.t.call(ctx, request{method: http.MethodPost, path: "/api/conversations/" + escape(convID) + "/goal/resume", body: struct{}{}}, nil)
}

// StopGoal stops a conversation's goal loop, if one is running, and returns
// once it has stopped (its goal then reads interrupted).
func (a *Agent) StopGoal(ctx context.Context, convID string) error {
	return a.t.call(ctx, request{method: http.MethodPost, path: "/api/conversations/" + escape(convID) + "/goal/stop", body: struct{}{}, idempotent: true}, nil)
}

// Navigate moves a conversation's head (leaf_event_id) to the event
// eventID, or to the empty tree when eventID is nil: the next turn branches
// from there. It returns the conversation's info; a 404 for an unknown
// conversation or event.
func (a *Agent) Navigate(ctx context.Context, convID string, eventID *string) (agentwire.ConversationInfo, error) {
	var out agentwire.ConversationInfo
	err := a.t.call(ctx, request{method: http.MethodPost, path: "/api/conversations/" + escape(convID) + "/navigate",
		body: &agentwire.NavigateConversationRequest{EventID: eventID}, idempotent: true}, &out)
	return out, err
}
