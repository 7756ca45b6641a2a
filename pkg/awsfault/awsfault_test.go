package awsfault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"reflect"
	"sync"
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
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/urlcheck/urlcheck/pkg/awscalls"
	"github.com/urlcheck/urlcheck/pkg/bucket/dynamostore"
	"github.com/urlcheck/urlcheck/pkg/queue/sqsqueue"
	"github.com/urlcheck/urlcheck/pkg/results/s3store"
)

// stackCaller runs calls through a middleware-only stack holding the
// injector's middleware, with a terminal handler standing for the server.
// Like the SDK, it builds a new stack for each call (a stack is not safe for
// concurrent use).
type stackCaller struct {
	f  *Injector
	mu sync.Mutex
	// sent counts the calls that reached the "server".
	sent int
}

func newStackCaller(_ *testing.T, f *Injector) *stackCaller {
	return &stackCaller{f: f}
}

func (sc *stackCaller) call(svc, op string) error {
	stack := middleware.NewStack(op, smithyhttp.NewStackRequest)
	for _, fn := range sc.f.APIOptions() {
		if err := fn(stack); err != nil {
			return fmt.Errorf("building the stack: %w", err)
		}
	}
	server := middleware.HandlerFunc(func(ctx context.Context, in any) (any, middleware.Metadata, error) {
		sc.mu.Lock()
		sc.sent++
		sc.mu.Unlock()
		return &struct{ Body io.ReadCloser }{Body: io.NopCloser(bytes.NewReader(nil))}, middleware.Metadata{}, nil
	})
	ctx := middleware.WithOperationName(middleware.WithServiceID(context.Background(), svc), op)
	_, _, err := middleware.DecorateHandler(server, stack).Handle(ctx, struct{}{})
	return err
}

func TestErrorShape(t *testing.T) {
	sc := newStackCaller(t, New(1, 1))
	err := sc.call("SQS", "SendMessageBatch")
	if !errors.Is(err, ErrInjected) {
		t.Fatalf("err = %v, want ErrInjected", err)
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != ErrorCode || apiErr.ErrorFault() != smithy.FaultServer {
		t.Errorf("APIError = %v, want code %s, server fault", apiErr, ErrorCode)
	}
	var respErr *awshttp.ResponseError
	if !errors.As(err, &respErr) || respErr.HTTPStatusCode() != http.StatusInternalServerError || respErr.ServiceRequestID() == "" {
		t.Errorf("ResponseError = %v, want HTTP 500 with a request ID", respErr)
	}
	var f *Fault
	if !errors.As(err, &f) || f.Service != "SQS" || f.Operation != "SendMessageBatch" || f.After {
		t.Errorf("Fault = %+v, want SQS.SendMessageBatch before sending", f)
	}
	if !retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err).Bool() {
		t.Error("the SDK's retry rules do not find the fault retryable; it should look like a 500")
	}
}

func TestSelection(t *testing.T) {
	calls := []string{"DynamoDB.GetItem", "DynamoDB.PutItem", "SQS.SendMessage", "S3.PutObject", "S3.GetObject"}
	tests := []struct {
		name       string
		services   []string
		operations []string
		rate       float64
		want       map[string]int
	}{
		{"rate 0", nil, nil, 0, map[string]int{}},
		{"all services", nil, nil, 1, map[string]int{"DynamoDB.GetItem": 1, "DynamoDB.PutItem": 1, "SQS.SendMessage": 1, "S3.PutObject": 1, "S3.GetObject": 1}},
		{"DynamoDB only", []string{"DynamoDB"}, nil, 1, map[string]int{"DynamoDB.GetItem": 1, "DynamoDB.PutItem": 1}},
		{"case-insensitive services", []string{"sqs", "s3"}, nil, 1, map[string]int{"SQS.SendMessage": 1, "S3.PutObject": 1, "S3.GetObject": 1}},
		{"operations", nil, []string{"PutItem", "S3.GetObject"}, 1, map[string]int{"DynamoDB.PutItem": 1, "S3.GetObject": 1}},
		{"service and operation", []string{"S3"}, []string{"PutItem", "PutObject"}, 1, map[string]int{"S3.PutObject": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := New(tc.rate, 7, tc.services...)
			f.Operations = tc.operations
			sc := newStackCaller(t, f)
			failed := map[string]int{}
			for _, c := range calls {
				svc, op, _ := cut(c)
				if err := sc.call(svc, op); err != nil {
					failed[c]++
				}
			}
			if !reflect.DeepEqual(failed, tc.want) {
				t.Errorf("failed = %v, want %v", failed, tc.want)
			}
			if got := f.Injected(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Injected = %v, want %v", got, tc.want)
			}
		})
	}
}

