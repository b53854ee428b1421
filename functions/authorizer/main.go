// Command authorizer is the API Gateway REQUEST authorizer: it resolves
// Authorization: Bearer <API key> (by its SHA-256 hash) to the key's user
// and passes the user to the route functions in the authorizer context.
// With ACS_ADMIN_KEY_SHA256 it also makes sure the admin user owns that key.
package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/acs-project/acs/functions"
	"github.com/acs-project/acs/functions/internal/awsenv"
	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/apigw"
)

func main() {
	env := awsenv.Load(functions.Authorizer.Need)
	store := env.Store(nil)
	if h := env.Config.AWS.AdminKeySHA256; h != "" {
		// The installation's first user: idempotent, and retried on the
		// next cold start when DynamoDB is briefly unavailable.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := accounts.EnsureAdmin(ctx, store, h, "admin"); err != nil {
			slog.Warn("authorizer: ensure the admin user", "error", err)
		}
		cancel()
	}
	lambda.Start(apigw.Authorizer(store))
}
