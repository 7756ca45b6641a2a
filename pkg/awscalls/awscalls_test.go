package awscalls

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/urlcheck/urlcheck/pkg/bucket/dynamostore"
	"github.com/urlcheck/urlcheck/pkg/queue/sqsqueue"
	"github.com/urlcheck/urlcheck/pkg/results/s3store"
)

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), rand.IntN(1e6))
}

func endpoint(t *testing.T, env string) string {
	t.Helper()
	ep := os.Getenv(env)
	if ep == "" {
		t.Skipf("set %s (make test-aws starts the local servers)", env)
	}
	return ep
}

// newTable makes a DynamoDB table (partition key "domain") that is deleted
// when the test ends.
func newTable(t *testing.T, ctx context.Context, client *dynamodb.Client) string {
	t.Helper()
	table := uniqueName("urlcheck-awscalls")
	if err := dynamostore.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
			t.Errorf("deleting table %s: %v", table, err)
		}
	})
	return table
}

func key(domain string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{"domain": &ddbtypes.AttributeValueMemberS{Value: domain}}
}

func item(domain string, n int) map[string]ddbtypes.AttributeValue {
	m := key(domain)
	m["n"] = &ddbtypes.AttributeValueMemberN{Value: fmt.Sprint(n)}
	return m
}

