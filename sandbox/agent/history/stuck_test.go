package history

import (
	"fmt"
	"strings"
	"testing"

	"github.com/acs-project/acs/events"
)

// rounds returns n actions running command, each with its observation
// showing output; ids start with prefix.
func rounds(prefix string, n int, command, output string) []events.Event {
	var out []events.Event
	for i := range n {
		id := fmt.Sprintf("%s%d", prefix, i)
		out = append(out, run("a"+id, "c"+id, "r"+id, command), observe("o"+id, "c"+id, "a"+id, output))
	}
	return out
}

// failures returns n actions running command, each failing with message.
func failures(prefix string, n int, command, message string) []events.Event {
	var out []events.Event
	for i := range n {
		id := fmt.Sprintf("%s%d", prefix, i)
		out = append(out, run("a"+id, "c"+id, "r"+id, command), failed("e"+id, "c"+id, message))
	}
	return out
}

func seq(parts ...[]events.Event) []events.Event {
	var out []events.Event
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func one(evs ...events.Event) []events.Event { return evs }

func TestStuck(t *testing.T) {
	start := one(user("u0", "fix it"))
	var alternating []events.Event
	for i := range 6 {
		cmd, out := "ls", "a.txt"
		if i%2 == 1 {
			cmd, out = "pwd", "/work"
		}
		alternating = append(alternating, rounds(fmt.Sprintf("x%d-", i), 1, cmd, out)...)
	}
	tests := []struct {
		name         string
		log          []events.Event
		wantReason   string // "" when not stuck
		wantNudge    string // a prefix of the nudge, "" for none
		wantNudgeKey string
	}{
		{name: "nothing since the user spoke", log: start},
		{name: "the same action and observation four times", log: seq(start, rounds("s", 4, "ls", "a.txt")),
			wantReason: "the same action gave the same observation 4 times"},
		{name: "three times", log: seq(start, rounds("s", 3, "ls", "a.txt"))},
		{name: "a user message starts over", log: seq(start, rounds("s", 4, "ls", "a.txt"), one(user("u1", "again")))},
		{name: "a different observation", log: seq(start, rounds("s", 3, "ls", "a.txt"), rounds("t", 1, "ls", "b.txt"))},
		{name: "the third failing call gets a nudge", log: seq(start, failures("f", 3, "make", "boom")),
			wantNudge: "You've called `terminal` with the same arguments 3 times in a row", wantNudgeKey: "ef2"},
		{name: "the fourth failing call is stuck, the nudge between them counts for nothing",
			log: seq(start, failures("f", 3, "make", "boom"), one(envSays("n1", "change your approach")),
				failures("g", 1, "make", "boom")),
			wantReason: "the same call failed with the same error 4 times in a row"},
		{name: "different errors", log: seq(start, failures("f", 2, "make", "boom"), failures("g", 1, "make", "bang"))},
		{name: "different calls", log: seq(start, failures("f", 2, "make", "boom"), failures("g", 1, "make all", "boom"))},
		{name: "three agent messages in a row",
			log:        seq(start, one(agentSays("m1", "a"), agentSays("m2", "b"), agentSays("m3", "c"))),
			wantReason: "the agent sent 3 messages in a row without acting"},
		{name: "two agent messages", log: seq(start, one(agentSays("m1", "a"), agentSays("m2", "b")))},
		{name: "two actions alternating for six rounds", log: seq(start, alternating),
			wantReason: "the agent alternates between two actions with the same results"},
		{name: "five rounds", log: seq(start, alternating[2:])},
		{name: "on another branch", log: seq(start, rounds("s", 4, "ls", "a.txt"), one(navigate("n1", ptr("u0"))))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f fixture
			f.add(tc.log...)
			got := f.h.Stuck()
			if got.Stuck != (tc.wantReason != "") || got.Reason != tc.wantReason {
				t.Errorf("stuck %v %q, want reason %q", got.Stuck, got.Reason, tc.wantReason)
			}
			if !strings.HasPrefix(got.Nudge, tc.wantNudge) || (tc.wantNudge == "") != (got.Nudge == "") ||
				got.NudgeKey != tc.wantNudgeKey {
				t.Errorf("nudge %q for %q, want %q... for %q", got.Nudge, got.NudgeKey, tc.wantNudge, tc.wantNudgeKey)
			}
		})
	}
}
