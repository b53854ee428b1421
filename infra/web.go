package main

import (
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3deployment"
	"github.com/aws/jsii-runtime-go"
)

// Web is the web UI's hosting, in the API stack: a private bucket holding
// the UI's static files (deployed from Props.WebDir), and a CloudFront
// distribution that serves it (Origin Access Control; a path without a
// file extension gets /index.html, the single-page app's routes) and
// forwards the API's paths to the REST API's stage.
//
// It is in the API stack because each side names the other: the
// distribution forwards to the API, and the functions' ACS_PUBLIC_URL and
// the sign-in client's redirect URIs are the distribution's URL (a
// browser's session may change things only from the public URL's origin,
// and the issuer must send people back to the UI). Within one stack the
// order has no cycle: the REST API → the distribution (its API origin is
// built from the API's id and the stage's name, not from the stage) → the
// functions and the sign-in client → the methods → the deployment → the
// stage.
type Web struct {
	Stack        awscdk.Stack
	Bucket       awss3.Bucket
	Distribution awscloudfront.Distribution
	// URL is the distribution's https URL (output WebUrl).
	URL *string
}

// apiPaths are the paths the distribution forwards to the API, uncached,
// with every method, header (but Host), cookie and query string.
var apiPaths = []string{"/api/*", "/sockets/*", "/login*", "/logout"}

// spaRewrite sends a path without a file extension (an app route such as
// /conversations/abc) to /index.html.
const spaRewrite = `function handler(event) {
  var req = event.request;
  var last = req.uri.split('/').pop();
  if (last.indexOf('.') === -1) { req.uri = '/index.html'; }
  return req;
}`

// newWeb adds the web UI's hosting to the API stack, after its REST API
// and before its functions (which are given w.URL).
func newWeb(a *API, p Props) *Web {
	st := a.Stack
	w := &Web{Stack: st}
	w.Bucket = awss3.NewBucket(st, jsii.String("Ui"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		// The files are the build's: a new deployment puts them back.
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	rewrite := awscloudfront.NewFunction(st, jsii.String("SpaRewrite"), &awscloudfront.FunctionProps{
		Code:    awscloudfront.FunctionCode_FromInline(jsii.String(spaRewrite)),
		Runtime: awscloudfront.FunctionRuntime_JS_2_0(),
		Comment: jsii.String("ACS web UI: app routes get /index.html"),
	})
	// The API's stage, named without the stage resource (which comes after
	// the functions).
	apiDomain := awscdk.Fn_Join(jsii.String(""), jsii.Strings(*a.Rest.RestApiId(), ".execute-api.", *st.Region(), ".", *st.UrlSuffix()))
	apiOrigin := awscloudfrontorigins.NewHttpOrigin(apiDomain, &awscloudfrontorigins.HttpOriginProps{
		OriginPath:     jsii.String("/" + p.Stage),
		ProtocolPolicy: awscloudfront.OriginProtocolPolicy_HTTPS_ONLY,
	})
	// Uncached, but the Authorization header must reach the API: CloudFront
	// forwards it only as part of a cache key, so the key holds it with
	// TTLs that cache nothing.
	noCache := awscloudfront.NewCachePolicy(st, jsii.String("ApiNoCache"), &awscloudfront.CachePolicyProps{
		Comment:        jsii.String("ACS API: nothing cached; Authorization forwarded"),
		DefaultTtl:     awscdk.Duration_Seconds(jsii.Number(0)),
		MinTtl:         awscdk.Duration_Seconds(jsii.Number(0)),
		MaxTtl:         awscdk.Duration_Seconds(jsii.Number(1)),
		HeaderBehavior: awscloudfront.CacheHeaderBehavior_AllowList(jsii.String("Authorization")),
	})
	api := &awscloudfront.BehaviorOptions{
		Origin:               apiOrigin,
		AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_ALL(),
		CachePolicy:          noCache,
		OriginRequestPolicy:  awscloudfront.OriginRequestPolicy_ALL_VIEWER_EXCEPT_HOST_HEADER(),
		ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_HTTPS_ONLY,
	}
	behaviours := map[string]*awscloudfront.BehaviorOptions{}
	for _, path := range apiPaths {
		behaviours[path] = api
	}
	w.Distribution = awscloudfront.NewDistribution(st, jsii.String("Distribution"), &awscloudfront.DistributionProps{
		Comment:           jsii.String("ACS web UI and API"),
		DefaultRootObject: jsii.String("index.html"),
		DefaultBehavior: &awscloudfront.BehaviorOptions{
			Origin:               awscloudfrontorigins.S3BucketOrigin_WithOriginAccessControl(w.Bucket, nil),
			ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
			CachePolicy:          awscloudfront.CachePolicy_CACHING_OPTIMIZED(),
			FunctionAssociations: &[]*awscloudfront.FunctionAssociation{{
				Function: rewrite, EventType: awscloudfront.FunctionEventType_VIEWER_REQUEST,
			}},
		},
		AdditionalBehaviors: &behaviours,
		PriceClass:          awscloudfront.PriceClass_PRICE_CLASS_100,
	})
	w.URL = awscdk.Fn_Join(jsii.String(""), jsii.Strings("https://", *w.Distribution.DistributionDomainName()))
	if fi, err := os.Stat(p.WebDir); err == nil && fi.IsDir() {
		awss3deployment.NewBucketDeployment(st, jsii.String("UiFiles"), &awss3deployment.BucketDeploymentProps{
			Sources:           &[]awss3deployment.ISource{awss3deployment.Source_Asset(jsii.String(p.WebDir), nil)},
			DestinationBucket: w.Bucket,
			Distribution:      w.Distribution,
			DistributionPaths: jsii.Strings("/*"),
		})
	} else {
		awscdk.Annotations_Of(st).AddWarningV2(jsii.String("acs:no-web-ui"), jsii.String(
			"no web UI files at "+p.WebDir+" (-c webDir=…): the UI bucket stays empty"), nil)
	}
	awscdk.NewCfnOutput(st, jsii.String("WebUrl"), &awscdk.CfnOutputProps{Value: w.URL,
		Description: jsii.String("the web UI, its sign-in and the API under /api (ACS_PUBLIC_URL)")})
	return w
}