func TestDynamoDBCounts(t *testing.T) {
	ep := endpoint(t, "URLCHECK_DDB_ENDPOINT")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	counter := NewCounter()
	client, err := dynamostore.NewClient(ctx, ep, "", config.WithAPIOptions(counter.APIOptions()))
	if err != nil {
		t.Fatal(err)
	}
	table := newTable(t, ctx, client)
	tbl := aws.String(table)

	tests := []struct {
		name       string
		do         func() error
		calls      map[string]int
		errors     int
		reads      int
		writes     int
		readUnits  bool // ReadUnits > 0 expected
		writeUnits bool // WriteUnits > 0 expected
	}{
		{"put item", func() error {
			_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: item("a.example", 1)})
			return err
		}, map[string]int{"DynamoDB.PutItem": 1}, 0, 0, 1, false, true},
		{"get item twice", func() error {
			for range 2 {
				if _, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("a.example"), ConsistentRead: aws.Bool(true)}); err != nil {
					return err
				}
			}
			return nil
		}, map[string]int{"DynamoDB.GetItem": 2}, 0, 2, 0, true, false},
		{"update and delete", func() error {
			if _, err := client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tbl, Key: key("a.example"),
				UpdateExpression:          aws.String("SET n = n + :one"),
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": &ddbtypes.AttributeValueMemberN{Value: "1"}}}); err != nil {
				return err
			}
			_, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tbl, Key: key("a.example")})
			return err
		}, map[string]int{"DynamoDB.UpdateItem": 1, "DynamoDB.DeleteItem": 1}, 0, 0, 2, false, true},
		{"batch write and transaction", func() error {
			if _, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{table: {
				{PutRequest: &ddbtypes.PutRequest{Item: item("b.example", 1)}},
				{PutRequest: &ddbtypes.PutRequest{Item: item("c.example", 1)}},
			}}}); err != nil {
				return err
			}
			_, err := client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
				{Put: &ddbtypes.Put{TableName: tbl, Item: item("d.example", 1)}},
				{Delete: &ddbtypes.Delete{TableName: tbl, Key: key("b.example")}},
			}})
			return err
		}, map[string]int{"DynamoDB.BatchWriteItem": 1, "DynamoDB.TransactWriteItems": 1}, 0, 0, 2, false, true},
		{"query, scan, batch get", func() error {
			if _, err := client.Query(ctx, &dynamodb.QueryInput{TableName: tbl, KeyConditionExpression: aws.String("#d = :d"),
				ExpressionAttributeNames:  map[string]string{"#d": "domain"},
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":d": &ddbtypes.AttributeValueMemberS{Value: "c.example"}}}); err != nil {
				return err
			}
			if _, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: tbl}); err != nil {
				return err
			}
			_, err := client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{table: {Keys: []map[string]ddbtypes.AttributeValue{key("c.example"), key("d.example")}}}})
			return err
		}, map[string]int{"DynamoDB.Query": 1, "DynamoDB.Scan": 1, "DynamoDB.BatchGetItem": 1}, 0, 3, 0, true, false},
		{"failed condition", func() error {
			_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: item("c.example", 2), ConditionExpression: aws.String("attribute_not_exists(#d)"),
				ExpressionAttributeNames: map[string]string{"#d": "domain"}})
			var ccf *ddbtypes.ConditionalCheckFailedException
			if !errors.As(err, &ccf) {
				return fmt.Errorf("want ConditionalCheckFailedException, got %v", err)
			}
			return nil
		}, map[string]int{"DynamoDB.PutItem": 1}, 1, 0, 1, false, true},
		{"describe table is neither read nor write", func() error {
			_, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: tbl})
			return err
		}, map[string]int{"DynamoDB.DescribeTable": 1}, 0, 0, 0, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := counter.Snapshot()
			if err := tc.do(); err != nil {
				t.Fatal(err)
			}
			got := counter.Snapshot().Sub(base)
			if !reflect.DeepEqual(got.Calls, tc.calls) {
				t.Errorf("Calls = %v, want %v", got.Calls, tc.calls)
			}
			if !reflect.DeepEqual(got.Attempts, tc.calls) {
				t.Errorf("Attempts = %v, want %v (one per call, no retries)", got.Attempts, tc.calls)
			}
			if n := sumMap(got.Errors); n != tc.errors {
				t.Errorf("Errors = %v, want %d in all", got.Errors, tc.errors)
			}
			if got.DynamoDBReads() != tc.reads || got.DynamoDBWrites() != tc.writes {
				t.Errorf("reads, writes = %d, %d, want %d, %d", got.DynamoDBReads(), got.DynamoDBWrites(), tc.reads, tc.writes)
			}
			if (got.ReadUnits > 0) != tc.readUnits || (got.WriteUnits > 0) != tc.writeUnits {
				t.Errorf("ReadUnits, WriteUnits = %g, %g, want >0: %v, %v", got.ReadUnits, got.WriteUnits, tc.readUnits, tc.writeUnits)
			}
			t.Logf("units read %g write %g", got.ReadUnits, got.WriteUnits)
		})
	}

	t.Run("caller's input is not modified and its own setting wins", func(t *testing.T) {
		in := &dynamodb.PutItemInput{TableName: tbl, Item: item("e.example", 1)}
		out, err := client.PutItem(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if in.ReturnConsumedCapacity != "" {
			t.Errorf("input's ReturnConsumedCapacity = %q, want it left unset", in.ReturnConsumedCapacity)
		}
		if out.ConsumedCapacity == nil || aws.ToFloat64(out.ConsumedCapacity.CapacityUnits) != 1 {
			t.Errorf("ConsumedCapacity = %+v, want 1 unit for a small item", out.ConsumedCapacity)
		}
		base := counter.Snapshot()
		if _, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("e.example"), ReturnConsumedCapacity: ddbtypes.ReturnConsumedCapacityNone}); err != nil {
			t.Fatal(err)
		}
		if got := counter.Snapshot().Sub(base); got.ReadUnits != 0 || got.Calls["DynamoDB.GetItem"] != 1 {
			t.Errorf("with ReturnConsumedCapacity NONE: %+v, want 1 call and no units", got)
		}
	})
}

func sumMap(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// failFirst is a Finalize middleware, placed after the counter's attempt
// middleware, that fails the first n attempts of each call with a retryable
// HTTP 503 without sending them.
func failFirst(n int) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("test.failFirst",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				if attemptOf(ctx) <= n {
					return middleware.FinalizeOutput{}, middleware.Metadata{}, &awshttp.ResponseError{
						ResponseError: &smithyhttp.ResponseError{
							Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 503, Header: http.Header{}, Body: http.NoBody}},
							Err:      &smithy.GenericAPIError{Code: "ServiceUnavailable", Fault: smithy.FaultServer},
						},
					}
				}
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}
}

