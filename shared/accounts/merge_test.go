package accounts_test

import (
	"encoding/json"
	"testing"

	"github.com/acs-project/acs/shared/accounts"
)

func TestMergePatch(t *testing.T) {
	for _, c := range []struct{ target, patch, want string }{
		{`{}`, `{"a":1}`, `{"a":1}`},
		{`{"a":1,"b":2}`, `{"a":null}`, `{"b":2}`},
		{`{"llm":{"model":"m","temperature":0.1}}`, `{"llm":{"model":"n"}}`, `{"llm":{"model":"n","temperature":0.1}}`},
		{`{"llm":{"model":"m"}}`, `{"llm":"x"}`, `{"llm":"x"}`},
		{`{"a":[1,2]}`, `{"a":[3]}`, `{"a":[3]}`},
		{`{"a":"x"}`, `{"a":{"b":null,"c":1}}`, `{"a":{"c":1}}`},
		{`null`, `{"a":{"b":1}}`, `{"a":{"b":1}}`},
	} {
		var target, patch map[string]any
		_ = json.Unmarshal([]byte(c.target), &target)
		if err := json.Unmarshal([]byte(c.patch), &patch); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(accounts.MergePatch(target, patch))
		if string(got) != c.want {
			t.Errorf("merge %s into %s = %s, want %s", c.patch, c.target, got, c.want)
		}
	}
}
