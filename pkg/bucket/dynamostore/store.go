// Package dynamostore is the DynamoDB implementation of bucket.Store that the
// serverless pipeline uses to share each domain's rate-limiter state
// (bucket.State) between concurrent workers.
//
// # Storage layout
//
// One table, partition key "domain" (S, the registrable domain), no sort key.
// Each item holds:
//
//	domain   S  the key
//	version  N  bucket.State.Version, the compare-and-swap version (1, 2, ...)
//	state    S  the rest of bucket.State as JSON (encoding/json with the
//	            package's field names; the blob's "version" is always 0: the
//	            "version" attribute is the only copy and is authoritative)
//
// Keeping the state as one blob makes every write a single PutItem whose only
// condition is on "version", so the item's layout can follow bucket.State
// without touching the expressions. An item is a few hundred bytes plus about
// 80 per lease, well under DynamoDB's 400 KB item limit.
package dynamostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/urlcheck/urlcheck/pkg/awsconfig"
	"github.com/urlcheck/urlcheck/pkg/bucket"
)

// Attribute names of the table's items.
const (
	// AttrDomain is the partition key (S): the registrable domain.
	AttrDomain = "domain"
	// AttrVersion is the compare-and-swap version (N).
	AttrVersion = "version"
	// AttrState is bucket.State without its Version, as JSON (S).
	AttrState = "state"
)

// Store is a bucket.Store over one DynamoDB table laid out as the package
// documentation describes. It is safe for concurrent use (as is the client).
type Store struct {
	client *dynamodb.Client
	table  string
}

var _ bucket.Store = (*Store)(nil)

// New returns a Store that keeps its items in table, which must already exist
// with partition key "domain" of type S (see CreateTable).
func New(client *dynamodb.Client, table string) *Store {
	return &Store{client: client, table: table}
}

// Load implements bucket.Store: a strongly consistent GetItem. A domain
// without an item yields a zero State (Version 0) and no error; an item that
// cannot be decoded, or a failed request, yields an error naming the domain.
func (s *Store) Load(ctx context.Context, domain string) (bucket.State, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            map[string]types.AttributeValue{AttrDomain: &types.AttributeValueMemberS{Value: domain}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return bucket.State{}, fmt.Errorf("dynamostore: loading domain %q from table %s: %w", domain, s.table, err)
	}
	st, err := decodeItem(out.Item)
	if err != nil {
		return bucket.State{}, fmt.Errorf("dynamostore: loading domain %q from table %s: %w", domain, s.table, err)
	}
	return st, nil
}

// CompareAndSwap implements bucket.Store with one conditional PutItem: the
// condition is that no item exists when next.Version is 0, else that the
// stored version equals next.Version. It stores next with Version+1 and
// returns what it stored. When the condition fails it returns the current
// state taken from the failed request itself
// (ReturnValuesOnConditionCheckFailure ALL_OLD, so no second read; a zero
// State when there is no item) and an error wrapping bucket.ErrConflict.
// Other failures (including a State that JSON cannot encode, such as a NaN
// or infinite float) return a zero State and the wrapped error.
func (s *Store) CompareAndSwap(ctx context.Context, domain string, next bucket.State) (bucket.State, error) {
	stored := next
	stored.Version = next.Version + 1
	item, err := encodeItem(domain, stored)
	if err != nil {
		return bucket.State{}, fmt.Errorf("dynamostore: storing domain %q: %w", domain, err)
	}
	in := &dynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if next.Version == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(#d)")
		in.ExpressionAttributeNames = map[string]string{"#d": AttrDomain}
	} else {
		in.ConditionExpression = aws.String("#v = :old")
		in.ExpressionAttributeNames = map[string]string{"#v": AttrVersion}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{
			":old": &types.AttributeValueMemberN{Value: strconv.FormatInt(next.Version, 10)},
		}
	}
	_, err = s.client.PutItem(ctx, in)
	if err == nil {
		return stored, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		cur, derr := decodeItem(ccf.Item)
		if derr != nil {
			return bucket.State{}, fmt.Errorf("dynamostore: domain %q: version conflict, and the current item is unreadable: %w", domain, derr)
		}
		return cur, fmt.Errorf("dynamostore: domain %q: have version %d, expected %d: %w", domain, cur.Version, next.Version, bucket.ErrConflict)
	}
	return bucket.State{}, fmt.Errorf("dynamostore: storing domain %q in table %s: %w", domain, s.table, err)
}