type attemptCountKey struct{}

// attemptOf increments and returns the attempt number kept in ctx by
// countAttempts.
func attemptOf(ctx context.Context) int {
	if p, ok := ctx.Value(attemptCountKey{}).(*atomic.Int64); ok {
		return int(p.Add(1))
	}
	return math.MaxInt
}

// countAttempts gives each call an attempt number for failFirst.
func countAttempts(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("test.countAttempts",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			return next.HandleInitialize(context.WithValue(ctx, attemptCountKey{}, new(atomic.Int64)), in)
		}), middleware.Before)
}

func TestAttemptsWithRetries(t *testing.T) {
	ep := endpoint(t, "URLCHECK_DDB_ENDPOINT")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	setup, err := dynamostore.NewClient(ctx, ep, "")
	if err != nil {
		t.Fatal(err)
	}
	table := newTable(t, ctx, setup)

	tests := []struct {
		name                   string
		failures, maxAttempts  int
		wantAttempts, wantErrs int
	}{
		{"no fault", 0, 3, 1, 0},
		{"two faults, retried", 2, 3, 3, 0},
		{"three faults, retries exhausted", 3, 3, 3, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			counter := NewCounter()
			retryer := func() aws.Retryer {
				return retry.NewStandard(func(o *retry.StandardOptions) {
					o.MaxAttempts = tc.maxAttempts
					o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
				})
			}
			client, err := dynamostore.NewClient(ctx, ep, "", config.WithRetryer(retryer),
				config.WithAPIOptions(append(counter.APIOptions(), countAttempts, failFirst(tc.failures))))
			if err != nil {
				t.Fatal(err)
			}
			var calls []Call
			counter.OnCall(func(c Call) { calls = append(calls, c) })
			_, err = client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("missing.example")})
			if (err != nil) != (tc.wantErrs > 0) {
				t.Fatalf("GetItem: err = %v, want error: %v", err, tc.wantErrs > 0)
			}
			got := counter.Snapshot()
			want := Tally{Calls: map[string]int{"DynamoDB.GetItem": 1}, Attempts: map[string]int{"DynamoDB.GetItem": tc.wantAttempts}, Errors: map[string]int{}}
			if tc.wantErrs > 0 {
				want.Errors["DynamoDB.GetItem"] = tc.wantErrs
			}
			if !reflect.DeepEqual(got.Calls, want.Calls) || !reflect.DeepEqual(got.Attempts, want.Attempts) || !reflect.DeepEqual(got.Errors, want.Errors) {
				t.Errorf("tally = %+v, want %+v", got, want)
			}
			if len(calls) != 1 || calls[0].Attempts != tc.wantAttempts || (calls[0].Err != nil) != (tc.wantErrs > 0) {
				t.Errorf("OnCall saw %+v, want one call of %d attempts", calls, tc.wantAttempts)
			}
			if tc.wantErrs == 0 && got.ReadUnits != 0.5 {
				t.Errorf("ReadUnits = %g, want 0.5 (eventually consistent GetItem)", got.ReadUnits)
			}
		})
	}
}

