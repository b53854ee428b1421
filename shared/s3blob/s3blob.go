// Package s3blob is the acs.Blobs on Amazon S3: each object is an S3 object
// of one bucket, named by its key under an optional prefix.
//
// Keys follow the rules of the local twin (package fileblob), so keys move
// between the two unchanged: slash-separated relative paths of at most 1024
// bytes, segments of 1 to 255 bytes, none "." or "..", no leading slash,
// backslash or NUL, and no segment starting with ".fileblob-tmp-". S3 also
// needs valid UTF-8, and the prefix and key together may not exceed S3's 1024
// bytes. Other keys are acs.ErrInvalid.
//
// Put streams its reader. A body of up to 8 MiB is buffered and stored with
// one PutObject; a longer one goes up as a multipart upload of 8 MiB parts
// (one part in memory at a time, at most 10,000 parts, so objects up to about
// 78 GiB). S3 makes the object visible only when the upload completes, so a
// failed Put (reader error, canceled context, S3 error) leaves the previous
// object, or none; the multipart upload is aborted. Should the abort fail
// too, its parts linger, invisible, until a bucket lifecycle rule
// (AbortIncompleteMultipartUpload, recommended) removes them.
//
// Local endpoints (gofakes3, MinIO and the like) usually need path-style
// addressing (http://host/bucket/key): set UsePathStyle on the client, as
// NewClient does when asked, since a virtual-hosted name such as
// bucket.localhost rarely resolves.
//
// Errors wrap acs.ErrNotFound (Get of an absent object), acs.ErrInvalid (bad
// key or prefix) or acs.ErrUnavailable (throttling, 5xx answers, network
// failures: safe to retry; the SDK has already retried them). A canceled or
// expired context gives an error wrapping ctx.Err().
package s3blob

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/acs-project/acs/internal/awserr"
	"github.com/acs-project/acs/shared/acs"
)

const (
	// PartSize is the size of a multipart upload's parts, and the largest
	// body Put stores with a single PutObject.
	PartSize = 8 << 20
	// maxParts is S3's limit on the parts of a multipart upload.
	maxParts = 10000

	maxKeyLen     = 1024
	maxSegmentLen = 255
	// reservedPrefix starts the temporary files of fileblob; refused here
	// too so every key is valid in both stores.
	reservedPrefix = ".fileblob-tmp-"
	// abortTimeout bounds aborting a failed multipart upload.
	abortTimeout = 30 * time.Second
)

// Options configure a Store.
type Options struct {
	// Client is the S3 client (required). For a local endpoint, give it a
	// BaseEndpoint and UsePathStyle (see NewClient).
	Client *s3.Client
	// Bucket holds the objects (required).
	Bucket string
	// Prefix is prepended to every key (optional), so several stores can
	// share a bucket. It is a folder: "acs" and "acs/" both store key "x"
	// as "acs/x". It must itself be a valid key.
	Prefix string
}

// Store is an acs.Blobs on an S3 bucket. It is safe for concurrent use.
type Store struct {
	client *s3.Client
	bucket string
	prefix string // "" or ending with "/"
	err    error  // a configuration error every method returns
}

var _ acs.Blobs = (*Store)(nil)

// New returns the store o describes. It makes no request: a missing client
// or bucket, or a bad prefix, shows as acs.ErrInvalid from each method.
func New(o Options) *Store {
	s := &Store{client: o.Client, bucket: o.Bucket}
	switch p := strings.TrimSuffix(o.Prefix, "/"); {
	case o.Client == nil:
		s.err = fmt.Errorf("s3blob: no S3 client: %w", acs.ErrInvalid)
	case o.Bucket == "":
		s.err = fmt.Errorf("s3blob: no bucket: %w", acs.ErrInvalid)
	case p == "":
	default:
		if err := checkKey(p); err != nil {
			s.err = fmt.Errorf("s3blob: prefix %q: %s: %w", truncate(o.Prefix, 80), err, acs.ErrInvalid)
		}
		s.prefix = p + "/"
	}
	return s
}

// NewClient returns an S3 client for endpoint ("" for AWS's own endpoint of
// the region), in path-style addressing when pathStyle is set (local
// endpoints need it), signing with creds (nil for anonymous requests). It is
// a convenience for tests and local runs; production builds its client from
// its AWS configuration.
func NewClient(endpoint, region string, pathStyle bool, creds aws.CredentialsProvider) *s3.Client {
	if creds == nil {
		creds = aws.AnonymousCredentials{}
	}
	o := s3.Options{Region: region, Credentials: creds, UsePathStyle: pathStyle}
	if endpoint != "" {
		o.BaseEndpoint = aws.String(endpoint)
	}
	return s3.New(o)
}

