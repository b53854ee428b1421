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
	// PublicURL is how sandboxes reach the API (ACS_PUBLIC_URL).
	PublicURL *string
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
	// The stage URL, built from the API's id rather than from the stage, so
	// that the functions (which the stage's deployment depends on) can name
	// it.
	a.PublicURL = awscdk.Fn_Join(jsii.String(""), jsii.Strings("https://", *a.Rest.RestApiId(), ".execute-api.",
		*awscdk.Aws_REGION(), ".", *awscdk.Aws_URL_SUFFIX(), "/", p.Stage))
	if p.DomainName != "" {
		dn := awsapigateway.NewDomainName(st, jsii.String("Domain"), &awsapigateway.DomainNameProps{
			DomainName:     jsii.String(p.DomainName),
			Certificate:    awscertificatemanager.Certificate_FromCertificateArn(st, jsii.String("Certificate"), jsii.String(p.CertificateARN)),
			EndpointType:   awsapigateway.EndpointType_REGIONAL,
			SecurityPolicy: awsapigateway.SecurityPolicy_TLS_1_2,
		})
		dn.AddBasePathMapping(a.Rest, &awsapigateway.BasePathMappingOptions{Stage: a.Rest.DeploymentStage()})
		a.PublicURL = jsii.String("https://" + p.DomainName)
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

	a.Authorizer = newFunction(st, functions.Authorizer, d, p, a.PublicURL)
	auth := awsapigateway.NewRequestAuthorizer(st, jsii.String("KeyAuthorizer"), &awsapigateway.RequestAuthorizerProps{
		Handler:         a.Authorizer.Lambda,
		IdentitySources: &[]*string{awsapigateway.IdentitySource_Header(jsii.String("Authorization"))},
		ResultsCacheTtl: awscdk.Duration_Seconds(jsii.Number(p.AuthorizerCacheTTL.Seconds())),
	})

	routes := append([]api.Route{}, p.Routes...)
	sort.SliceStable(routes, func(i, j int) bool { return routes[i].Path < routes[j].Path })
	for _, rt := range routes {
		fn := newFunction(st, functions.RouteFunction(rt), d, p, a.PublicURL)
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
	awscdk.NewCfnOutput(st, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: a.PublicURL,
		Description: jsii.String("the V1 API (ACS_PUBLIC_URL): $ApiUrl/api/v1/...")})
	return a
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
