package storerecord_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/storerecord"
)

// fill sets every field of v (recursively) to a non-zero value derived
// from n, so a field the records drop or mix up shows in a comparison.
func fill(t *testing.T, v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprint("s", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), n)
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage(nil)) {
			v.SetBytes([]byte(fmt.Sprintf(`{"n":%d,"html":"<&>"}`, *n)))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(t, v.Index(i), n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(t, k, n)
			fill(t, e, n)
			v.SetMapIndex(k, e)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 5, 1, 12, 0, *n, *n, time.UTC)))
			return
		}
		for i := range v.NumField() {
			fill(t, v.Field(i), n)
		}
	default:
		t.Fatalf("fill: no value for a %s", v.Type())
	}
}

// TestRoundTripKeepsEveryField: every field of every domain record comes
// back from its stored JSON (a field added to a domain type and not to its
// record fails here, or does not compile).
func TestRoundTripKeepsEveryField(t *testing.T) {
	for _, v := range []any{&acs.User{}, &acs.APIKey{}, &acs.Sandbox{}, &acs.Conversation{}, &acs.StartTask{},
		&acs.Settings{}, &acs.Secret{}, &acs.PendingMessage{}, &acs.Quota{}, &acs.BrowserSession{}, &acs.SignInToken{}, &acs.Identity{}} {
		typ := reflect.TypeOf(v).Elem()
		t.Run(typ.Name(), func(t *testing.T) {
			n := 0
			fill(t, reflect.ValueOf(v).Elem(), &n)
			for _, in := range []any{v, reflect.ValueOf(v).Elem().Interface()} { // pointer and value
				raw, err := storerecord.Marshal(in)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(raw), `"html":"<&>"`) && strings.Contains(string(raw), `html`) {
					t.Errorf("embedded JSON was HTML-escaped: %s", raw)
				}
				if strings.HasSuffix(string(raw), "\n") {
					t.Error("trailing newline")
				}
				out := reflect.New(typ)
				if err := storerecord.Unmarshal(raw, out.Interface()); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(out.Interface(), v) {
					t.Fatalf("round trip:\n got %+v\nwant %+v\nJSON %s", out.Elem(), reflect.ValueOf(v).Elem(), raw)
				}
			}
		})
	}
}

// TestUnmarshalKeepsAbsentFields: like json.Unmarshal, fields the stored
// JSON lacks keep the destination's values (records written before a field
// existed read with the caller's default).
func TestUnmarshalKeepsAbsentFields(t *testing.T) {
	q := acs.Quota{Claims: map[string]time.Time{}}
	if err := storerecord.Unmarshal([]byte(`{"user_id":"u1"}`), &q); err != nil {
		t.Fatal(err)
	}
	if q.UserID != "u1" || q.Claims == nil {
		t.Fatalf("quota %+v", q)
	}
	st := acs.DefaultSettings("u1")
	if err := storerecord.Unmarshal([]byte(`{"user_id":"u1","llm_model":"m"}`), &st); err != nil {
		t.Fatal(err)
	}
	if st.MaxConversationsPerSandbox != acs.DefaultMaxConversationsPerSandbox || *st.LLMModel != "m" {
		t.Fatalf("settings %+v", st)
	}
}

func TestRefusesOtherTypesAndBadJSON(t *testing.T) {
	if _, err := storerecord.Marshal(acs.SandboxSpec{}); err == nil {
		t.Error("marshalled a type without a record")
	}
	if err := storerecord.Unmarshal([]byte(`{}`), &acs.SandboxSpec{}); err == nil {
		t.Error("unmarshalled into a type without a record")
	}
	u := acs.User{ID: "kept"}
	if err := storerecord.Unmarshal([]byte(`{"id":`), &u); err == nil || u.ID != "kept" {
		t.Errorf("bad JSON: %v, %+v", err, u)
	}
}
