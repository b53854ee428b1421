package history

import (
	"fmt"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
)

// Stuck-detection thresholds (the reference's defaults).
const (
	stuckWindow            = 20
	stuckActionObservation = 4
	stuckActionError       = 3
	stuckMonologue         = 3
	stuckAlternating       = 6
)

func actionKey(a *events.ActionEvent) string {
	if a.Action == nil {
		return a.ToolName + "\x00" + a.ToolCall.Arguments
	}
	return a.ToolName + "\x00" + string(strictjson.MustMarshal(a.Action))
}

func observationKey(o *events.ObservationEvent) string {
	return o.ToolName + "\x00" + string(strictjson.MustMarshal(o.Observation))
}

// StuckCheck is the verdict of stuck detection.
type StuckCheck struct {
	// Stuck is set when the agent is stuck; Reason then says why.
	Stuck  bool
	Reason string
	// Nudge is a message for the model when it is about to get stuck;
	// NudgeKey identifies the streak it is for, so it is sent once.
	Nudge    string
	NudgeKey string
}

// Stuck looks at the branch's events since the last user message and
// reports whether the agent is stuck: the same action and observation four
// times; the same failing call more than three times; three agent messages
// in a row with nothing else; or two actions alternating with their
// observations for six rounds. At exactly three failing calls it returns a
// nudge instead, keyed by the streak's newest error.
func (h *History) Stuck() StuckCheck {
	var window []events.Event
	for i := len(h.events) - 1; i >= 0; i-- {
		ev := h.events[i]
		if m, ok := ev.(*events.MessageEvent); ok && m.Source == events.SourceUser {
			break
		}
		window = append(window, ev)
		if len(window) == stuckWindow {
			break
		}
	}
	// window is newest first.
	var acts, obs []string
	for _, ev := range window {
		switch e := ev.(type) {
		case *events.ActionEvent:
			acts = append(acts, actionKey(e))
		case *events.ObservationEvent:
			obs = append(obs, observationKey(e))
		}
	}
	allEqual := func(keys []string, n int) bool {
		if len(keys) < n {
			return false
		}
		for i := 1; i < n; i++ {
			if keys[i] != keys[0] {
				return false
			}
		}
		return true
	}
	if allEqual(acts, stuckActionObservation) && allEqual(obs, stuckActionObservation) {
		return StuckCheck{Stuck: true, Reason: "the same action gave the same observation 4 times"}
	}

	// The same failing call in a row: newest first, each error preceded by
	// its action; environment messages (such as the nudge) do not break it.
	streak, lastErr, lastAct, newestErr := 0, "", "", ""
	for i := 0; i+1 < len(window); {
		if m, ok := window[i].(*events.MessageEvent); ok && m.Source == events.SourceEnvironment {
			i++
			continue
		}
		e, ok := window[i].(*events.AgentErrorEvent)
		if !ok {
			break
		}
		if newestErr == "" {
			newestErr = e.ID
		}
		var a *events.ActionEvent
		for j := i + 1; j < len(window); j++ {
			if ae, ok := window[j].(*events.ActionEvent); ok && ae.ToolCallID == e.ToolCallID {
				a = ae // the latest action with the call id: the one this error answers
				i = j + 1
				break
			}
		}
		if a == nil || (streak > 0 && (e.Error != lastErr || actionKey(a) != lastAct)) {
			break
		}
		lastErr, lastAct = e.Error, actionKey(a)
		streak++
	}
	if streak > stuckActionError {
		return StuckCheck{Stuck: true, Reason: fmt.Sprintf("the same call failed with the same error %d times in a row", streak)}
	}
	var nudge, nudgeKey string
	if streak == stuckActionError {
		nudgeKey = newestErr
		nudge = fmt.Sprintf("You've called `%s` with the same arguments %d times in a row and got the same error each time. Look at the error, change your approach or your arguments, and do not repeat the same call.",
			firstLine(lastAct), streak)
	}

	monologue := 0
	for _, ev := range window {
		m, ok := ev.(*events.MessageEvent)
		if !ok {
			break
		}
		if m.Source == events.SourceAgent {
			monologue++
		}
	}
	if monologue >= stuckMonologue {
		return StuckCheck{Stuck: true, Reason: fmt.Sprintf("the agent sent %d messages in a row without acting", monologue)}
	}

	if len(acts) >= stuckAlternating && len(obs) >= stuckAlternating && acts[0] != acts[1] {
		alternating := true
		for i := 0; i+2 < stuckAlternating; i++ {
			if acts[i] != acts[i+2] || obs[i] != obs[i+2] {
				alternating = false
				break
			}
		}
		if alternating {
			return StuckCheck{Stuck: true, Reason: "the agent alternates between two actions with the same results"}
		}
	}
	return StuckCheck{Nudge: nudge, NudgeKey: nudgeKey}
}

func firstLine(actionKey string) string {
	for i := 0; i < len(actionKey); i++ {
		if actionKey[i] == 0 {
			return actionKey[:i]
		}
	}
	return actionKey
}
