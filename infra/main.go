// Command infra is the AWS CDK app of ACS (cdk.json runs it: `make synth`,
// `make deploy`, `make destroy`). Every stack is derived from the code:
// the table from dynamostore's definition, one API method per route of
// the route table, each function's environment and grants from the
// configuration it checks at cold start, the queue's and schedule's
// settings from the functions package. See infra/README.md.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	p, err := FromContext(func(key string) string {
		v := app.Node().TryGetContext(jsii.String(key))
		switch v := v.(type) {
		case nil:
			return ""
		case string:
			return v
		default:
			return fmt.Sprint(v)
		}
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	NewStacks(app, p)
	app.Synth(nil)
}
