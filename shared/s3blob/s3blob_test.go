package s3blob_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/blobtest"
	"github.com/acs-project/acs/shared/s3blob"
)

// recorder is an HTTP client that records the S3 operations it carries and
// can fail chosen ones.
type recorder struct {
	mu   sync.Mutex
	ops  []string
	fail func(op string) *http.Response // nil: forward
}

// op names a request: the S3 operation for the ones Put and List make.
func op(r *http.Request) string {
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodPost && q.Has("uploads"):
		return "CreateMultipartUpload"
	case r.Method == http.MethodPut && q.Has("partNumber"):
		return "UploadPart:" + q.Get("partNumber")
	case r.Method == http.MethodPost && q.Has("uploadId"):
		return "CompleteMultipartUpload"
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		return "AbortMultipartUpload"
	case r.Method == http.MethodPut:
		return "PutObject"
	}
	return r.Method
}

func (c *recorder) Do(r *http.Request) (*http.Response, error) {
	name := op(r)
	c.mu.Lock()
	c.ops = append(c.ops, name)
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		if resp := fail(name); resp != nil {
			if r.Body != nil {
				io.Copy(io.Discard, r.Body)
				r.Body.Close()
			}
			resp.Request = r
			return resp, nil
		}
	}
	return http.DefaultClient.Do(r)
}

func (c *recorder) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = nil
	return ops
}

func (c *recorder) count(prefix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, o := range c.ops {
		if strings.HasPrefix(o, prefix) {
			n++
		}
	}
	return n
}

type fake struct {
	client *s3.Client
	rec    *recorder
	n      atomic.Int64
}

// newFake starts an in-process gofakes3 server for the test and returns a
// path-style client for it.
func newFake(t *testing.T) *fake {
	t.Helper()
	ts := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(ts.Close)
	rec := &recorder{}
	base := s3blob.NewClient(ts.URL, "us-east-1", true, credentials.NewStaticCredentialsProvider("test", "test", ""))
	client := s3.New(base.Options(), func(o *s3.Options) {
		o.HTTPClient = rec
		// Retry as usual, without the long backoffs.
		o.Retryer = retry.NewStandard(func(o *retry.StandardOptions) { o.MaxBackoff = 50 * time.Millisecond })
	})
	return &fake{client: client, rec: rec}
}

// bucket creates a fresh bucket.
func (f *fake) bucket(t *testing.T) string {
	t.Helper()
	b := fmt.Sprintf("acs-test-%d", f.n.Add(1))
	if err := s3blob.CreateBucket(context.Background(), f.client, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func random(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func read(t *testing.T, s *s3blob.Store, key string) []byte {
	t.Helper()
	rc, err := s.Get(context.Background(), key)
	must(t, err)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	must(t, err)
	return data
}

func TestConformance(t *testing.T) {
	f := newFake(t)
	blobtest.Run(t, func(t *testing.T) acs.Blobs {
		return s3blob.New(s3blob.Options{Client: f.client, Bucket: f.bucket(t)})
	})
}

// With a prefix, the store sees only its own objects, even those of a
// sibling whose name merely starts like the prefix.
func TestConformanceWithPrefix(t *testing.T) {
	f := newFake(t)
	blobtest.Run(t, func(t *testing.T) acs.Blobs {
		b := f.bucket(t)
		for _, k := range []string{"tenant/acsx", "tenant/acs-old/x", "outside/x", "tenant/acs//bad-key"} {
			_, err := f.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k), Body: strings.NewReader("noise")})
			must(t, err)
		}
		return s3blob.New(s3blob.Options{Client: f.client, Bucket: b, Prefix: "tenant/acs"})
	})
}

func TestPrefixStoresUnderFolder(t *testing.T) {
	f := newFake(t)
	ctx := context.Background()
	b := f.bucket(t)
	s := s3blob.New(s3blob.Options{Client: f.client, Bucket: b, Prefix: "acs/"})
	must(t, s.Put(ctx, "archives/a.tar.gz", strings.NewReader("a")))
	out, err := f.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b)})
	must(t, err)
	if len(out.Contents) != 1 || aws.ToString(out.Contents[0].Key) != "acs/archives/a.tar.gz" {
		t.Fatalf("objects %+v", out.Contents)
	}
}

