package main

import (
	"fmt"
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/acs-project/acs/functions"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/apigw"
)

// API is the REST API: one resource and method per route of the route
// table, each integrated (Lambda proxy) with that route's function; the
// REQUEST authorizer on every AuthUser route.
type API struct {
	Stack      awscdk.Stack
	Rest       awsapigateway.RestApi
	Authorizer *Function
	Routes     []*Function
	// URL is the API's own URL: the stage's, or the custom domain's (output
	// ApiUrl), for programs with API keys.
	URL *string
	// PublicURL is ACS's public URL (ACS_PUBLIC_URL): the web UI's
	// distribution, which serves the UI and the sign-in pages and forwards
	// the API's paths (sandboxes' webhooks included) to the stage.
	PublicURL *string
	// Web hosts the web UI.
	Web *Web
	// SignIn is the OpenID Connect client of the functions that sign people
	// in (nil without OIDC).
	SignIn *signIn
}

// NewAPI makes the API stack.
func NewAPI(scope constructs.Construct, id string, d *Data, p Props, sp *awscdk.StackProps) *API {
	st := awscdk.NewStack(scope, jsii.String(id), sp)
	a := &API{Stack: st}

	accessLogs := awslogs.NewLogGroup(st, jsii.String("AccessLogs"), &awslogs.LogGroupProps{
		Retention: p.LogRetention, RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	t := jsii.Bool(true)
	a.Rest = awsapigateway.NewRestApi(st, jsii.String("Api"), &awsapigateway.RestApiProps{
		RestApiName:   jsii.String("acs"),
		Description:   jsii.String("ACS V1 API"),
		EndpointTypes: &[]awsapigateway.EndpointType{awsapigateway.EndpointType_REGIONAL},
		// Every body may be binary (downloads are zips): API Gateway passes
		// bodies base64-encoded both ways and the functions decode them.
		BinaryMediaTypes: jsii.Strings("*/*"),
		// The account's API Gateway logging role (for the access logs): an
		// account-wide setting, with the AWS-managed policy
		// AmazonAPIGatewayPushToCloudWatchLogs (its "*" covers every API's
		// log groups; AWS offers no narrower form of this setting).
		CloudWatchRole: t,
		DeployOptions: &awsapigateway.StageOptions{
			StageName:            jsii.String(p.Stage),
			ThrottlingRateLimit:  jsii.Number(p.ThrottleRate),
			ThrottlingBurstLimit: jsii.Number(p.ThrottleBurst),
			AccessLogDestination: awsapigateway.NewLogGroupLogDestination(accessLogs),
			AccessLogFormat: awsapigateway.AccessLogFormat_JsonWithStandardFields(&awsapigateway.JsonWithStandardFieldProps{
				Caller: t, HttpMethod: t, Ip: t, Protocol: t, RequestTime: t, ResourcePath: t, ResponseLength: t, Status: t, User: t,
			}),
			TracingEnabled: jsii.Bool(p.XRay),
		},
	})
	// The stage URL, built from the API's id rather than from the stage.
	a.URL = awscdk.Fn_Join(jsii.String(""), jsii.Strings("https://", *a.Rest.RestApiId(), ".execute-api.",
		*awscdk.Aws_REGION(), ".", *awscdk.Aws_URL_SUFFIX(), "/", p.Stage))
	if p.DomainName != "" {
		dn := awsapigateway.NewDomainName(st, jsii.String("Domain"), &awsapigateway.DomainNameProps{
			DomainName:     jsii.String(p.DomainName),
			Certificate:    awscertificatemanager.Certificate_FromCertificateArn(st, jsii.String("Certificate"), jsii.String(p.CertificateARN)),
			EndpointType:   awsapigateway.EndpointType_REGIONAL,
			SecurityPolicy: awsapigateway.SecurityPolicy_TLS_1_2,
		})
		dn.AddBasePathMapping(a.Rest, &awsapigateway.BasePathMappingOptions{Stage: a.Rest.DeploymentStage()})
		a.URL = jsii.String("https://" + p.DomainName)
		awscdk.NewCfnOutput(st, jsii.String("DomainTarget"), &awscdk.CfnOutputProps{Value: dn.DomainNameAliasDomainName(),
			Description: jsii.String("point a CNAME (or alias) record for the domain name here")})
	}

	// Gateway responses in the V1 error shape.
	for _, r := range apigw.GatewayResponses {
		headers := map[string]*string{}
		for k, v := range r.Headers {
			headers[k] = jsii.String("'" + v + "'")
		}
		a.Rest.AddGatewayResponse(jsii.String("Response"+logicalName(lowerUnderscore(r.Type))), &awsapigateway.GatewayResponseOptions{
			Type:            awsapigateway.ResponseType_Of(jsii.String(r.Type)),
			StatusCode:      jsii.String(fmt.Sprint(r.StatusCode)),
			ResponseHeaders: &headers,
			Templates:       &map[string]*string{"application/json": jsii.String(r.Body)},
		})
	}

	// The distribution before the functions and the sign-in client, which
	// are given its URL.
	a.Web = newWeb(a, p)
	a.PublicURL = a.Web.URL

	a.SignIn = newSignIn(st, d, p, a.PublicURL)
	a.Authorizer = newFunction(st, functions.Authorizer, d, p, a.PublicURL, a.SignIn)
	auth := newAuthorizer(st, a.Authorizer, p)

	routes := append([]api.Route{}, p.Routes...)
	sort.SliceStable(routes, func(i, j int) bool { return routes[i].Path < routes[j].Path })
	for _, rt := range routes {
		fn := newFunction(st, functions.RouteFunction(rt), d, p, a.PublicURL, a.SignIn)
		a.Routes = append(a.Routes, fn)
		opts := &awsapigateway.MethodOptions{OperationName: jsii.String(rt.Name)}
		switch rt.Auth {
		case api.AuthUser:
			opts.AuthorizationType = awsapigateway.AuthorizationType_CUSTOM
			opts.Authorizer = auth
		case api.AuthSandbox, api.AuthNone:
			// Webhooks carry X-Session-API-Key, which the function checks.
			opts.AuthorizationType = awsapigateway.AuthorizationType_NONE
		default:
			panic(fmt.Sprintf("infra: route %s: unknown authentication %d", rt.Name, rt.Auth))
		}
		integration := awsapigateway.NewLambdaIntegration(fn.Lambda, &awsapigateway.LambdaIntegrationOptions{
			Proxy: jsii.Bool(true), AllowTestInvoke: jsii.Bool(false),
			Timeout: awscdk.Duration_Seconds(jsii.Number(functions.IntegrationTimeout.Seconds())),
		})
		a.Rest.Root().ResourceForPath(jsii.String(rt.Path)).AddMethod(jsii.String(rt.Method), integration, opts)
	}
	awscdk.NewCfnOutput(st, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: a.URL,
		Description: jsii.String("the V1 API for API keys: $ApiUrl/api/v1/... (WebUrl serves it too)")})
	return a
}

// newAuthorizer makes the REQUEST authorizer. A request authenticates with
// a Bearer key (Authorization) or a browser session (the acs_session
// cookie), and API Gateway answers 401 without calling the authorizer when
// any of its identity sources is missing: no single header is present in
// both kinds of request, and two sources would require both. So it has no
// identity source, which API Gateway allows only with result caching off:
// every request calls the authorizer. That costs an invocation (a key or
// session lookup) per request; in exchange a revoked key or session and an
// expired session take effect on the very next request, and no decision
// made for one request (its method, its Origin) is reused for another. With
// authorizerCacheTtlSeconds > 0 the Authorization header is the identity
// source and cache key, as before browser sessions: then only Bearer keys
// get through.
func newAuthorizer(st awscdk.Stack, fn *Function, p Props) awsapigateway.RequestAuthorizer {
	props := &awsapigateway.RequestAuthorizerProps{Handler: fn.Lambda, IdentitySources: &[]*string{},
		ResultsCacheTtl: awscdk.Duration_Seconds(jsii.Number(0))}
	if p.AuthorizerCacheTTL > 0 {
		props.IdentitySources = &[]*string{awsapigateway.IdentitySource_Header(jsii.String("Authorization"))}
		props.ResultsCacheTtl = awscdk.Duration_Seconds(jsii.Number(p.AuthorizerCacheTTL.Seconds()))
		awscdk.Annotations_Of(st).AddWarningV2(jsii.String("acs:authorizer-cache"), jsii.String(
			"authorizerCacheTtlSeconds > 0 makes the Authorization header the authorizer's identity source: "+
				"browser sessions (cookies) are refused by API Gateway"), nil)
	}
	auth := awsapigateway.NewRequestAuthorizer(st, jsii.String("KeyAuthorizer"), props)
	if p.AuthorizerCacheTTL == 0 {
		// The construct writes the empty list as ""; leave the property out.
		auth.Node().DefaultChild().(awscdk.CfnResource).AddPropertyDeletionOverride(jsii.String("IdentitySource"))
	}
	return auth
}

// lowerUnderscore turns UNAUTHORIZED_X into unauthorized_x.
func lowerUnderscore(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
