package s3blob

// The IAM actions the store's requests need: the AWS stacks grant exactly
// these. ObjectIAMActions apply to the objects under the store's prefix
// (PutObject covers the multipart upload's create, part and complete
// requests); BucketIAMActions to the bucket, limited to the prefix by the
// s3:prefix condition (List). CreateBucket and HeadBucket are for tests and
// installers.
var (
	ObjectIAMActions = []string{"s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"}
	BucketIAMActions = []string{"s3:ListBucket"}
)
