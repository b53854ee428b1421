package s3blob

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// Every S3 request the store makes is covered by the IAM actions the
// functions are granted, and none is granted for nothing.
func TestIAMActionsCoverEveryRequest(t *testing.T) {
	needs := map[string]string{
		"PutObject": "s3:PutObject", "CreateMultipartUpload": "s3:PutObject", "UploadPart": "s3:PutObject",
		"CompleteMultipartUpload": "s3:PutObject", "AbortMultipartUpload": "s3:AbortMultipartUpload",
		"GetObject": "s3:GetObject", "DeleteObject": "s3:DeleteObject", "NewListObjectsV2Paginator": "s3:ListBucket",
	}
	installer := map[string]bool{"CreateBucket": true, "HeadBucket": true, "Options": true}
	b, err := os.ReadFile("s3blob.go")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:client\.|s3\.)([A-Z][A-Za-z0-9]+)\(`).FindAllStringSubmatch(string(b), -1) {
		op := m[1]
		if installer[op] || op == "NewFromConfig" || op == "New" {
			continue
		}
		a, ok := needs[op]
		if !ok {
			t.Errorf("the store calls %s, which this test does not know: add its IAM action here and to the grants", op)
			continue
		}
		used[a] = true
		if !slices.Contains(ObjectIAMActions, a) && !slices.Contains(BucketIAMActions, a) {
			t.Errorf("%s needs %s, missing from the IAM actions", op, a)
		}
	}
	for _, a := range append(append([]string{}, ObjectIAMActions...), BucketIAMActions...) {
		if !used[a] {
			t.Errorf("%s is granted but no request needs it", a)
		}
	}
}
