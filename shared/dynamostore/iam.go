package dynamostore

// IAMActions are the IAM actions the store's requests need, on the table
// and its indexes (Query reads indexes): the AWS stacks grant exactly
// these. TransactWriteItems needs the actions of its parts (PutItem,
// UpdateItem, DeleteItem); CreateTable and the time-to-live calls are for
// tests and installers, not for the functions.
var IAMActions = []string{
	"dynamodb:BatchGetItem",
	"dynamodb:BatchWriteItem",
	"dynamodb:DeleteItem",
	"dynamodb:GetItem",
	"dynamodb:PutItem",
	"dynamodb:Query",
	"dynamodb:UpdateItem",
}
