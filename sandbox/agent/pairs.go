package agent

import "github.com/acs-project/acs/events"

// pairResults maps each answered ActionEvent (by its event id) to the
// position of its result in evs: an ObservationEvent or UserRejectObservation
// names its action (action_id); an AgentErrorEvent only names the tool call,
// so it answers the latest unanswered action with that tool_call_id. Tool
// call ids are only unique within one LLM response (some models reuse
// "call_0"), so they never pair across responses on their own.
func pairResults(evs []events.Event) map[string]int {
	answered := map[string]int{}
	open := map[string][]string{} // tool_call_id -> unanswered action ids, oldest first
	take := func(callID, actionID string) string {
		ids := open[callID]
		for i := len(ids) - 1; i >= 0; i-- {
			if actionID == "" || ids[i] == actionID {
				id := ids[i]
				open[callID] = append(ids[:i:i], ids[i+1:]...)
				return id
			}
		}
		return ""
	}
	for i, ev := range evs {
		switch e := ev.(type) {
		case *events.ActionEvent:
			open[e.ToolCallID] = append(open[e.ToolCallID], e.ID)
		case *events.ObservationEvent:
			if id := take(e.ToolCallID, e.ActionID); id != "" {
				answered[id] = i
			}
		case *events.UserRejectObservation:
			if id := take(e.ToolCallID, e.ActionID); id != "" {
				answered[id] = i
			}
		case *events.AgentErrorEvent:
			if id := take(e.ToolCallID, ""); id != "" {
				answered[id] = i
			}
		}
	}
	return answered
}
