// Package functions holds the Lambda functions of the AWS deployment, one
// main package each, wiring only: routes/<route> (generated from the V1
// route table by `go generate ./functions`), authorizer, provisioner and
// reconciler.
package functions

//go:generate go run ./gen -dir routes
