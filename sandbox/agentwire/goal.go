package agentwire

// MaxGoalIterations is the most judge rounds a goal may ask for: ten times
// the default. Each round is a whole agent run and a judge call.
const MaxGoalIterations = 100

// StartGoalRequest is the body of POST /api/conversations/{id}/goal: the
// objective to pursue and the most judge rounds to run (default 10, at
// most MaxGoalIterations).
type StartGoalRequest struct {
	Objective     string `json:"objective" acs:"required"`
	MaxIterations *int   `json:"max_iterations" acs:"ge=1,le=100"`
}

// GoalVerdict is the judge's verdict on a goal after one round.
type GoalVerdict struct {
	// Score is the judge's probability (0..1) that the whole objective is
	// provably done.
	Score    float64 `json:"score"`
	Complete bool    `json:"complete"`
	// Missing says what remains ("" when complete).
	Missing string `json:"missing"`
}

// The goal statuses: a loop is running, it ended with the objective
// complete, it ran out of rounds (capped), or it was stopped or failed
// (interrupted; it can be resumed).
const (
	GoalRunning     = "running"
	GoalComplete    = "complete"
	GoalCapped      = "capped"
	GoalInterrupted = "interrupted"
)

// GoalStatus is the live status of a conversation's goal loop: the value of
// the ConversationStateUpdateEvents with key "goal" and ConversationInfo's
// goal field.
type GoalStatus struct {
	Active        bool         `json:"active"`
	Status        string       `json:"status"`
	Iteration     int          `json:"iteration"`
	MaxIterations int          `json:"max_iterations"`
	Objective     string       `json:"objective"`
	Verdict       *GoalVerdict `json:"verdict" acs:"emitnull"`
}

// NavigateConversationRequest is the body of POST
// /api/conversations/{id}/navigate: the event to make the conversation's
// head, or null for the empty tree.
type NavigateConversationRequest struct {
	EventID *string `json:"event_id" acs:"emitnull"`
}
