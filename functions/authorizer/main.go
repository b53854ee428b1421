// Command authorizer is the API Gateway REQUEST authorizer: it resolves
// Authorization: Bearer <API key> (by its SHA-256 hash) to the key's user
// and passes the user to the route functions in the authorizer context.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/acs-project/acs/functions/internal/awsenv"
	"github.com/acs-project/acs/shared/apigw"
	"github.com/acs-project/acs/shared/config"
)

func main() {
	env := awsenv.Load(config.Need(0))
	lambda.Start(apigw.Authorizer(env.Store(nil)))
}
