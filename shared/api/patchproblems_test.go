package api_test

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestValidationPatchProblemsTogether: a PATCH with a field problem and a
// branch left without repository is refused with both, the field's first.
func TestValidationPatchProblemsTogether(t *testing.T) {
	e := newVEnv(t)
	r := e.as(vAliceKey, "PATCH", "/api/v1/app-conversations/"+vConvA, `{"title":"","selected_repository":null}`)
	var body struct {
		Detail []struct {
			Loc []any `json:"loc"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(r.body, &body); r.status != 422 || err != nil {
		t.Fatalf("PATCH: %s", r)
	}
	var locs []string
	for _, d := range body.Detail {
		locs = append(locs, fmt.Sprint(d.Loc))
	}
	if got, want := fmt.Sprint(locs), "[[body title] [body selected_repository]]"; got != want {
		t.Errorf("problems at %s, want %s: %s", got, want, r)
	}
}
