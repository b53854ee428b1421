// Package s3env gives the functions that keep archives or large event
// payloads their S3 adapter.
package s3env

import (
	"github.com/acs-project/acs/functions/internal/awsenv"
	"github.com/acs-project/acs/shared/s3blob"
)

// Blobs is the archive bucket.
func Blobs(e *awsenv.Env) *s3blob.Store {
	c := s3blob.NewClient(e.Config.AWS.S3Endpoint, e.Config.AWS.Region, e.Config.AWS.S3PathStyle, e.AWS.Credentials)
	return s3blob.New(s3blob.Options{Client: c, Bucket: e.Config.AWS.Bucket, Prefix: e.Config.AWS.BucketPrefix})
}