func cut(key string) (svc, op string, ok bool) {
	for i := range key {
		if key[i] == '.' {
			return key[:i], key[i+1:], true
		}
	}
	return key, "", false
}

func TestShare(t *testing.T) {
	const n = 2000
	tests := []struct {
		name                 string
		seed                 uint64
		rate, afterShare     float64
		minFaults, maxFaults int // about 4 standard deviations around n*rate
		minAfter, maxAfter   int
	}{
		{"5 %, all before", 1, 0.05, 0, 62, 138, 0, 0},
		{"5 %, half after", 2, 0.05, 0.5, 62, 138, 25, 75},
		{"50 %", 3, 0.5, 0.1, 910, 1090, 60, 140},
		{"100 %, all after", 4, 1, 1, n, n, n, n},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := New(tc.rate, tc.seed, "DynamoDB")
			f.AfterShare = tc.afterShare
			sc := newStackCaller(t, f)
			faults, after := 0, 0
			for range n {
				err := sc.call("DynamoDB", "GetItem")
				var fe *Fault
				switch {
				case err == nil:
				case errors.As(err, &fe):
					faults++
					if fe.After {
						after++
					}
				default:
					t.Fatalf("unexpected error %v", err)
				}
			}
			if faults < tc.minFaults || faults > tc.maxFaults || after < tc.minAfter || after > tc.maxAfter {
				t.Errorf("%d faults (%d after) in %d calls, want %d..%d (%d..%d after); seed %d",
					faults, after, n, tc.minFaults, tc.maxFaults, tc.minAfter, tc.maxAfter, f.Seed)
			}
			if want := n - faults + after; sc.sent != want {
				t.Errorf("%d calls reached the server, want %d (successes and after-faults)", sc.sent, want)
			}
			if got := f.Injected()["DynamoDB.GetItem"]; got != faults {
				t.Errorf("Injected = %d, want %d", got, faults)
			}
			if got := f.InjectedAfter()["DynamoDB.GetItem"]; got != after {
				t.Errorf("InjectedAfter = %d, want %d", got, after)
			}
		})
	}
}

func TestSetRate(t *testing.T) {
	f := New(1, 3)
	sc := newStackCaller(t, f)
	steps := []struct {
		rate     float64
		wantFail bool
	}{{-1, false}, {1, true}, {0, false}, {2, true}}
	if sc.call("SQS", "ReceiveMessage") == nil {
		t.Fatal("Rate 1 field: call succeeded")
	}
	for _, s := range steps {
		f.SetRate(s.rate)
		var wg sync.WaitGroup
		errs := make([]error, 50)
		for i := range errs {
			wg.Go(func() { errs[i] = sc.call("SQS", "ReceiveMessage") })
		}
		wg.Wait()
		for _, err := range errs {
			if (err != nil) != s.wantFail {
				t.Fatalf("SetRate(%g): err = %v, want failure %v", s.rate, err, s.wantFail)
			}
		}
	}
}

func TestCloseBody(t *testing.T) {
	rc := &trackCloser{}
	closeBody(&s3.GetObjectOutput{Body: rc})
	if !rc.closed {
		t.Error("GetObjectOutput body not closed")
	}
	// None of these may panic.
	closeBody(nil)
	closeBody(&s3.GetObjectOutput{})
	closeBody(&dynamodb.GetItemOutput{})
	closeBody("not a struct")
}

type trackCloser struct{ closed bool }

func (c *trackCloser) Read([]byte) (int, error) { return 0, io.EOF }
func (c *trackCloser) Close() error             { c.closed = true; return nil }

// servers holds clients of the three local servers and a table, queue and
// bucket of this test run.
type servers struct {
	ddbEP, sqsEP, s3EP string
	ddb                *dynamodb.Client
	sqs                *sqs.Client
	s3                 *s3.Client
	table, queue, bkt  string
}