func TestSQSCounts(t *testing.T) {
	ep := endpoint(t, "URLCHECK_SQS_ENDPOINT")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	counter := NewCounter()
	client, err := sqsqueue.NewClient(ctx, ep, "", config.WithAPIOptions(counter.APIOptions()))
	if err != nil {
		t.Fatal(err)
	}
	url, err := sqsqueue.CreateQueue(ctx, client, uniqueName("urlcheck-awscalls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
			t.Errorf("deleting queue: %v", err)
		}
	})
	q := aws.String(url)
	big := strings.Repeat("x", 100<<10) // 100 KiB: two 64 KiB chunks

	tests := []struct {
		name     string
		do       func() error
		calls    map[string]int
		requests int
	}{
		{"send two", func() error {
			for range 2 {
				if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String("hello")}); err != nil {
					return err
				}
			}
			return nil
		}, map[string]int{"SQS.SendMessage": 2}, 2},
		{"send a batch", func() error {
			_, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q, Entries: []sqstypes.SendMessageBatchRequestEntry{
				{Id: aws.String("1"), MessageBody: aws.String("a")}, {Id: aws.String("2"), MessageBody: aws.String("b")},
			}})
			return err
		}, map[string]int{"SQS.SendMessageBatch": 1}, 1},
		{"receive and delete", func() error {
			out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, MaxNumberOfMessages: 1})
			if err != nil {
				return err
			}
			if len(out.Messages) != 1 {
				return fmt.Errorf("received %d messages, want 1", len(out.Messages))
			}
			_, err = client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q, ReceiptHandle: out.Messages[0].ReceiptHandle})
			return err
		}, map[string]int{"SQS.ReceiveMessage": 1, "SQS.DeleteMessage": 1}, 2},
		{"a 100 KiB message is billed as 2 requests", func() error {
			_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String(big)})
			return err
		}, map[string]int{"SQS.SendMessage": 1}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := counter.Snapshot()
			if err := tc.do(); err != nil {
				t.Fatal(err)
			}
			got := counter.Snapshot().Sub(base)
			if !reflect.DeepEqual(got.Calls, tc.calls) {
				t.Errorf("Calls = %v, want %v", got.Calls, tc.calls)
			}
			if got.SQSRequests() != tc.requests {
				t.Errorf("SQSRequests = %d, want %d", got.SQSRequests(), tc.requests)
			}
		})
	}
}

func TestS3Counts(t *testing.T) {
	ep := endpoint(t, "URLCHECK_S3_ENDPOINT")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	counter := NewCounter()
	client, err := s3store.NewClient(ctx, ep, "", config.WithAPIOptions(counter.APIOptions()))
	if err != nil {
		t.Fatal(err)
	}
	bucket := uniqueName("urlcheck-awscalls")
	if err := s3store.CreateBucket(ctx, client, bucket); err != nil {
		t.Fatal(err)
	}
	b := aws.String(bucket)
	t.Cleanup(func() {
		ctx := context.Background()
		for _, k := range []string{"report.csv", "other.csv"} {
			_, _ = client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String(k)})
		}
		if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: b}); err != nil {
			t.Errorf("deleting bucket: %v", err)
		}
	})
	var reportPuts atomic.Int64
	counter.OnCall(func(c Call) {
		if in, ok := c.Input.(*s3.PutObjectInput); ok && c.Err == nil && aws.ToString(in.Key) == "report.csv" {
			reportPuts.Add(1)
		}
	})
	put := func(k string) error {
		_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String(k), Body: bytes.NewReader([]byte("a,b\n"))})
		return err
	}

	tests := []struct {
		name                string
		do                  func() error
		calls               map[string]int
		puts, lists, gets   int
		wantReportPutsAfter int64
	}{
		{"put twice, one other", func() error {
			for _, k := range []string{"report.csv", "report.csv", "other.csv"} {
				if err := put(k); err != nil {
					return err
				}
			}
			return nil
		}, map[string]int{"S3.PutObject": 3}, 3, 0, 0, 2},
		{"get, head, list", func() error {
			out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("report.csv")})
			if err != nil {
				return err
			}
			if _, err := io.Copy(io.Discard, out.Body); err != nil {
				return err
			}
			out.Body.Close()
			if _, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("other.csv")}); err != nil {
				return err
			}
			_, err = client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b})
			return err
		}, map[string]int{"S3.GetObject": 1, "S3.HeadObject": 1, "S3.ListObjectsV2": 1}, 1, 1, 2, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := counter.Snapshot()
			if err := tc.do(); err != nil {
				t.Fatal(err)
			}
			got := counter.Snapshot().Sub(base)
			if !reflect.DeepEqual(got.Calls, tc.calls) {
				t.Errorf("Calls = %v, want %v", got.Calls, tc.calls)
			}
			if got.S3Puts() != tc.puts || got.S3Lists() != tc.lists || got.S3Gets() != tc.gets {
				t.Errorf("S3Puts, S3Lists, S3Gets = %d, %d, %d, want %d, %d, %d", got.S3Puts(), got.S3Lists(), got.S3Gets(), tc.puts, tc.lists, tc.gets)
			}
			if n := reportPuts.Load(); n != tc.wantReportPutsAfter {
				t.Errorf("OnCall counted %d PutObject of report.csv, want %d", n, tc.wantReportPutsAfter)
			}
		})
	}
}