// Bodies over one part go up as multipart uploads, streamed from readers
// that cannot seek; a body of exactly one or two parts never sends an empty
// part.
func TestMultipart(t *testing.T) {
	f := newFake(t)
	ctx := context.Background()
	s := s3blob.New(s3blob.Options{Client: f.client, Bucket: f.bucket(t)})
	for _, tc := range []struct {
		name  string
		size  int
		parts int // 0: a single PutObject
	}{
		{"TwentyMiB", 20<<20 + 123, 3},
		{"ExactlyOnePart", s3blob.PartSize, 0},
		{"ExactlyTwoParts", 2 * s3blob.PartSize, 2},
		{"OneByteOver", s3blob.PartSize + 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := random(t, tc.size)
			f.rec.take()
			must(t, s.Put(ctx, "big/"+tc.name, io.MultiReader(bytes.NewReader(data))))
			ops := f.rec.take()
			var want []string
			if tc.parts == 0 {
				want = []string{"PutObject"}
			} else {
				want = []string{"CreateMultipartUpload"}
				for i := 1; i <= tc.parts; i++ {
					want = append(want, fmt.Sprint("UploadPart:", i))
				}
				want = append(want, "CompleteMultipartUpload")
			}
			if !slices.Equal(ops, want) {
				t.Fatalf("requests %q, want %q", ops, want)
			}
			if got := read(t, s, "big/"+tc.name); !bytes.Equal(got, data) {
				t.Fatalf("got %d bytes, want %d (content differs)", len(got), len(data))
			}
		})
	}
	keys, err := s.List(ctx, "big/")
	must(t, err)
	if !slices.Equal(keys, []string{"big/ExactlyOnePart", "big/ExactlyTwoParts", "big/OneByteOver", "big/TwentyMiB"}) {
		t.Fatalf("list %q", keys)
	}
}

// failAfter yields n random bytes, then fails (or runs hook first).
type failAfter struct {
	r    io.Reader
	hook func()
	err  error
}

func (f *failAfter) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		if f.hook != nil {
			f.hook()
		}
		return n, f.err
	}
	return n, err
}

