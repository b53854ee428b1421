// Package runtimeenv gives the functions that start, inspect or stop
// sandboxes their runtime: the sandbox runtime API at ACS_RUNTIME_URL.
package runtimeenv

import (
	"github.com/acs-project/acs/functions/internal/awsenv"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/runtimeapi"
)

// Runtime is the sandbox runtime.
func Runtime(e *awsenv.Env) acs.Runtime {
	return runtimeapi.NewClient(e.Config.RuntimeURL, e.Config.RuntimeAPIKey)
}
