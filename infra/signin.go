package main

import (
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"

	"github.com/acs-project/acs/shared/config"
)

// The sign-in variables the functions read (shared/config) besides
// config.EnvOIDCIssuer, EnvOIDCClientID and EnvOIDCClientSecret.
const (
	envOIDCName           = "ACS_OIDC_NAME"
	envOIDCAllowedDomains = "ACS_OIDC_ALLOWED_DOMAINS"
	envOIDCAllowedEmails  = "ACS_OIDC_ALLOWED_EMAILS"
	envOIDCCreateUsers    = "ACS_OIDC_CREATE_USERS"
)

// The paths of the sign-in pages under the public URL: where the issuer
// sends people back after signing in, and after signing out.
const (
	oidcCallbackPath = "/login/oidc/callback"
	oidcLogoutPath   = "/login"
)

// newUserPool makes the Cognito user pool and its hosted sign-in domain
// (in the data stack: the pool holds people's accounts, so it is retained
// and protected from deletion). E-mail is the sign-in name and is
// verified; people sign themselves up only with CognitoSelfSignUp.
func newUserPool(d *Data, p Props) {
	st := d.Stack
	d.UserPool = awscognito.NewUserPool(st, jsii.String("UserPool"), &awscognito.UserPoolProps{
		UserPoolName:        jsii.String("acs"),
		SelfSignUpEnabled:   jsii.Bool(p.CognitoSelfSignUp),
		SignInAliases:       &awscognito.SignInAliases{Email: jsii.Bool(true)},
		SignInCaseSensitive: jsii.Bool(false),
		AutoVerify:          &awscognito.AutoVerifiedAttrs{Email: jsii.Bool(true)},
		KeepOriginal:        &awscognito.KeepOriginalAttrs{Email: jsii.Bool(true)},
		StandardAttributes:  &awscognito.StandardAttributes{Email: &awscognito.StandardAttribute{Required: jsii.Bool(true), Mutable: jsii.Bool(true)}},
		AccountRecovery:     awscognito.AccountRecovery_EMAIL_ONLY,
		EnableSmsRole:       jsii.Bool(false),
		DeletionProtection:  jsii.Bool(true),
		RemovalPolicy:       awscdk.RemovalPolicy_RETAIN,
	})
	prefix := jsii.String(p.CognitoDomainPrefix)
	if p.CognitoDomainPrefix == "" {
		prefix = awscdk.Fn_Join(jsii.String(""), jsii.Strings("acs-", *awscdk.Aws_ACCOUNT_ID()))
	}
	d.HostedUI = d.UserPool.AddDomain(jsii.String("HostedUi"), &awscognito.UserPoolDomainOptions{
		CognitoDomain:       &awscognito.CognitoDomainOptions{DomainPrefix: prefix},
		ManagedLoginVersion: awscognito.ManagedLoginVersion_CLASSIC_HOSTED_UI,
	})
	awscdk.NewCfnOutput(st, jsii.String("UserPoolId"), &awscdk.CfnOutputProps{Value: d.UserPool.UserPoolId(),
		Description: jsii.String("the Cognito user pool people sign in with (aws cognito-idp admin-create-user --user-pool-id …)")})
	awscdk.NewCfnOutput(st, jsii.String("HostedUiUrl"), &awscdk.CfnOutputProps{Value: d.HostedUI.BaseUrl(nil),
		Description: jsii.String("Cognito's hosted sign-in")})
}

// signIn is the OpenID Connect client the functions that sign people in
// (config.NeedSignIn) are configured with: nil when OIDC is off.
type signIn struct {
	issuer, clientID *string
	// secret holds the client secret; nil for a public client.
	secret *secretRef
}

