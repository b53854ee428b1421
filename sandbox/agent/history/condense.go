package history

import "github.com/acs-project/acs/events"

// Limits are a summarizing condenser's settings that decide when to
// condense and what to keep.
type Limits struct {
	// MaxSize is the longest condensed view kept without condensing.
	MaxSize int
	// KeepFirst is how many events at the view's start are never forgotten.
	KeepFirst int
	// MaxTokens is the most prompt tokens kept without condensing; nil
	// sets no limit.
	MaxTokens *int
	// MinimumProgress is the smallest share of the view a soft
	// condensation must forget.
	MinimumProgress float64
}

// Plan is what a condensation forgets: the events Start to End of the
// condensed view. Its summary goes at Offset.
type Plan struct {
	// Reason is why it condenses: "request", "tokens" or "events".
	Reason     string
	Start, End int
	Offset     int
}

// CondensationPlan decides whether to condense before the next LLM call,
// and what to forget. An unhandled CondensationRequest or more prompt
// tokens than the limit always condense: when no cut makes enough
// progress, the whole view is summarized. A view longer than MaxSize
// condenses only when forgetting makes enough progress. A cut never
// separates a tool call from its result. promptTokens is the last LLM
// call's prompt size.
func (h *History) CondensationPlan(l Limits, promptTokens int64) (Plan, bool) {
	view := condensed(h.events)
	reason, hard, target := "", false, 0
	switch {
	case h.CondensationRequested():
		reason, hard, target = "request", true, len(view)/2
	case l.MaxTokens != nil && promptTokens > int64(*l.MaxTokens):
		reason, hard, target = "tokens", true, len(view)/2
	case len(view) > l.MaxSize:
		reason, target = "events", l.MaxSize/2
	default:
		return Plan{}, false
	}
	cuts := validCuts(view)
	start := min(l.KeepFirst, len(view))
	for start < len(view) && !cuts[start] {
		start++
	}
	tail := max(target-start-1, 1)
	end := max(len(view)-tail, start)
	for end < len(view) && !cuts[end] {
		end++
	}
	progress := 0.0
	if len(view) > 0 {
		progress = float64(end-start) / float64(len(view))
	}
	if end-start <= 0 || progress < l.MinimumProgress {
		if !hard || len(view) == 0 {
			return Plan{}, false
		}
		// Hard context reset: summarize everything.
		return Plan{Reason: reason, Start: 0, End: len(view), Offset: 0}, true
	}
	return Plan{Reason: reason, Start: start, End: end, Offset: start}, true
}

// Forgotten returns the events of the condensed view that p forgets. It
// reports false when the view is too short for p.
func (h *History) Forgotten(p Plan) ([]events.Event, bool) {
	view := condensed(h.events)
	if p.End > len(view) {
		return nil, false
	}
	return view[p.Start:p.End], true
}

// CondensationRequested reports whether the branch holds a
// CondensationRequest no Condensation followed.
func (h *History) CondensationRequested() bool {
	requested := false
	for _, ev := range h.events {
		switch ev.(type) {
		case *events.CondensationRequest:
			requested = true
		case *events.Condensation:
			requested = false
		}
	}
	return requested
}

// condensed applies every Condensation in log order: the events it forgot
// leave the view and its summary enters at summary_offset, as a
// CondensationSummaryEvent with id "<condensation id>-summary", which a
// later condensation may forget in turn. Requests are markers, not view.
func condensed(history []events.Event) []events.Event {
	var view []events.Event
	for _, ev := range history {
		switch e := ev.(type) {
		case *events.Condensation:
			forgotten := make(map[string]bool, len(e.ForgottenEventIDs))
			for _, id := range e.ForgottenEventIDs {
				forgotten[id] = true
			}
			kept := view[:0:0]
			for _, v := range view {
				if !forgotten[v.EventBase().ID] {
					kept = append(kept, v)
				}
			}
			view = kept
			if e.Summary != nil && e.SummaryOffset != nil {
				at := min(*e.SummaryOffset, len(view))
				sum := &events.CondensationSummaryEvent{Base: events.Base{ID: e.ID + "-summary", Timestamp: e.Timestamp,
					Source: events.SourceEnvironment}, Summary: *e.Summary}
				view = append(view[:at:at], append([]events.Event{sum}, view[at:]...)...)
			}
		case *events.CondensationRequest:
		default:
			view = append(view, ev)
		}
	}
	return view
}

// validCuts marks the indexes at which the view may be cut without
// separating a tool call from its result.
func validCuts(view []events.Event) []bool {
	pairs := pairResults(view)
	ok := make([]bool, len(view)+1)
	ok[0] = true
	// closes[i] counts the calls answered at position i.
	closes := make([]int, len(view))
	for _, r := range pairs {
		closes[r]++
	}
	open := 0
	for i, ev := range view {
		if a, isAction := ev.(*events.ActionEvent); isAction {
			if _, answered := pairs[a.ID]; answered {
				open++
			} else {
				open += 1 << 20 // never answered: no cut after it
			}
		}
		open -= closes[i]
		ok[i+1] = open == 0
	}
	return ok
}