// CreateBucket creates bucket unless the caller can already reach it (in the
// client's region). It is idempotent, for tests and installers: production
// creates its bucket from its infrastructure definitions.
func CreateBucket(ctx context.Context, client *s3.Client, bucket string) error {
	if client == nil || bucket == "" {
		return fmt.Errorf("s3blob: create bucket: client and bucket are required: %w", acs.ErrInvalid)
	}
	exists := func() bool {
		_, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
		return err == nil
	}
	if exists() {
		return nil
	}
	in := &s3.CreateBucketInput{Bucket: aws.String(bucket)}
	if r := client.Options().Region; r != "" && r != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(r)}
	}
	_, err := client.CreateBucket(ctx, in)
	var owned *types.BucketAlreadyOwnedByYou
	var taken *types.BucketAlreadyExists
	switch {
	case err == nil, errors.As(err, &owned):
		return nil
	case errors.As(err, &taken) && exists(): // created meanwhile
		return nil
	}
	return wrap(ctx, "create bucket "+bucket, err)
}

// objectKey checks a key (see the package comment) and returns the name of
// its S3 object; the error wraps acs.ErrInvalid.
func (s *Store) objectKey(key string) (string, error) {
	if s.err != nil {
		return "", s.err
	}
	if err := checkKey(key); err != nil {
		return "", fmt.Errorf("s3blob: key %q: %s: %w", truncate(key, 80), err, acs.ErrInvalid)
	}
	if len(s.prefix)+len(key) > maxKeyLen {
		return "", fmt.Errorf("s3blob: key %q: longer than %d bytes with the prefix: %w", truncate(key, 80), maxKeyLen, acs.ErrInvalid)
	}
	return s.prefix + key, nil
}

func checkKey(key string) error {
	switch {
	case key == "":
		return errors.New("empty")
	case len(key) > maxKeyLen:
		return fmt.Errorf("longer than %d bytes", maxKeyLen)
	case strings.ContainsAny(key, "\\\x00"):
		return errors.New("contains a backslash or NUL")
	case key[0] == '/':
		return errors.New("absolute")
	case !utf8.ValidString(key):
		return errors.New("not UTF-8")
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return errors.New("empty path segment")
		case seg == "." || seg == "..":
			return fmt.Errorf("%q segment", seg)
		case len(seg) > maxSegmentLen:
			return fmt.Errorf("segment longer than %d bytes", maxSegmentLen)
		case strings.HasPrefix(seg, reservedPrefix):
			return fmt.Errorf("segment starts with the reserved %q", reservedPrefix)
		}
	}
	return nil
}

// Put stores the object once r is fully read, replacing any previous one
// atomically: readers see the old object or the new one. When r fails, ctx
// ends or S3 fails, Put returns the error and leaves the previous object (or
// none). ErrInvalid for a bad key or a body over the multipart limit.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) error {
	k, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("s3blob: put %s: %w", key, err)
	}
	br := bufio.NewReader(ctxReader{ctx, r})
	first, err := io.ReadAll(io.LimitReader(br, PartSize))
	if err != nil {
		return fmt.Errorf("s3blob: put %s: read: %w", key, err)
	}
	more := false
	if len(first) == PartSize {
		switch _, err := br.Peek(1); {
		case err == nil:
			more = true
		case !errors.Is(err, io.EOF):
			return fmt.Errorf("s3blob: put %s: read: %w", key, err)
		}
	}
	if !more {
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        aws.String(s.bucket),
			Key:           aws.String(k),
			Body:          bytes.NewReader(first),
			ContentLength: aws.Int64(int64(len(first))),
		})
		if err != nil {
			return wrap(ctx, "put "+key, err)
		}
		return nil
	}
	return s.multipart(ctx, key, k, first, br)
}

