package sqsqueue

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every SQS request a queue method makes is covered by the IAM actions of
// its use, so the functions' grants cannot fall behind the adapter.
func TestIAMActionsCoverEveryRequest(t *testing.T) {
	needs := map[string]string{"SendMessage": "sqs:SendMessage", "ReceiveMessage": "sqs:ReceiveMessage",
		"DeleteMessage": "sqs:DeleteMessage", "ChangeMessageVisibility": "sqs:ChangeMessageVisibility"}
	b, err := os.ReadFile("sqsqueue.go")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	// Setup and what it calls are the installers'.
	if i := strings.Index(src, "\nfunc Setup("); i >= 0 {
		src = src[:i]
	}
	all := append(append(append([]string{}, SendIAMActions...), ConsumeIAMActions...), DeadLetterIAMActions...)
	for _, m := range regexp.MustCompile(`client\.([A-Z][A-Za-z]+)\(`).FindAllStringSubmatch(src, -1) {
		a, ok := needs[m[1]]
		if !ok {
			t.Errorf("the queue calls %s, which this test does not know: add its IAM action here and to the grants", m[1])
			continue
		}
		if !slices.Contains(all, a) {
			t.Errorf("%s needs %s, which no grant has", m[1], a)
		}
	}
}