func setupServers(t *testing.T, ctx context.Context) *servers {
	t.Helper()
	s := &servers{ddbEP: os.Getenv("URLCHECK_DDB_ENDPOINT"), sqsEP: os.Getenv("URLCHECK_SQS_ENDPOINT"), s3EP: os.Getenv("URLCHECK_S3_ENDPOINT")}
	if s.ddbEP == "" || s.sqsEP == "" || s.s3EP == "" {
		t.Skip("set URLCHECK_DDB_ENDPOINT, URLCHECK_SQS_ENDPOINT and URLCHECK_S3_ENDPOINT (make test-aws starts the local servers)")
	}
	suffix := fmt.Sprintf("%d-%d", time.Now().UnixNano(), rand.IntN(1e6))
	var err error
	if s.ddb, err = dynamostore.NewClient(ctx, s.ddbEP, ""); err != nil {
		t.Fatal(err)
	}
	if s.sqs, err = sqsqueue.NewClient(ctx, s.sqsEP, ""); err != nil {
		t.Fatal(err)
	}
	if s.s3, err = s3store.NewClient(ctx, s.s3EP, ""); err != nil {
		t.Fatal(err)
	}
	s.table = "urlcheck-awsfault-" + suffix
	if err := dynamostore.CreateTable(ctx, s.ddb, s.table); err != nil {
		t.Fatal(err)
	}
	if s.queue, err = sqsqueue.CreateQueue(ctx, s.sqs, "urlcheck-awsfault-"+suffix, nil); err != nil {
		t.Fatal(err)
	}
	s.bkt = "urlcheck-awsfault-" + suffix
	if err := s3store.CreateBucket(ctx, s.s3, s.bkt); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := s.ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(s.table)}); err != nil {
			t.Errorf("deleting table: %v", err)
		}
		if _, err := s.sqs.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(s.queue)}); err != nil {
			t.Errorf("deleting queue: %v", err)
		}
		out, err := s.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s.bkt)})
		if err == nil {
			for _, o := range out.Contents {
				_, _ = s.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bkt), Key: o.Key})
			}
		}
		if _, err := s.s3.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(s.bkt)}); err != nil {
			t.Errorf("deleting bucket: %v", err)
		}
	})
	return s
}

// faulty returns clients of the three servers with the counter's and the
// injector's middleware, in that order.
func (s *servers) faulty(t *testing.T, ctx context.Context, c *awscalls.Counter, f *Injector) (*dynamodb.Client, *sqs.Client, *s3.Client) {
	t.Helper()
	opt := config.WithAPIOptions(append(c.APIOptions(), f.APIOptions()...))
	d, err := dynamostore.NewClient(ctx, s.ddbEP, "", opt)
	if err != nil {
		t.Fatal(err)
	}
	q, err := sqsqueue.NewClient(ctx, s.sqsEP, "", opt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s3store.NewClient(ctx, s.s3EP, "", opt)
	if err != nil {
		t.Fatal(err)
	}
	return d, q, b
}

func domainKey(d string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{"domain": &ddbtypes.AttributeValueMemberS{Value: d}}
}

func TestAgainstServers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := setupServers(t, ctx)

	tests := []struct {
		name     string
		rate     float64
		services []string
		wantFail map[string]bool // service -> its call fails
	}{
		{"rate 1, DynamoDB", 1, []string{"DynamoDB"}, map[string]bool{"DynamoDB": true}},
		{"rate 1, SQS", 1, []string{"SQS"}, map[string]bool{"SQS": true}},
		{"rate 1, S3", 1, []string{"S3"}, map[string]bool{"S3": true}},
		{"rate 1, all", 1, nil, map[string]bool{"DynamoDB": true, "SQS": true, "S3": true}},
		{"rate 0, all", 0, nil, map[string]bool{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := New(tc.rate, 1, tc.services...)
			counter := awscalls.NewCounter()
			d, q, b := s.faulty(t, ctx, counter, f)
			errs := map[string]error{}
			_, errs["DynamoDB"] = d.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: domainKey("missing.example")})
			_, errs["SQS"] = q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(s.queue)})
			_, errs["S3"] = b.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s.bkt)})
			for svc, err := range errs {
				if tc.wantFail[svc] {
					if !errors.Is(err, ErrInjected) {
						t.Errorf("%s: err = %v, want an injected fault", svc, err)
					}
					var opErr *smithy.OperationError
					if !errors.As(err, &opErr) || opErr.Service() != svc {
						t.Errorf("%s: err = %v, want it inside the SDK's OperationError", svc, err)
					}
				} else if err != nil {
					t.Errorf("%s: err = %v, want success", svc, err)
				}
			}
			// The SDK does not retry an injected fault: no attempt at all
			// reached the transport.
			tally := counter.Snapshot()
			for key, n := range tally.Calls {
				svc, _, _ := cut(key)
				wantAttempts := 1
				if tc.wantFail[svc] {
					wantAttempts = 0
				}
				if n != 1 || tally.Attempts[key] != wantAttempts {
					t.Errorf("%s: %d calls, %d attempts, want 1 call, %d attempts", key, n, tally.Attempts[key], wantAttempts)
				}
			}
			if got, want := len(f.Injected()), len(tc.wantFail); got != want {
				t.Errorf("Injected = %v, want %d operations", f.Injected(), want)
			}
		})
	}
}

