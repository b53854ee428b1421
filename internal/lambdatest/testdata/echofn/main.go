// Command echofn is a small Lambda function used by the lambdatest tests.
// What it does depends on the event it receives:
//
//   - an API Gateway REQUEST authorizer event (type "REQUEST"): it acts as
//     an authorizer, deciding by the Authorization header (an optional
//     "Bearer " prefix is ignored):
//     "allow" allows exactly the methodArn, "allow-all" allows the whole
//     stage, "allow-string" allows the methodArn with Action and Resource
//     written as plain strings, "deny" explicitly denies the methodArn,
//     "other" allows an unrelated ARN only, "unauthorized" fails with the
//     error "Unauthorized", "error" fails with another error, "invalid"
//     returns something that is not a policy, "bad-context" returns an
//     object in the context, "echo-event" allows the methodArn and passes
//     the authorizer event itself (as a string) in the context key "event";
//   - an API Gateway proxy event (has httpMethod): it answers an
//     APIGatewayProxyResponse; the query parameter mode selects "echo"
//     (default: the body is {"function": name, "event": <the event>}),
//     "binary" (returns the decoded request body, base64-encoded),
//     "error", "malformed", "sleep" (ms=N) or "status" (code=N);
//   - an SQS event (has Records): records whose body contains "fail" are
//     reported in batchItemFailures; a body of "crash" exits the process;
//   - otherwise a command {"op": ...}: "echo" returns "data", "error" fails
//     with "message", "panic" panics, "exit" calls os.Exit("code"), "sleep"
//     sleeps "ms" then returns {"slept": ms}, "env" returns the environment,
//     "context" returns the invocation's Lambda context.
//
// At start it writes "echofn: init <name>" to stderr. ECHOFN_INIT_ERROR=msg
// makes it report an init error through the Runtime API and exit.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

func main() {
	fmt.Fprintln(os.Stderr, "echofn: init", os.Getenv("AWS_LAMBDA_FUNCTION_NAME"))
	if msg := os.Getenv("ECHOFN_INIT_ERROR"); msg != "" {
		reportInitError(msg)
		os.Exit(1)
	}
	lambda.Start(handle)
}

func reportInitError(msg string) {
	body, _ := json.Marshal(map[string]string{"errorMessage": msg, "errorType": "EchofnInitError"})
	url := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2018-06-01/runtime/init/error"
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Lambda-Runtime-Function-Error-Type", "EchofnInitError")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "echofn: report init error:", err)
		return
	}
	resp.Body.Close()
}

func handle(ctx context.Context, raw json.RawMessage) (any, error) {
	var probe struct {
		Type       string          `json:"type"`
		HTTPMethod string          `json:"httpMethod"`
		Records    json.RawMessage `json:"Records"`
	}
	_ = json.Unmarshal(raw, &probe)
	switch {
	case probe.Type == "REQUEST":
		return authorize(raw)
	case probe.HTTPMethod != "":
		return proxy(raw)
	case probe.Records != nil:
		return sqs(raw)
	default:
		return command(ctx, raw)
	}
}