// A Put failing mid-upload (reader error, S3 error, canceled context) aborts
// the multipart upload and leaves the previous object, or none.
func TestMultipartFailureLeavesNothing(t *testing.T) {
	f := newFake(t)
	boom := errors.New("reader broke")
	for _, tc := range []struct {
		name  string
		setup func(ctx context.Context, cancel context.CancelFunc, t *testing.T) io.Reader
		check func(t *testing.T, err error)
	}{
		{"ReaderFails", func(_ context.Context, _ context.CancelFunc, t *testing.T) io.Reader {
			return &failAfter{r: bytes.NewReader(random(t, 12<<20)), err: boom}
		}, func(t *testing.T, err error) {
			if !errors.Is(err, boom) {
				t.Fatalf("put: %v, want the reader's error", err)
			}
		}},
		{"ServerFailsPart", func(_ context.Context, _ context.CancelFunc, t *testing.T) io.Reader {
			f.rec.mu.Lock()
			f.rec.fail = func(op string) *http.Response {
				if op != "UploadPart:2" {
					return nil
				}
				return &http.Response{
					StatusCode: http.StatusServiceUnavailable, Status: "503 Slow Down",
					Header: http.Header{"Content-Type": {"application/xml"}},
					Body:   io.NopCloser(strings.NewReader(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)),
				}
			}
			f.rec.mu.Unlock()
			return bytes.NewReader(random(t, 20<<20))
		}, func(t *testing.T, err error) {
			if !errors.Is(err, acs.ErrUnavailable) {
				t.Fatalf("put: %v, want ErrUnavailable", err)
			}
		}},
		{"ContextCanceled", func(_ context.Context, cancel context.CancelFunc, t *testing.T) io.Reader {
			return &failAfter{r: bytes.NewReader(random(t, 10<<20)), hook: cancel}
		}, func(t *testing.T, err error) {
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("put: %v, want context.Canceled", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := f.bucket(t)
			s := s3blob.New(s3blob.Options{Client: f.client, Bucket: b})
			bg := context.Background()
			for _, previous := range []bool{false, true} {
				if previous {
					must(t, s.Put(bg, "partial/obj", strings.NewReader("previous")))
				}
				ctx, cancel := context.WithCancel(bg)
				r := tc.setup(ctx, cancel, t)
				f.rec.take()
				err := s.Put(ctx, "partial/obj", r)
				cancel()
				f.rec.mu.Lock()
				f.rec.fail = nil
				f.rec.mu.Unlock()
				tc.check(t, err)
				if f.rec.count("UploadPart:1") != 1 || f.rec.count("AbortMultipartUpload") != 1 || f.rec.count("CompleteMultipartUpload") != 0 {
					t.Fatalf("requests %q: want a part uploaded, then an abort", f.rec.take())
				}
				if previous {
					if got := string(read(t, s, "partial/obj")); got != "previous" {
						t.Fatalf("failed replace left %q", got)
					}
				} else if _, err := s.Get(bg, "partial/obj"); !errors.Is(err, acs.ErrNotFound) {
					t.Fatalf("get after failed put: %v, want ErrNotFound", err)
				}
				uploads, err := f.client.ListMultipartUploads(bg, &s3.ListMultipartUploadsInput{Bucket: aws.String(b)})
				must(t, err)
				if len(uploads.Uploads) != 0 {
					t.Fatalf("multipart uploads left: %+v", uploads.Uploads)
				}
			}
		})
	}
}

// Throttling and 5xx answers wrap ErrUnavailable; so does a server that is
// not there.
func TestUnavailable(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		if r.URL.Query().Has("list-type") {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>`))
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		if r.Method != http.MethodHead {
			w.Write([]byte(`<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`))
		}
	}))
	defer srv.Close()
	one := func(o *s3.Options) { o.RetryMaxAttempts = 1 }
	client := s3.New(s3blob.NewClient(srv.URL, "us-east-1", true, nil).Options(), one)
	s := s3blob.New(s3blob.Options{Client: client, Bucket: "b"})
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, acs.ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", what, err)
		}
	}
	check("put", s.Put(ctx, "k", strings.NewReader("x")))
	_, err := s.Get(ctx, "k")
	check("get", err)
	check("delete", s.Delete(ctx, "k"))
	_, err = s.List(ctx, "")
	check("list", err)
	srv.Close()
	_, err = s.Get(ctx, "k")
	check("get with the server down", err)
}

func TestConfigurationErrors(t *testing.T) {
	ctx := context.Background()
	f := newFake(t)
	b := f.bucket(t)
	must(t, s3blob.CreateBucket(ctx, f.client, b)) // idempotent
	for name, s := range map[string]*s3blob.Store{
		"NoClient":  s3blob.New(s3blob.Options{Bucket: b}),
		"NoBucket":  s3blob.New(s3blob.Options{Client: f.client}),
		"BadPrefix": s3blob.New(s3blob.Options{Client: f.client, Bucket: b, Prefix: "../up"}),
	} {
		if err := s.Put(ctx, "k", strings.NewReader("x")); !errors.Is(err, acs.ErrInvalid) {
			t.Errorf("%s: put: %v, want ErrInvalid", name, err)
		}
		if _, err := s.List(ctx, ""); !errors.Is(err, acs.ErrInvalid) {
			t.Errorf("%s: list: %v, want ErrInvalid", name, err)
		}
	}
	// A key that fits alone but not under the prefix.
	s := s3blob.New(s3blob.Options{Client: f.client, Bucket: b, Prefix: "p"})
	long := strings.Repeat(strings.Repeat("k", 200)+"/", 6)[:1023]
	if err := s.Put(ctx, long, strings.NewReader("x")); !errors.Is(err, acs.ErrInvalid) {
		t.Errorf("put of a key too long with the prefix: %v, want ErrInvalid", err)
	}
	if err := s.Put(ctx, "not-utf8-\xff", strings.NewReader("x")); !errors.Is(err, acs.ErrInvalid) {
		t.Errorf("put of a non-UTF-8 key: %v, want ErrInvalid", err)
	}
	// A missing bucket is not a missing object.
	missing := s3blob.New(s3blob.Options{Client: f.client, Bucket: "no-such-bucket"})
	if _, err := missing.Get(ctx, "k"); err == nil || errors.Is(err, acs.ErrNotFound) {
		t.Errorf("get from a missing bucket: %v, want an error other than ErrNotFound", err)
	}
}
