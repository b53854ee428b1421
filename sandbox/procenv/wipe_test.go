package procenv

import "testing"

func TestWipeOverwritesOnlyWithheldValues(t *testing.T) {
	block := []byte("PATH=/bin\x00OH_SESSION_API_KEYS_0=abc\x00X=OH_SECRET_KEY=no\x00OH_SECRET_KEY=s=k\x00=odd\x00SESSION_API_KEY=last")
	want := "PATH=/bin\x00OH_SESSION_API_KEYS_0=\x00\x00\x00\x00X=OH_SECRET_KEY=no\x00OH_SECRET_KEY=\x00\x00\x00\x00=odd\x00SESSION_API_KEY=\x00\x00\x00\x00"
	if !wipe(block) {
		t.Fatal("wipe reported no change")
	}
	if string(block) != want {
		t.Fatalf("wipe\n got %q\nwant %q", block, want)
	}
	if wipe(block) {
		t.Fatal("wiping a wiped block reported a change")
	}
	if wipe([]byte("PATH=/bin\x00HOME=/h\x00")) {
		t.Fatal("a block without withheld variables changed")
	}
}