func TestGrouping(t *testing.T) {
	tl := Tally{Calls: map[string]int{
		"DynamoDB.PutItem": 2, "DynamoDB.UpdateItem": 3, "DynamoDB.DeleteItem": 1, "DynamoDB.BatchWriteItem": 1, "DynamoDB.TransactWriteItems": 1,
		"DynamoDB.GetItem": 5, "DynamoDB.Query": 1, "DynamoDB.Scan": 1, "DynamoDB.BatchGetItem": 1, "DynamoDB.TransactGetItems": 1,
		"DynamoDB.CreateTable": 1, "DynamoDB.DescribeTable": 4,
		"SQS.SendMessage": 2, "SQS.ReceiveMessage": 3, "SQS.DeleteMessageBatch": 1,
		"S3.PutObject": 4, "S3.CopyObject": 1, "S3.CreateMultipartUpload": 1, "S3.UploadPart": 3, "S3.CompleteMultipartUpload": 1,
		"S3.ListObjectsV2": 2, "S3.GetObject": 6, "S3.HeadObject": 1, "S3.DeleteObject": 9, "S3.AbortMultipartUpload": 1,
	}, SQSExtraChunks: 2}
	tests := []struct {
		name      string
		got, want int
	}{
		{"DynamoDBWrites", tl.DynamoDBWrites(), 8},
		{"DynamoDBReads", tl.DynamoDBReads(), 9},
		{"SQSRequests", tl.SQSRequests(), 8},
		{"S3Puts", tl.S3Puts(), 12},
		{"S3Lists", tl.S3Lists(), 2},
		{"S3Gets", tl.S3Gets(), 7},
		{"TotalCalls", tl.TotalCalls(), 57},
		{"zero tally", Tally{}.DynamoDBWrites() + Tally{}.SQSRequests() + Tally{}.S3Gets(), 0},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

func TestSub(t *testing.T) {
	base := Tally{Calls: map[string]int{"SQS.SendMessage": 2, "S3.GetObject": 1}, Attempts: map[string]int{"SQS.SendMessage": 3}, ReadUnits: 1, WriteUnits: 2, SQSExtraChunks: 1}
	now := Tally{Calls: map[string]int{"SQS.SendMessage": 5, "S3.GetObject": 1, "S3.PutObject": 1}, Attempts: map[string]int{"SQS.SendMessage": 6, "S3.PutObject": 1}, Errors: map[string]int{"S3.PutObject": 1}, ReadUnits: 1.5, WriteUnits: 4, SQSExtraChunks: 3}
	got := now.Sub(base)
	want := Tally{
		Calls:     map[string]int{"SQS.SendMessage": 3, "S3.PutObject": 1},
		Attempts:  map[string]int{"SQS.SendMessage": 3, "S3.PutObject": 1},
		Errors:    map[string]int{"S3.PutObject": 1},
		ReadUnits: 0.5, WriteUnits: 2, SQSExtraChunks: 2,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Sub = %+v, want %+v", got, want)
	}
	if back := base.Sub(now); back.Calls["SQS.SendMessage"] != -3 || back.Calls["S3.PutObject"] != -1 {
		t.Errorf("reverse Sub = %+v, want negative differences", back.Calls)
	}
}

func TestSQSPayload(t *testing.T) {
	s := func(n int) *string { return aws.String(strings.Repeat("x", n)) }
	tests := []struct {
		name          string
		input, output any
		bytes, chunks int
	}{
		{"small send", &sqs.SendMessageInput{MessageBody: s(10)}, nil, 10, 1},
		{"exactly 64 KiB", &sqs.SendMessageInput{MessageBody: s(64 << 10)}, nil, 64 << 10, 1},
		{"one byte over", &sqs.SendMessageInput{MessageBody: s(64<<10 - 4), MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"k": {DataType: aws.String("String"), StringValue: aws.String("v")}}}, nil, 64<<10 + 4, 2},
		{"batch of 256 KiB", &sqs.SendMessageBatchInput{Entries: []sqstypes.SendMessageBatchRequestEntry{{MessageBody: s(128 << 10)}, {MessageBody: s(128 << 10)}}}, nil, 256 << 10, 4},
		{"receive", &sqs.ReceiveMessageInput{}, &sqs.ReceiveMessageOutput{Messages: []sqstypes.Message{{Body: s(70 << 10)}, {Body: s(1)}}}, 70<<10 + 1, 2},
		{"other operation", &sqs.DeleteMessageInput{}, nil, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := sqsPayload(tc.input, tc.output)
			if n != tc.bytes || sqsChunks(n) != tc.chunks {
				t.Errorf("payload %d bytes, %d chunks, want %d, %d", n, sqsChunks(n), tc.bytes, tc.chunks)
			}
		})
	}
}

