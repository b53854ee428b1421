package acs

import (
	"fmt"
	"time"
)

// Groups reports whether the strategy places conversations together on
// the owner's sandboxes. NO_GROUPING and "" do not.
func (g GroupingStrategy) Groups() bool { return g != NoGrouping && g != "" }

// PlaceRequest is what placement needs of a start.
type PlaceRequest struct {
	// Owner is the user starting the conversation.
	Owner string
	// SandboxID is the explicit sandbox_id, "" for none.
	SandboxID string
}

// Decision is where a start goes and why.
type Decision struct {
	// Sandbox is the chosen sandbox, nil for a new one.
	Sandbox *Sandbox
	// Reason is why, for the start task's record.
	Reason string
	// Refusal, when set, is why the start cannot be placed: a message for
	// the user. Sandbox is then nil.
	Refusal string
	// Explicit reports that the request named the sandbox.
	Explicit bool
	// Grouping reports that the owner's strategy groups conversations: a
	// grouped conversation gets a working directory of its own.
	Grouping bool
	// Max caps the conversations on Sandbox when its slot is reserved.
	// It is 0, no cap, for an explicit sandbox.
	Max int
}

// NeedsRoom reports whether the decision needs room under the owner's
// cap on running sandboxes: a new sandbox, or a paused one to resume.
func (d Decision) NeedsRoom() bool {
	if d.Refusal != "" {
		return false
	}
	return d.Sandbox == nil || d.Sandbox.Status == SandboxPaused
}

// Place decides where a start goes. It is pure: the caller reserves the
// slot, and places again without a sandbox whose reservation lost a race.
//
// An explicit sandbox_id is chosen when cands holds it, the owner's and
// startable, without a capacity check. Otherwise the owner's grouping
// strategy chooses among cands, RUNNING or STARTING with fewer than
// settings.MaxConversationsPerSandbox conversations. Ties keep the order
// of cands, newest first as the store lists them. No choice means a new
// sandbox.
func Place(settings Settings, cands []Sandbox, req PlaceRequest) Decision {
	grouping := settings.SandboxGroupingStrategy.Groups()
	if req.SandboxID != "" {
		return placeExplicit(cands, req, grouping)
	}
	max := settings.MaxConversationsPerSandbox
	if max == 0 {
		max = DefaultMaxConversationsPerSandbox
	}
	d := Decision{Grouping: grouping, Max: max}
	strategy := settings.SandboxGroupingStrategy
	if !grouping {
		d.Reason = "NO_GROUPING: a new sandbox for this conversation"
		return d
	}
	var avail []Sandbox
	for _, s := range cands {
		if (s.Status == SandboxRunning || s.Status == SandboxStarting) && (max <= 0 || s.ConversationCount() < max) {
			avail = append(avail, s)
		}
	}
	if len(avail) == 0 {
		d.Reason = fmt.Sprintf("%s: no RUNNING sandbox with fewer than %d conversations; a new sandbox", strategy, max)
		return d
	}
	pick := pickSandbox(strategy, avail)
	chosen := avail[pick]
	d.Sandbox = &chosen
	d.Reason = fmt.Sprintf("%s: "+strategyReasons[strategy], strategy, pickDetail(strategy, avail, pick))
	return d
}

// placeExplicit is Place for an explicit sandbox_id.
func placeExplicit(cands []Sandbox, req PlaceRequest, grouping bool) Decision {
	d := Decision{Explicit: true, Grouping: grouping}
	for _, s := range cands {
		if s.ID != req.SandboxID || s.OwnerID != req.Owner {
			continue
		}
		if s.Status.ReadOnly() {
			d.Refusal = fmt.Sprintf("Sandbox %s is %s and not startable; choose another sandbox or start without sandbox_id", s.ID, s.Status)
			return d
		}
		d.Sandbox = &s
		d.Reason = "explicit sandbox_id (no capacity check)"
		return d
	}
	d.Refusal = "Sandbox not found: " + req.SandboxID
	return d
}

// pickSandbox is the index in avail the strategy chooses.
func pickSandbox(strategy GroupingStrategy, avail []Sandbox) int {
	pick := 0
	for i, s := range avail {
		switch strategy {
		case GroupByNewest:
			if s.CreatedAt.After(avail[pick].CreatedAt) {
				pick = i
			}
		case LeastRecentlyUsed:
			if s.LastUsedAt.Before(avail[pick].LastUsedAt) {
				pick = i
			}
		case FewestConversations:
			if s.ConversationCount() < avail[pick].ConversationCount() {
				pick = i
			}
		}
	}
	return pick
}

// strategyReasons say why a strategy chose a sandbox.
var strategyReasons = map[GroupingStrategy]string{
	GroupByNewest:       "the newest available sandbox (created %s)",
	LeastRecentlyUsed:   "the least recently used available sandbox (last used %s)",
	FewestConversations: "the available sandbox with the fewest conversations (%s)",
	AddToAny:            "the first available sandbox (%s)",
}

// pickDetail is the detail of the reason for choosing avail[pick].
func pickDetail(strategy GroupingStrategy, avail []Sandbox, pick int) string {
	chosen := avail[pick]
	switch strategy {
	case GroupByNewest:
		return chosen.CreatedAt.UTC().Format(time.RFC3339)
	case LeastRecentlyUsed:
		return chosen.LastUsedAt.UTC().Format(time.RFC3339)
	case FewestConversations:
		return fmt.Sprintf("%d", chosen.ConversationCount())
	}
	return fmt.Sprintf("%d of %d", pick+1, len(avail))
}