func authorize(raw json.RawMessage) (any, error) {
	var ev events.APIGatewayCustomAuthorizerRequestTypeRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, err
	}
	token := ""
	for k, v := range ev.Headers {
		if strings.EqualFold(k, "Authorization") {
			token = strings.TrimPrefix(v, "Bearer ")
		}
	}
	// arn:aws:execute-api:region:account:api/stage/METHOD/path
	arnParts := strings.SplitN(ev.MethodArn, "/", 3)
	stageArn := arnParts[0] + "/" + arnParts[1] + "/*"
	ctx := map[string]any{"userId": "user-42", "tenantId": "tenant-1", "admin": true, "quota": 42, "ratio": 1.5}
	policy := func(effect, resource string) events.APIGatewayCustomAuthorizerResponse {
		return events.APIGatewayCustomAuthorizerResponse{
			PrincipalID: "user-42",
			PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{
				Version: "2012-10-17",
				Statement: []events.IAMPolicyStatement{{
					Action:   []string{"execute-api:Invoke"},
					Effect:   effect,
					Resource: []string{resource},
				}},
			},
			Context: ctx,
		}
	}
	switch token {
	case "allow":
		return policy("Allow", ev.MethodArn), nil
	case "allow-all":
		return policy("Allow", stageArn), nil
	case "allow-string":
		return map[string]any{
			"principalId": "user-42",
			"policyDocument": map[string]any{
				"Version":   "2012-10-17",
				"Statement": []any{map[string]any{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": ev.MethodArn}},
			},
			"context": ctx,
		}, nil
	case "deny":
		return policy("Deny", ev.MethodArn), nil
	case "other":
		return policy("Allow", arnParts[0]+"/"+arnParts[1]+"/GET/somewhere/else"), nil
	case "unauthorized":
		return nil, errors.New("Unauthorized")
	case "invalid":
		return "not a policy", nil
	case "echo-event":
		resp := policy("Allow", ev.MethodArn)
		resp.Context = map[string]any{"event": string(raw)}
		return resp, nil
	case "bad-context":
		resp := policy("Allow", ev.MethodArn)
		resp.Context = map[string]any{"nested": map[string]any{"a": 1}}
		return resp, nil
	default:
		return nil, fmt.Errorf("authorizer exploded on token %q", token)
	}
}

func proxy(raw json.RawMessage) (any, error) {
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, err
	}
	name := os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
	switch ev.QueryStringParameters["mode"] {
	case "binary":
		body := []byte(ev.Body)
		if ev.IsBase64Encoded {
			b, err := base64.StdEncoding.DecodeString(ev.Body)
			if err != nil {
				return nil, err
			}
			body = b
		}
		return events.APIGatewayProxyResponse{
			StatusCode:      200,
			Headers:         map[string]string{"Content-Type": "application/octet-stream"},
			Body:            base64.StdEncoding.EncodeToString(body),
			IsBase64Encoded: true,
		}, nil
	case "error":
		return nil, errors.New("proxy handler failed")
	case "malformed":
		return "just a string", nil
	case "sleep":
		ms, _ := strconv.Atoi(ev.QueryStringParameters["ms"])
		time.Sleep(time.Duration(ms) * time.Millisecond)
	case "status":
		code, _ := strconv.Atoi(ev.QueryStringParameters["code"])
		return events.APIGatewayProxyResponse{StatusCode: code, Body: "status"}, nil
	}
	body, err := json.Marshal(map[string]any{"function": name, "event": raw})
	if err != nil {
		return nil, err
	}
	return events.APIGatewayProxyResponse{
		StatusCode:        200,
		Headers:           map[string]string{"Content-Type": "application/json", "X-Function": name, "X-Both": "single"},
		MultiValueHeaders: map[string][]string{"Set-Cookie": {"a=1", "b=2"}, "X-Both": {"multi1", "multi2"}},
		Body:              string(body),
	}, nil
}

func sqs(raw json.RawMessage) (any, error) {
	var ev events.SQSEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, err
	}
	var resp events.SQSEventResponse
	for _, r := range ev.Records {
		if r.Body == "crash" {
			os.Exit(2)
		}
		if strings.Contains(r.Body, "fail") {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		}
	}
	return resp, nil
}

func command(ctx context.Context, raw json.RawMessage) (any, error) {
	var cmd struct {
		Op      string          `json:"op"`
		Data    json.RawMessage `json:"data"`
		Message string          `json:"message"`
		Code    int             `json:"code"`
		MS      int             `json:"ms"`
	}
	if err := json.Unmarshal(raw, &cmd); err != nil {
		return nil, err
	}
	switch cmd.Op {
	case "echo":
		return cmd.Data, nil
	case "error":
		return nil, errors.New(cmd.Message)
	case "panic":
		panic("echofn: " + cmd.Message)
	case "exit":
		os.Exit(cmd.Code)
	case "sleep":
		time.Sleep(time.Duration(cmd.MS) * time.Millisecond)
		return map[string]int{"slept": cmd.MS}, nil
	case "env":
		env := map[string]string{}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		wd, _ := os.Getwd()
		env["(cwd)"] = wd
		return env, nil
	case "context":
		lc, _ := lambdacontext.FromContext(ctx)
		deadline, _ := ctx.Deadline()
		return map[string]any{
			"requestId":   lc.AwsRequestID,
			"functionArn": lc.InvokedFunctionArn,
			"deadline":    deadline.UnixMilli(),
			"traceId":     os.Getenv("_X_AMZN_TRACE_ID"),
		}, nil
	}
	return nil, fmt.Errorf("unknown op %q", cmd.Op)
}