// newSignIn makes ACS's OpenID Connect client: with Cognito, an app client
// of the data stack's user pool (authorization code grant, which Cognito
// accepts with PKCE; openid, email and profile; a generated secret, copied
// into a Secrets Manager secret by CloudFormation so that it is in neither
// the template nor the functions' configuration); with your own issuer,
// its client id and the secret named by the props.
func newSignIn(st awscdk.Stack, d *Data, p Props, publicURL *string) *signIn {
	switch p.OIDC {
	case OIDCIssuer:
		si := &signIn{issuer: jsii.String(p.OIDCIssuerURL), clientID: jsii.String(p.OIDCClientID)}
		if p.OIDCClientSecret != "" {
			si.secret = importSecret(st, "OidcClientSecret", p.OIDCClientSecret)
		}
		return si
	case OIDCCognito:
	default:
		return nil
	}
	under := func(path string) *string {
		return awscdk.Fn_Join(jsii.String(""), &[]*string{publicURL, jsii.String(path)})
	}
	client := awscognito.NewCfnUserPoolClient(st, jsii.String("SignInClient"), &awscognito.CfnUserPoolClientProps{
		UserPoolId:                      d.UserPool.UserPoolId(),
		ClientName:                      jsii.String("acs"),
		GenerateSecret:                  jsii.Bool(true),
		AllowedOAuthFlowsUserPoolClient: jsii.Bool(true),
		AllowedOAuthFlows:               jsii.Strings("code"),
		AllowedOAuthScopes:              jsii.Strings("openid", "email", "profile"),
		CallbackUrLs:                    &[]*string{under(oidcCallbackPath)},
		LogoutUrLs:                      &[]*string{under(oidcLogoutPath)},
		SupportedIdentityProviders:      jsii.Strings("COGNITO"),
		// The hosted UI only: no direct password or SRP sign-in through
		// Cognito's API with this client.
		ExplicitAuthFlows:          jsii.Strings("ALLOW_REFRESH_TOKEN_AUTH"),
		PreventUserExistenceErrors: jsii.String("ENABLED"),
	})
	secret := awssecretsmanager.NewSecret(st, jsii.String("OidcClientSecret"), &awssecretsmanager.SecretProps{
		Description: jsii.String("ACS_OIDC_CLIENT_SECRET: the secret of ACS's Cognito app client"),
		// A reference CloudFormation resolves at deployment, not the value.
		SecretStringValue: awscdk.SecretValue_ResourceAttribute(client.AttrClientSecret()),
	})
	issuer := awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("https://cognito-idp."), awscdk.Aws_REGION(), jsii.String("."),
		awscdk.Aws_URL_SUFFIX(), jsii.String("/"), d.UserPool.UserPoolId()})
	awscdk.NewCfnOutput(st, jsii.String("OidcIssuer"), &awscdk.CfnOutputProps{Value: issuer,
		Description: jsii.String("the OpenID Connect issuer of the sign-in pages (ACS_OIDC_ISSUER)")})
	return &signIn{issuer: issuer, clientID: client.Ref(), secret: &secretRef{ref: secret.SecretArn(), arn: secret.SecretArn()}}
}

// env is what a function that signs people in is given: the issuer, the
// client and the props' settings; the secret as its Secrets Manager
// secret (config.SecretARNSuffix).
func (si *signIn) env(p Props) map[string]value {
	name := p.OIDCName
	if name == "" {
		name = config.DefaultOIDCName
	}
	env := map[string]value{
		config.EnvOIDCIssuer:   si.issuer,
		config.EnvOIDCClientID: si.clientID,
		envOIDCName:            jsii.String(name),
	}
	if si.secret != nil {
		env[config.EnvOIDCClientSecret+config.SecretARNSuffix] = si.secret.ref
	}
	if p.OIDCAllowedDomains != "" {
		env[envOIDCAllowedDomains] = jsii.String(p.OIDCAllowedDomains)
	}
	if p.OIDCAllowedEmails != "" {
		env[envOIDCAllowedEmails] = jsii.String(p.OIDCAllowedEmails)
	}
	if p.OIDCCreateUsers != nil {
		env[envOIDCCreateUsers] = jsii.String(strconv.FormatBool(*p.OIDCCreateUsers))
	}
	return env
}