// multipart uploads first and the rest of r as a multipart upload, aborting
// it on failure.
func (s *Store) multipart(ctx context.Context, key, k string, first []byte, r io.Reader) (err error) {
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket:            aws.String(s.bucket),
		Key:               aws.String(k),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	})
	if err != nil {
		return wrap(ctx, "put "+key+": start multipart upload", err)
	}
	uploadID := created.UploadId
	defer func() {
		if err == nil {
			return
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
		defer cancel()
		if _, aerr := s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
			Bucket: aws.String(s.bucket), Key: aws.String(k), UploadId: uploadID,
		}); aerr != nil {
			err = fmt.Errorf("%w (and aborting the multipart upload failed: %v)", err, aerr)
		}
	}()

	var parts []types.CompletedPart
	part := first
	for {
		n := int32(len(parts) + 1)
		out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket:            aws.String(s.bucket),
			Key:               aws.String(k),
			UploadId:          uploadID,
			PartNumber:        aws.Int32(n),
			Body:              bytes.NewReader(part),
			ContentLength:     aws.Int64(int64(len(part))),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		})
		if err != nil {
			return wrap(ctx, fmt.Sprintf("put %s: upload part %d", key, n), err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32})

		// A fresh buffer per part: the HTTP transport may still hold the
		// previous one after an early answer.
		part = make([]byte, PartSize)
		m, rerr := io.ReadFull(r, part)
		part = part[:m]
		if rerr != nil && !errors.Is(rerr, io.EOF) && !errors.Is(rerr, io.ErrUnexpectedEOF) {
			return fmt.Errorf("s3blob: put %s: read: %w", key, rerr)
		}
		if m == 0 {
			break
		}
		if len(parts) == maxParts {
			return fmt.Errorf("s3blob: put %s: body over %d parts of %d bytes: %w", key, maxParts, PartSize, acs.ErrInvalid)
		}
	}
	if _, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          aws.String(s.bucket),
		Key:             aws.String(k),
		UploadId:        uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}); err != nil {
		return wrap(ctx, "put "+key+": complete multipart upload", err)
	}
	return nil
}

// Get opens the object for reading; the caller closes it. ErrNotFound when
// absent (including when the key only prefixes other keys), ErrInvalid for a
// bad key. A read error of the returned body (network failure mid-object)
// surfaces from Read.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if err != nil {
		if notFound(err) {
			return nil, fmt.Errorf("s3blob: object %s: %w", key, acs.ErrNotFound)
		}
		return nil, wrap(ctx, "get "+key, err)
	}
	return out.Body, nil
}

// Delete removes the object (absent is not an error). ErrInvalid for a bad
// key.
func (s *Store) Delete(ctx context.Context, key string) error {
	k, err := s.objectKey(key)
	if err != nil {
		return err
	}
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if err != nil && !notFound(err) {
		return wrap(ctx, "delete "+key, err)
	}
	return nil
}

// List returns the keys starting with prefix, sorted bytewise, reading every
// page of the listing. The prefix may end mid-segment ("archives/ab") or be
// empty (every key). Objects under the store's prefix whose names are not
// valid keys (put there by other means) are left out. ErrInvalid for a prefix
// no valid key can start with.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	if s.err != nil {
		return nil, s.err
	}
	if prefix != "" {
		// A prefix is valid when some key can start with it.
		if err := checkKey(prefix + "x"); err != nil {
			return nil, fmt.Errorf("s3blob: prefix %q: %s: %w", truncate(prefix, 80), err, acs.ErrInvalid)
		}
	}
	keys := []string{}
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix + prefix),
		// URL-encoded keys survive XML (control characters); a server
		// that ignores the request answers plain keys and says so.
		EncodingType: types.EncodingTypeUrl,
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, wrap(ctx, fmt.Sprintf("list %q", truncate(prefix, 80)), err)
		}
		for _, o := range page.Contents {
			name := aws.ToString(o.Key)
			if page.EncodingType == types.EncodingTypeUrl {
				dec, err := url.QueryUnescape(name)
				if err != nil {
					return nil, fmt.Errorf("s3blob: list %q: bad URL-encoded key %q: %w", truncate(prefix, 80), name, err)
				}
				name = dec
			}
			key, ok := strings.CutPrefix(name, s.prefix)
			if !ok || !strings.HasPrefix(key, prefix) || checkKey(key) != nil {
				continue
			}
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	return keys, nil
}

// notFound reports S3's answers for an absent object.
func notFound(err error) bool {
	var noKey *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &noKey) || errors.As(err, &nf) {
		return true
	}
	switch awserr.Code(err) {
	case "NoSuchKey", "NotFound":
		return true
	case "NoSuchBucket":
		return false
	}
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == 404 && awserr.Code(err) == ""
}

// wrap gives err context and classifies it.
func wrap(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("s3blob: %s: %w", op, err)
	}
	if unavailable(err) {
		return fmt.Errorf("s3blob: %s: %w: %w", op, acs.ErrUnavailable, err)
	}
	return fmt.Errorf("s3blob: %s: %w", op, err)
}

// unavailable reports the errors worth retrying later.
func unavailable(err error) bool {
	return awserr.Transient(err, awserr.Code(err), "ServiceUnavailable", "InternalError", "RequestTimeout")
}

// ctxReader stops reading when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
