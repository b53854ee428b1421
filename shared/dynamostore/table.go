package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// TableDefinition is the table's definition (on-demand capacity): the
// primary key and the four global secondary indexes (see the package
// documentation). The time-to-live attribute (TTLAttribute) is
// enabled separately (UpdateTimeToLive). Infrastructure code creates the
// production table from it; CreateTable uses it too.
func TableDefinition(name string) *dynamodb.CreateTableInput {
	s := types.ScalarAttributeTypeS
	attrs := []types.AttributeDefinition{}
	for _, a := range []string{aPK, aSK, aGSI1PK, aGSI1SK, aGSI2PK, aGSI2SK, aGSI3PK, aGSI3SK, aGSI4PK, aGSI4SK} {
		attrs = append(attrs, types.AttributeDefinition{AttributeName: aws.String(a), AttributeType: s})
	}
	keys := func(hash, rng string) []types.KeySchemaElement {
		return []types.KeySchemaElement{
			{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange},
		}
	}
	gsi := func(name, hash, rng string, p types.ProjectionType, include ...string) types.GlobalSecondaryIndex {
		return types.GlobalSecondaryIndex{IndexName: aws.String(name), KeySchema: keys(hash, rng),
			Projection: &types.Projection{ProjectionType: p, NonKeyAttributes: include}}
	}
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: attrs,
		KeySchema:            keys(aPK, aSK),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			gsi(idxGSI1, aGSI1PK, aGSI1SK, types.ProjectionTypeAll),
			gsi(idxGSI2, aGSI2PK, aGSI2SK, types.ProjectionTypeAll),
			gsi(idxGSI3, aGSI3PK, aGSI3SK, types.ProjectionTypeInclude, aStatus),
			gsi(idxGSI4, aGSI4PK, aGSI4SK, types.ProjectionTypeKeysOnly),
		},
	}
}

// CreateTable creates the table (TableDefinition) unless it exists, waits
// until it is ACTIVE and enables time to live on TTLAttribute. It is
// idempotent.
func (s *Store) CreateTable(ctx context.Context) error {
	_, err := s.c.CreateTable(ctx, TableDefinition(s.table))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", s.table, fail("CreateTable", err))
	}
	w := dynamodb.NewTableExistsWaiter(s.c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 200*time.Millisecond, 5*time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: &s.table}, 10*time.Minute); err != nil {
		return fmt.Errorf("wait for table %s: %w", s.table, err)
	}
	ttl, err := s.c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &s.table})
	if err == nil && ttl.TimeToLiveDescription != nil && aws.ToString(ttl.TimeToLiveDescription.AttributeName) == TTLAttribute &&
		(ttl.TimeToLiveDescription.TimeToLiveStatus == types.TimeToLiveStatusEnabled ||
			ttl.TimeToLiveDescription.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = s.c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: &s.table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(TTLAttribute), Enabled: aws.Bool(true)}})
	var ae smithy.APIError
	if err != nil && errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" &&
		strings.Contains(strings.ToLower(ae.ErrorMessage()), "already enabled") {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("enable time to live on %s: %w", s.table, fail("UpdateTimeToLive", err))
	}
	return nil
}