func TestCost(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }
	tests := []struct {
		name        string
		tally       Tally
		gbs         float64
		invocations int
		api         int
		want        Cost
	}{
		{"empty", Tally{}, 0, 0, 0, Cost{}},
		{"consumed units known", Tally{
			Calls:      map[string]int{"DynamoDB.PutItem": 1000, "DynamoDB.GetItem": 1000},
			ReadUnits:  500, // eventually consistent reads
			WriteUnits: 1200,
		}, 0, 0, 0, Cost{DynamoDB: 1200*0.625e-6 + 500*0.125e-6, Total: 1200*0.625e-6 + 500*0.125e-6}},
		{"units unknown: call counts, transactions x2", Tally{
			Calls: map[string]int{"DynamoDB.UpdateItem": 10, "DynamoDB.TransactWriteItems": 5, "DynamoDB.Query": 4, "DynamoDB.TransactGetItems": 1, "DynamoDB.DescribeTable": 7},
		}, 0, 0, 0, Cost{DynamoDB: 20*0.625e-6 + 6*0.125e-6, Total: 20*0.625e-6 + 6*0.125e-6}},
		{"every service", Tally{
			Calls:          map[string]int{"SQS.SendMessageBatch": 7500, "SQS.ReceiveMessage": 10000, "S3.PutObject": 1000, "S3.ListObjectsV2": 10, "S3.GetObject": 500, "S3.DeleteObject": 1000},
			SQSExtraChunks: 500,
		}, 1000, 2000, 3000, Cost{
			SQS:    18000 * 0.40e-6,
			S3:     1010*0.005e-3 + 500*0.0004e-3,
			Lambda: 1000*0.0000133334 + 2000*0.20e-6,
			API:    3000 * 1e-6,
			Total:  18000*0.40e-6 + 1010*0.005e-3 + 500*0.0004e-3 + 1000*0.0000133334 + 2000*0.20e-6 + 3000*1e-6,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := USEast1.Cost(tc.tally, tc.gbs, tc.invocations, tc.api)
			if !near(got.DynamoDB, tc.want.DynamoDB) || !near(got.SQS, tc.want.SQS) || !near(got.S3, tc.want.S3) ||
				!near(got.Lambda, tc.want.Lambda) || !near(got.API, tc.want.API) || !near(got.Total, tc.want.Total) {
				t.Errorf("Cost = %+v, want %+v", got, tc.want)
			}
			scaled := got.Scale(2)
			if !near(scaled.Total, 2*tc.want.Total) || !near(scaled.SQS, 2*tc.want.SQS) {
				t.Errorf("Scale(2) = %+v", scaled)
			}
		})
	}
}
