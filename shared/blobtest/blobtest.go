// Package blobtest is the conformance suite every acs.Blobs adapter passes.
//
// Besides the contract's documented behaviour it pins down the key rules all
// adapters share, so keys move between them unchanged: a key is a non-empty
// relative slash-separated path with no empty, "." or ".." segments, no
// backslash and no NUL; anything else is acs.ErrInvalid for Put, Get and
// Delete. The suite never stores both "a" and "a/b" (a file system cannot).
package blobtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/acs-project/acs/shared/acs"
)

// Run runs the suite. newBlobs returns an empty store for each subtest.
func Run(t *testing.T, newBlobs func(t *testing.T) acs.Blobs) {
	ctx := context.Background()

	t.Run("RoundTrip", func(t *testing.T) {
		allBytes := make([]byte, 256)
		for i := range allBytes {
			allBytes[i] = byte(i)
		}
		for _, tc := range []struct {
			name, key string
			data      []byte
		}{
			{"Binary", "bin/all-bytes", allBytes},
			{"Empty", "empty", []byte{}},
			{"Large", "archives/large.tar.gz", random(t, 5<<20)},
			{"Nested", "transcripts/c1/sub/deep.json", []byte(`{"ok":true}`)},
			{"OddCharacters", "odd/with space/ü-._~!$&'()+,;=@.txt", []byte("odd")},
		} {
			t.Run(tc.name, func(t *testing.T) {
				b := newBlobs(t)
				put(t, b, tc.key, tc.data)
				if got := get(t, b, tc.key); !bytes.Equal(got, tc.data) {
					t.Fatalf("got %d bytes, want %d (content differs)", len(got), len(tc.data))
				}
				if keys := list(t, b, ""); !slices.Equal(keys, []string{tc.key}) {
					t.Fatalf("list after put: %q", keys)
				}
			})
		}
	})

	t.Run("Replace", func(t *testing.T) {
		b := newBlobs(t)
		put(t, b, "doc", []byte("first version, the longer one"))
		put(t, b, "doc", []byte("second"))
		if got := string(get(t, b, "doc")); got != "second" {
			t.Fatalf("after replace: %q", got)
		}
		if keys := list(t, b, ""); !slices.Equal(keys, []string{"doc"}) {
			t.Fatalf("list after replace: %q", keys)
		}
	})

	t.Run("Missing", func(t *testing.T) {
		b := newBlobs(t)
		put(t, b, "dir/present", []byte("x"))
		for _, key := range []string{"absent", "dir/absent", "dir", "dir/present/below", "dir/pres"} {
			t.Run(key, func(t *testing.T) {
				rc, err := b.Get(ctx, key)
				if err == nil {
					rc.Close()
				}
				if !errors.Is(err, acs.ErrNotFound) {
					t.Fatalf("get %q: %v, want ErrNotFound", key, err)
				}
			})
		}
	})

	t.Run("Delete", func(t *testing.T) {
		b := newBlobs(t)
		put(t, b, "dir/a", []byte("a"))
		put(t, b, "dir/sub/b", []byte("b"))
		must(t, b.Delete(ctx, "dir/sub/b"))
		if _, err := b.Get(ctx, "dir/sub/b"); !errors.Is(err, acs.ErrNotFound) {
			t.Fatalf("get after delete: %v", err)
		}
		must(t, b.Delete(ctx, "dir/sub/b")) // twice is fine
		must(t, b.Delete(ctx, "never/stored"))
		must(t, b.Delete(ctx, "dir")) // names no object
		if got := string(get(t, b, "dir/a")); got != "a" {
			t.Fatalf("sibling after delete: %q", got)
		}
		if keys := list(t, b, ""); !slices.Equal(keys, []string{"dir/a"}) {
			t.Fatalf("list after delete: %q", keys)
		}
		// The emptied directory can hold objects again.
		put(t, b, "dir/sub/c", []byte("c"))
		must(t, b.Delete(ctx, "dir/a"))
		must(t, b.Delete(ctx, "dir/sub/c"))
		if keys := list(t, b, ""); len(keys) != 0 {
			t.Fatalf("list after deleting everything: %q", keys)
		}
		put(t, b, "dir", []byte("now an object")) // nothing left in the way
		if got := string(get(t, b, "dir")); got != "now an object" {
			t.Fatalf("got %q", got)
		}
	})

	t.Run("List", func(t *testing.T) {
		b := newBlobs(t)
		stored := []string{
			"archives/ab12.tar.gz",
			"archives/ab34.tar.gz",
			"archives/cd56.tar.gz",
			"archives-old/ab99.tar.gz",
			"transcripts/c1/events.json",
			"transcripts/c1/sub/deep.json",
			"transcripts/c10/events.json",
			"transcripts/c1-x",
			"top",
		}
		// Stored out of order: List sorts.
		for _, i := range []int{8, 4, 0, 6, 2, 7, 1, 5, 3} {
			put(t, b, stored[i], []byte(stored[i]))
		}
		all := slices.Clone(stored)
		slices.Sort(all)
		for _, tc := range []struct {
			prefix string
			want   []string
		}{
			{"", all},
			{"archives/", []string{"archives/ab12.tar.gz", "archives/ab34.tar.gz", "archives/cd56.tar.gz"}},
			{"archives/ab", []string{"archives/ab12.tar.gz", "archives/ab34.tar.gz"}},
			{"archives", []string{"archives-old/ab99.tar.gz", "archives/ab12.tar.gz", "archives/ab34.tar.gz", "archives/cd56.tar.gz"}},
			{"archives/ab12.tar.gz", []string{"archives/ab12.tar.gz"}},
			{"transcripts/c1/", []string{"transcripts/c1/events.json", "transcripts/c1/sub/deep.json"}},
			{"transcripts/c1", []string{"transcripts/c1-x", "transcripts/c1/events.json", "transcripts/c1/sub/deep.json", "transcripts/c10/events.json"}},
			{"transcripts/c1/sub/d", []string{"transcripts/c1/sub/deep.json"}},
			{"t", []string{"top", "transcripts/c1-x", "transcripts/c1/events.json", "transcripts/c1/sub/deep.json", "transcripts/c10/events.json"}},
			{"top", []string{"top"}},
			{"top/", nil},
			{"nothing/", nil},
			{"nothing/deeper/still", nil},
			{"archives/zz", nil},
		} {
			t.Run(fmt.Sprintf("%q", tc.prefix), func(t *testing.T) {
				got := list(t, b, tc.prefix)
				if len(got) != 0 || len(tc.want) != 0 {
					if !slices.Equal(got, tc.want) {
						t.Fatalf("list %q:\n got %q\nwant %q", tc.prefix, got, tc.want)
					}
				}
			})
		}
	})

	t.Run("InvalidKeys", func(t *testing.T) {
		b := newBlobs(t)
		for _, key := range []string{
			"", "/abs", "/", "..", "../escape", "a/../b", "a/..", ".", "./a", "a/./b",
			"a//b", "a/", `a\b`, `..\escape`, "a\x00b",
		} {
			t.Run(fmt.Sprintf("%q", key), func(t *testing.T) {
				if err := b.Put(ctx, key, bytes.NewReader([]byte("x"))); !errors.Is(err, acs.ErrInvalid) {
					t.Errorf("put: %v, want ErrInvalid", err)
				}
				rc, err := b.Get(ctx, key)
				if err == nil {
					rc.Close()
				}
				if !errors.Is(err, acs.ErrInvalid) {
					t.Errorf("get: %v, want ErrInvalid", err)
				}
				if err := b.Delete(ctx, key); !errors.Is(err, acs.ErrInvalid) {
					t.Errorf("delete: %v, want ErrInvalid", err)
				}
			})
		}
		for _, prefix := range []string{"/abs", "../", "a/../", `a\`, "a\x00"} {
			if _, err := b.List(ctx, prefix); !errors.Is(err, acs.ErrInvalid) {
				t.Errorf("list %q: %v, want ErrInvalid", prefix, err)
			}
		}
		if keys := list(t, b, ""); len(keys) != 0 {
			t.Fatalf("invalid puts stored %q", keys)
		}
	})

	t.Run("FailedPutLeavesNothing", func(t *testing.T) {
		boom := errors.New("reader broke")
		for _, tc := range []struct {
			name string
			r    func() io.Reader
		}{
			{"ReaderFailsMidway", func() io.Reader {
				return io.MultiReader(bytes.NewReader(random(t, 1<<20)), failing{boom})
			}},
			{"ReaderFailsAtOnce", func() io.Reader { return failing{boom} }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				b := newBlobs(t)
				if err := b.Put(ctx, "partial/obj", tc.r()); err == nil {
					t.Fatal("put with a failing reader succeeded")
				}
				if _, err := b.Get(ctx, "partial/obj"); !errors.Is(err, acs.ErrNotFound) {
					t.Fatalf("get after failed put: %v, want ErrNotFound", err)
				}
				if keys := list(t, b, ""); len(keys) != 0 {
					t.Fatalf("failed put left %q", keys)
				}
				// A failed replace keeps the previous object.
				put(t, b, "partial/obj", []byte("previous"))
				if err := b.Put(ctx, "partial/obj", tc.r()); err == nil {
					t.Fatal("put with a failing reader succeeded")
				}
				if got := string(get(t, b, "partial/obj")); got != "previous" {
					t.Fatalf("failed replace left %q", got)
				}
				if keys := list(t, b, ""); !slices.Equal(keys, []string{"partial/obj"}) {
					t.Fatalf("failed replace: list %q", keys)
				}
			})
		}
	})

	t.Run("CanceledContext", func(t *testing.T) {
		b := newBlobs(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := b.Put(cctx, "canceled", bytes.NewReader([]byte("x"))); err == nil {
			t.Fatal("put with a canceled context succeeded")
		}
		if _, err := b.Get(ctx, "canceled"); !errors.Is(err, acs.ErrNotFound) {
			t.Fatalf("get after canceled put: %v, want ErrNotFound", err)
		}
	})

	t.Run("ConcurrentPuts", func(t *testing.T) {
		b := newBlobs(t)
		const writers, rounds = 8, 5
		var wg sync.WaitGroup
		errs := make(chan error, 2*writers*rounds)
		for w := range writers {
			// Writers put distinct keys into a shared directory while
			// others put and delete siblings there (emptying it now and
			// then): no put may fail because of them.
			wg.Add(2)
			go func() {
				defer wg.Done()
				for i := range rounds {
					key := fmt.Sprintf("shared/dir/w%d-%d", w, i)
					if err := b.Put(ctx, key, bytes.NewReader([]byte(key))); err != nil {
						errs <- fmt.Errorf("put %s: %w", key, err)
					}
				}
			}()
			go func() {
				defer wg.Done()
				for i := range rounds {
					key := fmt.Sprintf("shared/dir/scratch/s%d-%d", w, i)
					if err := b.Put(ctx, key, bytes.NewReader([]byte("s"))); err != nil {
						errs <- fmt.Errorf("put %s: %w", key, err)
					}
					if err := b.Delete(ctx, key); err != nil {
						errs <- fmt.Errorf("delete %s: %w", key, err)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		var want []string
		for w := range writers {
			for i := range rounds {
				want = append(want, fmt.Sprintf("shared/dir/w%d-%d", w, i))
			}
		}
		slices.Sort(want)
		if got := list(t, b, "shared/"); !slices.Equal(got, want) {
			t.Fatalf("list after concurrent puts:\n got %q\nwant %q", got, want)
		}
		for _, key := range want {
			if got := string(get(t, b, key)); got != key {
				t.Fatalf("%s holds %q", key, got)
			}
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func put(t *testing.T, b acs.Blobs, key string, data []byte) {
	t.Helper()
	if err := b.Put(context.Background(), key, bytes.NewReader(data)); err != nil {
		t.Fatalf("put %q: %v", key, err)
	}
}

func get(t *testing.T, b acs.Blobs, key string) []byte {
	t.Helper()
	rc, err := b.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	return data
}

func list(t *testing.T, b acs.Blobs, prefix string) []string {
	t.Helper()
	keys, err := b.List(context.Background(), prefix)
	if err != nil {
		t.Fatalf("list %q: %v", prefix, err)
	}
	if !slices.IsSorted(keys) {
		t.Fatalf("list %q is not sorted: %q", prefix, keys)
	}
	return keys
}

func random(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// failing is a reader that always fails.
type failing struct{ err error }

func (f failing) Read([]byte) (int, error) { return 0, f.err }