func TestAfterMode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := setupServers(t, ctx)
	f := New(1, 1)
	f.AfterShare = 1
	d, q, b := s.faulty(t, ctx, awscalls.NewCounter(), f)

	tests := []struct {
		name    string
		call    func() error
		applied func() (bool, error) // checked with a clean client
	}{
		{"DynamoDB PutItem", func() error {
			_, err := d.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: domainKey("written.example")})
			return err
		}, func() (bool, error) {
			out, err := s.ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: domainKey("written.example"), ConsistentRead: aws.Bool(true)})
			return err == nil && out.Item != nil, err
		}},
		{"SQS SendMessage", func() error {
			_, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.queue), MessageBody: aws.String("sent")})
			return err
		}, func() (bool, error) {
			out, err := s.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(s.queue), WaitTimeSeconds: 1})
			return err == nil && len(out.Messages) == 1 && aws.ToString(out.Messages[0].Body) == "sent", err
		}},
		{"S3 PutObject", func() error {
			_, err := b.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.bkt), Key: aws.String("k"), Body: bytes.NewReader([]byte("v"))})
			return err
		}, func() (bool, error) {
			_, err := s.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bkt), Key: aws.String("k")})
			return err == nil, err
		}},
		{"S3 GetObject (body closed)", func() error {
			_, err := b.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bkt), Key: aws.String("k")})
			return err
		}, func() (bool, error) { return true, nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var fe *Fault
			if !errors.As(err, &fe) || !fe.After || !errors.Is(err, ErrInjected) {
				t.Fatalf("err = %v, want an injected fault after the response", err)
			}
			ok, err := tc.applied()
			if !ok {
				t.Errorf("the call was not applied by the server (check err: %v)", err)
			}
		})
	}
	if got := f.InjectedAfter(); len(got) != len(tests) {
		t.Errorf("InjectedAfter = %v, want one per call", got)
	}
}

// TestPerAttempt: inside the retry loop every attempt may fail, and the SDK
// retries a fault as a transient server error (3 attempts by default).
func TestPerAttempt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := setupServers(t, ctx)
	tests := []struct {
		name        string
		rate        float64
		wantErr     bool
		wantFaults  int
		wantAttempt bool
	}{
		{"every attempt fails", 1, true, 3, false},
		{"no attempt fails", 0, false, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &Injector{Rate: tc.rate, Seed: 1, PerAttempt: true, Services: []string{"DynamoDB"}}
			d, _, _ := s.faulty(t, ctx, awscalls.NewCounter(), f)
			_, err := d.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: domainKey("missing.example")})
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, ErrInjected)) {
				t.Fatalf("err = %v, want injected error: %v", err, tc.wantErr)
			}
			if got := f.Injected()["DynamoDB.GetItem"]; got != tc.wantFaults {
				t.Errorf("%d faults injected, want %d (one per SDK attempt)", got, tc.wantFaults)
			}
		})
	}
}
