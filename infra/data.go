package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/acs-project/acs/functions"
	"github.com/acs-project/acs/shared/dynamostore"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/sqsqueue"
)

// secretRef is a Secrets Manager secret as a function names it (ref, its
// ARN or name) and as IAM does (arn).
type secretRef struct{ ref, arn *string }

// Data is the stateful part: the table, the bucket, the start queue and
// its dead-letter queue, and the secrets. Everything with data in it is
// retained when the stack is deleted. The queues live here, not with the
// provisioner, because both the API (start routes) and the provisioning
// stack use them, and the provisioning stack depends on the API's URL.
type Data struct {
	Stack              awscdk.Stack
	Table              awsdynamodb.CfnTable
	Bucket             awss3.Bucket
	Queue, DeadLetters awssqs.Queue
	// SecretKey is ACS_SECRET_KEY, generated; RuntimeKey the runtime API's
	// key (given or generated, runtime API only); LLMKey the agents' LLM key
	// (given, optional).
	SecretKey, RuntimeKey, LLMKey *secretRef
	// UserPool and HostedUI are the Cognito user pool people sign in with
	// and its hosted sign-in domain (oidc=cognito only).
	UserPool awscognito.UserPool
	HostedUI awscognito.UserPoolDomain
}

// NewData makes the data stack.
func NewData(scope constructs.Construct, id string, p Props, sp *awscdk.StackProps) *Data {
	st := awscdk.NewStack(scope, jsii.String(id), sp)
	d := &Data{Stack: st}

	// The table: dynamostore's own definition, on demand, with point-in-time
	// recovery, deletion protection and encryption under an AWS-owned key.
	def := dynamostore.TableDefinition("")
	var attrs []interface{}
	for _, a := range def.AttributeDefinitions {
		attrs = append(attrs, &awsdynamodb.CfnTable_AttributeDefinitionProperty{
			AttributeName: a.AttributeName, AttributeType: jsii.String(string(a.AttributeType))})
	}
	keys := func(ks []dynamoKey) []interface{} {
		var out []interface{}
		for _, k := range ks {
			out = append(out, &awsdynamodb.CfnTable_KeySchemaProperty{AttributeName: k.name, KeyType: jsii.String(k.typ)})
		}
		return out
	}
	var gsis []interface{}
	for _, g := range def.GlobalSecondaryIndexes {
		proj := &awsdynamodb.CfnTable_ProjectionProperty{ProjectionType: jsii.String(string(g.Projection.ProjectionType))}
		if len(g.Projection.NonKeyAttributes) > 0 {
			proj.NonKeyAttributes = jsii.Strings(g.Projection.NonKeyAttributes...)
		}
		gsis = append(gsis, &awsdynamodb.CfnTable_GlobalSecondaryIndexProperty{
			IndexName: g.IndexName, KeySchema: keys(keySchema(g.KeySchema)), Projection: proj})
	}
	d.Table = awsdynamodb.NewCfnTable(st, jsii.String("Table"), &awsdynamodb.CfnTableProps{
		BillingMode:                      jsii.String(string(def.BillingMode)),
		AttributeDefinitions:             attrs,
		KeySchema:                        keys(keySchema(def.KeySchema)),
		GlobalSecondaryIndexes:           gsis,
		TimeToLiveSpecification:          &awsdynamodb.CfnTable_TimeToLiveSpecificationProperty{AttributeName: jsii.String(dynamostore.TTLAttribute), Enabled: true},
		PointInTimeRecoverySpecification: &awsdynamodb.CfnTable_PointInTimeRecoverySpecificationProperty{PointInTimeRecoveryEnabled: true},
		DeletionProtectionEnabled:        true,
		// SSEEnabled false: DynamoDB encrypts with an AWS-owned key.
		SseSpecification: &awsdynamodb.CfnTable_SSESpecificationProperty{SseEnabled: false},
	})
	d.Table.ApplyRemovalPolicy(awscdk.RemovalPolicy_RETAIN, nil)

	// The bucket: workspace archives and events too large for an item.
	d.Bucket = awss3.NewBucket(st, jsii.String("Bucket"), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		LifecycleRules: &[]*awss3.LifecycleRule{
			// Archives are for support and audit: kept ArchiveExpiryDays.
			{Id: jsii.String("archives"), Prefix: jsii.String(blobPrefix + "/" + sandboxes.ArchivePrefix),
				Expiration: awscdk.Duration_Days(jsii.Number(float64(p.ArchiveExpiryDays)))},
			// Large events live as long as their conversation; rarely read
			// after a month, they move to Intelligent-Tiering.
			{Id: jsii.String("large-events"), Prefix: jsii.String(blobPrefix + "/" + eventBlobPrefix()),
				Transitions: &[]*awss3.Transition{{StorageClass: awss3.StorageClass_INTELLIGENT_TIERING(),
					TransitionAfter: awscdk.Duration_Days(jsii.Number(30))}}},
			// Parts of multipart uploads whose abort failed (s3blob).
			{Id: jsii.String("incomplete-uploads"), AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1))},
		},
	})

	// The start queue and its dead-letter queue, encrypted with SQS-managed
	// keys; the redrive, the visibility timeout from the provisioner's
	// constants.
	d.DeadLetters = awssqs.NewQueue(st, jsii.String("StartDeadLetters"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Seconds(jsii.Number(sqsqueue.DeadLetterRetention.Seconds())),
	})
	d.Queue = awssqs.NewQueue(st, jsii.String("StartQueue"), &awssqs.QueueProps{
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(functions.StartQueueVisibility.Seconds())),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: d.DeadLetters, MaxReceiveCount: jsii.Number(functions.StartQueueMaxReceiveCount)},
	})

	// ACS_SECRET_KEY: generated by Secrets Manager, never in the template.
	// Retained: it opens everything sealed in the table.
	key := awssecretsmanager.NewSecret(st, jsii.String("SecretKey"), &awssecretsmanager.SecretProps{
		Description:          jsii.String("ACS_SECRET_KEY: seals the secrets stored in the ACS table"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{PasswordLength: jsii.Number(48), ExcludePunctuation: jsii.Bool(true)},
		RemovalPolicy:        awscdk.RemovalPolicy_RETAIN,
	})
	d.SecretKey = &secretRef{ref: key.SecretArn(), arn: key.SecretArn()}
	if p.Runtime() == "runtime-api" {
		if p.RuntimeAPIKeySecret != "" {
			d.RuntimeKey = importSecret(st, "RuntimeApiKey", p.RuntimeAPIKeySecret)
		} else {
			rk := awssecretsmanager.NewSecret(st, jsii.String("RuntimeApiKey"), &awssecretsmanager.SecretProps{
				Description:          jsii.String("ACS_RUNTIME_API_KEY: the sandbox runtime API's key"),
				GenerateSecretString: &awssecretsmanager.SecretStringGenerator{PasswordLength: jsii.Number(40), ExcludePunctuation: jsii.Bool(true)},
			})
			d.RuntimeKey = &secretRef{ref: rk.SecretArn(), arn: rk.SecretArn()}
			awscdk.NewCfnOutput(st, jsii.String("RuntimeApiKeySecretArn"), &awscdk.CfnOutputProps{Value: rk.SecretArn(),
				Description: jsii.String("the runtime API key: give its value to the runtime API (ACS_RUNTIME_API_KEY)")})
		}
	}
	if p.LLMAPIKeySecret != "" {
		d.LLMKey = importSecret(st, "LlmApiKey", p.LLMAPIKeySecret)
	}
	if p.OIDC == OIDCCognito {
		newUserPool(d, p)
	}

	for name, v := range map[string]*string{
		"TableName": d.Table.Ref(), "BucketName": d.Bucket.BucketName(), "StartQueueName": d.Queue.QueueName(),
		"DeadLetterQueueName": d.DeadLetters.QueueName(), "SecretKeyArn": key.SecretArn(),
	} {
		awscdk.NewCfnOutput(st, jsii.String(name), &awscdk.CfnOutputProps{Value: v})
	}
	return d
}

// importSecret names an existing secret by ARN or name.
func importSecret(st awscdk.Stack, id, arnOrName string) *secretRef {
	if strings.HasPrefix(arnOrName, "arn:") {
		return &secretRef{ref: jsii.String(arnOrName), arn: jsii.String(arnOrName)}
	}
	// A name: IAM needs the ARN, whose last six characters Secrets Manager
	// chose.
	arn := awscdk.Stack_Of(st).FormatArn(&awscdk.ArnComponents{Service: jsii.String("secretsmanager"), Resource: jsii.String("secret"),
		ResourceName: jsii.String(arnOrName + "-??????"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
	return &secretRef{ref: jsii.String(arnOrName), arn: arn}
}

type dynamoKey struct {
	name *string
	typ  string
}

func keySchema(ks []types.KeySchemaElement) []dynamoKey {
	var out []dynamoKey
	for _, k := range ks {
		out = append(out, dynamoKey{name: k.AttributeName, typ: string(k.KeyType)})
	}
	return out
}

// eventBlobPrefix is the first segment of dynamostore's large-event keys
// ("events/").
func eventBlobPrefix() string {
	k := dynamostore.EventBlobKey("c", "e")
	return k[:strings.Index(k, "/")+1]
}