// encodeItem returns the item that stores st for domain.
func encodeItem(domain string, st bucket.State) (map[string]types.AttributeValue, error) {
	version := st.Version
	st.Version = 0 // the attribute is the only copy; the blob says 0
	blob, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encoding state: %w", err)
	}
	return map[string]types.AttributeValue{
		AttrDomain:  &types.AttributeValueMemberS{Value: domain},
		AttrVersion: &types.AttributeValueMemberN{Value: strconv.FormatInt(version, 10)},
		AttrState:   &types.AttributeValueMemberS{Value: string(blob)},
	}, nil
}

// decodeItem returns the State an item stores; a nil or empty item (no item)
// is the zero State.
func decodeItem(item map[string]types.AttributeValue) (bucket.State, error) {
	if len(item) == 0 {
		return bucket.State{}, nil
	}
	var st bucket.State
	v, ok := item[AttrVersion].(*types.AttributeValueMemberN)
	if !ok {
		return bucket.State{}, fmt.Errorf("item has no numeric %q attribute", AttrVersion)
	}
	version, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return bucket.State{}, fmt.Errorf("item attribute %q: %w", AttrVersion, err)
	}
	if b, ok := item[AttrState].(*types.AttributeValueMemberS); ok {
		if err := json.Unmarshal([]byte(b.Value), &st); err != nil {
			return bucket.State{}, fmt.Errorf("item attribute %q: %w", AttrState, err)
		}
	} else if _, present := item[AttrState]; present {
		return bucket.State{}, fmt.Errorf("item attribute %q is not a string", AttrState)
	}
	st.Version = version
	return st, nil
}

// CreateTable creates table with partition key "domain" (S) and on-demand
// (pay-per-request) billing, then waits until it is ACTIVE, polling every 1 to
// 5 s for at most 5 minutes (or until ctx ends). A table that already exists
// (ResourceInUseException) is not an error: it is only waited for. Its key
// schema is not checked. It is meant for tests and the local pipeline; on AWS
// the table comes from the deployment template.
func CreateTable(ctx context.Context, client *dynamodb.Client, table string) error {
	err := EnsureTable(ctx, client, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(AttrDomain), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(AttrDomain), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		return fmt.Errorf("dynamostore: %w", err)
	}
	return nil
}

// EnsureTable creates the table that in describes unless it exists
// (ResourceInUseException is not an error, and the existing table's schema
// is not checked), then waits until it is ACTIVE, polling every 1 to 5 s
// for at most 5 minutes or until ctx ends. The other tables of the local
// pipeline (package jobs) are made with it too. Errors name the table.
func EnsureTable(ctx context.Context, client *dynamodb.Client, in *dynamodb.CreateTableInput) error {
	table := aws.ToString(in.TableName)
	_, err := client.CreateTable(ctx, in)
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("creating table %s: %w", table, err)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = time.Second
		o.MaxDelay = 5 * time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 5*time.Minute); err != nil {
		return fmt.Errorf("waiting for table %s to become ACTIVE: %w", table, err)
	}
	return nil
}

// NewClient returns a DynamoDB client built from the default AWS
// configuration (environment, shared config files, instance/task roles).
// endpoint, when not empty, overrides the service endpoint (BaseEndpoint,
// e.g. "http://127.0.0.1:8000" for DynamoDB Local); region, when not empty,
// overrides the configured region. The client does not validate the CRC32
// checksum of responses (DisableValidateResponseChecksum): DynamoDB Local
// makes the SDK log a checksum warning on every failed condition otherwise,
// and on AWS TLS already protects response integrity. It returns an error if
// the default configuration cannot be loaded.
// Extra load options (SDK middleware, for instance) go to awsconfig.Load.
func NewClient(ctx context.Context, endpoint, region string, extra ...func(*config.LoadOptions) error) (*dynamodb.Client, error) {
	cfg, err := awsconfig.Load(ctx, region, extra...)
	if err != nil {
		return nil, fmt.Errorf("dynamostore: %w", err)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.DisableValidateResponseChecksum = true
	}), nil
}
