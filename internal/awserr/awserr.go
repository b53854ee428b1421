// Package awserr classifies AWS SDK errors for the adapters that talk to
// AWS services (s3blob, sqsqueue): which failures are worth retrying later.
package awserr

import (
	"context"
	"errors"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Code returns the API error code of err ("" for none).
func Code(err error) string {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return ""
	}
	return ae.ErrorCode()
}

// Ended reports whether err is the caller's context ending (never worth a
// retry).
func Ended(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Transient reports throttling, server errors and network failures: the
// errors worth retrying later. code is err's API error code as the service
// spells it (see Code); codes are the service's own error codes that also
// mean "try later". A context that ended is never transient.
func Transient(err error, code string, codes ...string) bool {
	if Ended(err) {
		return false
	}
	var maxAttempts *retry.MaxAttemptsError
	var quota ratelimit.QuotaExceededError
	if errors.As(err, &maxAttempts) || errors.As(err, &quota) {
		return true
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 500 {
		return true
	}
	var sendErr *smithyhttp.RequestSendError
	if errors.As(err, &sendErr) {
		return true
	}
	if retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary {
		return true
	}
	if retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary {
		return true
	}
	if _, ok := retry.DefaultThrottleErrorCodes[code]; ok {
		return true
	}
	if code != "" && slices.Contains(codes, code) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorFault() == smithy.FaultServer
}
