package boltstore

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestStoredEventJSONIsEncodingJSON checks that the stored form of an
// event is byte for byte what encoding/json makes of it, so records
// written before and after read and compare alike.
func TestStoredEventJSONIsEncodingJSON(t *testing.T) {
	cases := []storedEvent{
		{Kind: "MessageEvent", Source: "user", Text: "hello", JSON: json.RawMessage(`{"id":"1"}`)},
		{Kind: "k", Source: "s", JSON: json.RawMessage(`{ "a" : [1, 2] ,"b":"<x>&"}`)},
		{Kind: "k\u2028\u2029", Source: "\x00\x01\x1f\b\f\n\r\t\"\\", Text: "<html> & \xff\xfe invalid", JSON: json.RawMessage(`"\u003c"`)},
		{Kind: "", Source: "", Text: "", JSON: nil},
		{Kind: "é中文🙂", Source: "x", Text: "\u007f\u0080", JSON: json.RawMessage(`null`)},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune{'a', '"', '\\', '<', '>', '&', '\n', '\x00', '\x1f', '\u2028', '\u2029', 'é', '🙂', 0xFFFD}
	for range 500 {
		var s [3][]byte
		for i := range s {
			for range rng.IntN(12) {
				if rng.IntN(10) == 0 {
					s[i] = append(s[i], byte(0x80+rng.IntN(0x80)))
					continue
				}
				s[i] = append(s[i], string(alphabet[rng.IntN(len(alphabet))])...)
			}
		}
		js, _ := json.Marshal(string(s[2]))
		cases = append(cases, storedEvent{Kind: string(s[0]), Source: string(s[1]), Text: string(s[2]), JSON: js})
	}
	for _, e := range cases {
		want, err := marshalNoEscape(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%q:\n got %s\nwant %s", e, got, want)
		}
	}
	for _, bad := range []json.RawMessage{{}, json.RawMessage(`{`), json.RawMessage(`[1,]`)} {
		if _, err := (&storedEvent{Kind: "k", JSON: bad}).appendJSON(nil); err == nil {
			t.Errorf("appendJSON accepted %q", bad)
		}
		if _, err := marshalNoEscape(storedEvent{Kind: "k", JSON: bad}); err == nil {
			t.Errorf("encoding/json accepted %q", bad)
		}
	}
}
