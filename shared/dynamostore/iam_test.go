package dynamostore

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every DynamoDB request the store makes is covered by IAMActions (the
// functions' grant), and IAMActions grants nothing the store never asks.
func TestIAMActionsCoverEveryRequest(t *testing.T) {
	needs := map[string][]string{
		"BatchGetItem": {"dynamodb:BatchGetItem"}, "BatchWriteItem": {"dynamodb:BatchWriteItem"},
		"DeleteItem": {"dynamodb:DeleteItem"}, "GetItem": {"dynamodb:GetItem"}, "PutItem": {"dynamodb:PutItem"},
		"Query": {"dynamodb:Query"}, "UpdateItem": {"dynamodb:UpdateItem"},
		"TransactWriteItems": {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"},
	}
	// Installers' calls (CreateTable): not the functions'.
	installer := map[string]bool{"CreateTable": true, "DescribeTimeToLive": true, "UpdateTimeToLive": true}
	call := regexp.MustCompile(`\.c\.([A-Z][A-Za-z]+)\(`)
	files, _ := filepath.Glob("*.go")
	used := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			op := m[1]
			if installer[op] {
				continue
			}
			acts, ok := needs[op]
			if !ok {
				t.Errorf("%s: the store calls %s, which this test does not know: add its IAM actions here and to IAMActions", f, op)
			}
			for _, a := range acts {
				used[a] = true
				if !slices.Contains(IAMActions, a) {
					t.Errorf("%s needs %s, missing from IAMActions", op, a)
				}
			}
		}
	}
	for _, a := range IAMActions {
		if !used[a] {
			t.Errorf("IAMActions grants %s, which no request needs", a)
		}
	}
}
