// Command nopfn is a minimal Lambda function that answers "nop"; the
// lambdatest tests use it to build more than one package at once.
package main

import "github.com/aws/aws-lambda-go/lambda"

func main() {
	lambda.Start(func() (string, error) { return "nop", nil })
}
