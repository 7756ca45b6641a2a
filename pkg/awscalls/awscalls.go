// Package awscalls counts the AWS API calls an aws-sdk-go-v2 client makes
// (per service and operation, with their attempts, errors and, for
// DynamoDB, the capacity units they consumed) and prices them at on-demand
// list prices, so that `make bench` can report the AWS cost of a serverless
// job per URL.
//
// A Counter is SDK middleware: add it to every client through
// config.WithAPIOptions, for example
//
//	counter := awscalls.NewCounter()
//	client, err := sqsqueue.NewClient(ctx, endpoint, region, config.WithAPIOptions(counter.APIOptions()))
//
// then take a Snapshot before and after the work and Sub the two Tallies.
// USEast1.Cost turns a Tally (plus the Lambda and API Gateway figures the
// caller measures itself) into dollars.
//
// Keys of the Tally maps are "Service.Operation" with the SDK's service ID
// ("DynamoDB", "SQS", "S3") and operation name ("UpdateItem"), for example
// "DynamoDB.UpdateItem" or "S3.PutObject".
package awscalls

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
)

// Service IDs as the SDK names them (the prefix of the Tally keys).
const (
	DynamoDB = "DynamoDB"
	SQS      = "SQS"
	S3       = "S3"
)

// SQSChunkBytes is the payload size SQS bills as one request: a request
// whose message payload (bodies plus message attributes, summed over the
// messages of a batch) is n bytes is billed as max(1, ceil(n/65536))
// requests.
const SQSChunkBytes = 64 << 10

// Call describes one logical API call (one client method invocation, all
// SDK retries included), as passed to the OnCall hook.
type Call struct {
	// Service is the SDK service ID ("DynamoDB", "SQS", "S3").
	Service string
	// Operation is the API operation name ("PutItem").
	Operation string
	// Attempts is the number of HTTP attempts the SDK made: 1 without
	// retries, 0 when the call failed before the retry loop (invalid input,
	// a fault injected at the Initialize step by a middleware placed after
	// the counter).
	Attempts int
	// Err is the error the call returned (nil on success).
	Err error
	// Input is the caller's input (for example *dynamodb.PutItemInput), as
	// passed to the client: the counter never modifies it.
	Input any
	// Output is the operation's output (for example *s3.GetObjectOutput);
	// nil when the call failed. Hooks must not read bodies from it.
	Output any
	// ConsumedRead and ConsumedWrite are the DynamoDB read and write
	// request (capacity) units the call consumed, as DynamoDB reported them
	// (see Tally.WriteUnits for the estimate added for a failed condition);
	// 0 for other services or when DynamoDB reported nothing.
	ConsumedRead, ConsumedWrite float64
	// SQSPayloadBytes is the message payload of an SQS call (message bodies
	// and message attributes sent by SendMessage and SendMessageBatch or
	// received by ReceiveMessage), in bytes; 0 for other calls.
	SQSPayloadBytes int
}

// Key returns the Tally key of the call: "Service.Operation".
func (c Call) Key() string { return c.Service + "." + c.Operation }

// Counter counts the calls of every client it is added to. The zero value is
// not usable: call NewCounter. It is safe for concurrent use.
type Counter struct {
	id string

	mu    sync.Mutex
	tally Tally
	hooks []func(Call)
}

var counterSeq atomic.Uint64

// NewCounter returns an empty Counter.
func NewCounter() *Counter {
	return &Counter{
		id:    fmt.Sprintf("awscalls.Counter#%d", counterSeq.Add(1)),
		tally: newTally(),
	}
}

// OnCall registers fn to be called after every logical call the counter
// sees, once the call is tallied, on the goroutine that made the call (fn
// must be safe for concurrent use when the clients are used concurrently).
// Hooks run in registration order; there is no way to remove one.
func (c *Counter) OnCall(fn func(Call)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hooks = append(c.hooks, fn)
}

// Snapshot returns a copy of the figures counted so far.
func (c *Counter) Snapshot() Tally {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tally.clone()
}

// attemptsKey is the context key under which the Initialize middleware of a
// counter leaves the attempt count of the current call for its Finalize
// middleware.
type attemptsKey struct{ c *Counter }

// APIOptions returns the middleware to pass to config.WithAPIOptions (or to
// a client's Options.APIOptions). It adds two middlewares to each operation
// stack:
//
//   - at the end of the Initialize step, one that counts the logical call
//     once, after all SDK retries, with its error and, for DynamoDB, the
//     consumed capacity. For the DynamoDB operations PutItem, UpdateItem,
//     DeleteItem, GetItem, Query, Scan, BatchWriteItem, BatchGetItem,
//     TransactWriteItems and TransactGetItems whose ReturnConsumedCapacity
//     is unset it sends a copy of the input with ReturnConsumedCapacity
//     TOTAL (the caller's input is left alone; the output then carries a
//     ConsumedCapacity the caller did not ask for);
//   - in the Finalize step right after the SDK's retry middleware (at the
//     end of the step if the stack has none), one that counts each attempt.
//
// Where the counter sits relative to other middleware added with
// middleware.After at the Initialize step follows the order of the API
// options: a fault injector whose options come after the counter's is
// inside it, so its faults are counted as failed calls with 0 attempts.
// The same Counter may be added to any number of clients; adding it twice
// to the same client makes the stack fail with a duplicate middleware ID.
func (c *Counter) APIOptions() []func(*middleware.Stack) error {
	return []func(*middleware.Stack) error{c.addMiddleware}
}

func (c *Counter) addMiddleware(stack *middleware.Stack) error {
	init := middleware.InitializeMiddlewareFunc(c.id, c.handleInitialize)
	if err := stack.Initialize.Add(init, middleware.After); err != nil {
		return fmt.Errorf("awscalls: adding the call counter: %w", err)
	}
	fin := middleware.FinalizeMiddlewareFunc(c.id+".attempt", c.handleFinalize)
	if _, ok := stack.Finalize.Get("Retry"); ok {
		if err := stack.Finalize.Insert(fin, "Retry", middleware.After); err != nil {
			return fmt.Errorf("awscalls: adding the attempt counter: %w", err)
		}
		return nil
	}
	if err := stack.Finalize.Add(fin, middleware.After); err != nil {
		return fmt.Errorf("awscalls: adding the attempt counter: %w", err)
	}
	return nil
}

func (c *Counter) handleInitialize(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	svc, op := middleware.GetServiceID(ctx), middleware.GetOperationName(ctx)
	orig := in.Parameters
	if svc == DynamoDB {
		in.Parameters = withConsumedCapacity(in.Parameters)
	}
	var attempts atomic.Int64
	ctx = context.WithValue(ctx, attemptsKey{c}, &attempts)

	out, md, err := next.HandleInitialize(ctx, in)

	call := Call{Service: svc, Operation: op, Attempts: int(attempts.Load()), Err: err, Input: orig}
	if err == nil {
		call.Output = out.Result
	}
	switch svc {
	case DynamoDB:
		call.ConsumedRead, call.ConsumedWrite = consumed(op, out.Result, err)
	case SQS:
		call.SQSPayloadBytes = sqsPayload(orig, call.Output)
	}
	c.record(call)
	return out, md, err
}

func (c *Counter) handleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	if n, ok := ctx.Value(attemptsKey{c}).(*atomic.Int64); ok {
		n.Add(1)
	}
	return next.HandleFinalize(ctx, in)
}

func (c *Counter) record(call Call) {
	key := call.Key()
	c.mu.Lock()
	t := &c.tally
	t.Calls[key]++
	if call.Attempts > 0 {
		t.Attempts[key] += call.Attempts
	}
	if call.Err != nil {
		t.Errors[key]++
	}
	t.ReadUnits += call.ConsumedRead
	t.WriteUnits += call.ConsumedWrite
	if chunks := sqsChunks(call.SQSPayloadBytes); chunks > 1 {
		t.SQSExtraChunks += chunks - 1
	}
	hooks := c.hooks
	c.mu.Unlock()
	for _, fn := range hooks {
		fn(call)
	}
}

// sqsChunks returns the number of requests SQS bills for a payload of n
// bytes: max(1, ceil(n/SQSChunkBytes)).
func sqsChunks(n int) int {
	if n <= SQSChunkBytes {
		return 1
	}
	return (n + SQSChunkBytes - 1) / SQSChunkBytes
}

// withTotal returns v, or a shallow copy of it with ReturnConsumedCapacity
// TOTAL when the field (reached through field) is unset.
func withTotal[T any](v *T, field func(*T) *ddbtypes.ReturnConsumedCapacity) any {
	if v == nil || *field(v) != "" {
		return v
	}
	cp := *v
	*field(&cp) = ddbtypes.ReturnConsumedCapacityTotal
	return &cp
}

// withConsumedCapacity returns the DynamoDB input to send: a copy asking for
// the TOTAL consumed capacity when the caller left ReturnConsumedCapacity
// unset, params itself otherwise.
func withConsumedCapacity(params any) any {
	switch v := params.(type) {
	case *dynamodb.PutItemInput:
		return withTotal(v, func(p *dynamodb.PutItemInput) *ddbtypes.ReturnConsumedCapacity { return &p.ReturnConsumedCapacity })
	case *dynamodb.UpdateItemInput:
		return withTotal(v, func(p *dynamodb.UpdateItemInput) *ddbtypes.ReturnConsumedCapacity { return &p.ReturnConsumedCapacity })
	case *dynamodb.DeleteItemInput:
		return withTotal(v, func(p *dynamodb.DeleteItemInput) *ddbtypes.ReturnConsumedCapacity { return &p.ReturnConsumedCapacity })
	case *dynamodb.GetItemInput:
		return withTotal(v, func(p *dynamodb.GetItemInput) *ddbtypes.ReturnConsumedCapacity { return &p.ReturnConsumedCapacity })
	case *dynamodb.QueryInput:
		return withTotal(v, func(p *dynamodb.QueryInput) *ddbtypes.ReturnConsumedCapacity { return &p.ReturnConsumedCapacity })
	case *dynamodb.ScanInput:
		return withTotal(v, func(p *dynamodb.ScanInput) *ddbtypes.ReturnConsumedCapacity { return &p.ReturnConsumedCapacity })
	case *dynamodb.BatchWriteItemInput:
		return withTotal(v, func(p *dynamodb.BatchWriteItemInput) *ddbtypes.ReturnConsumedCapacity {
			return &p.ReturnConsumedCapacity
		})
	case *dynamodb.BatchGetItemInput:
		return withTotal(v, func(p *dynamodb.BatchGetItemInput) *ddbtypes.ReturnConsumedCapacity { return &p.ReturnConsumedCapacity })
	case *dynamodb.TransactWriteItemsInput:
		return withTotal(v, func(p *dynamodb.TransactWriteItemsInput) *ddbtypes.ReturnConsumedCapacity {
			return &p.ReturnConsumedCapacity
		})
	case *dynamodb.TransactGetItemsInput:
		return withTotal(v, func(p *dynamodb.TransactGetItemsInput) *ddbtypes.ReturnConsumedCapacity {
			return &p.ReturnConsumedCapacity
		})
	}
	return params
}

// consumed returns the read and write units a DynamoDB call consumed: those
// of the output's ConsumedCapacity, or 1 write unit (DynamoDB's minimum) for
// a single-item write that failed its condition, which DynamoDB bills
// without reporting it.
func consumed(op string, result any, err error) (read, write float64) {
	if err != nil {
		var ccf *ddbtypes.ConditionalCheckFailedException
		if errors.As(err, &ccf) && (op == "PutItem" || op == "UpdateItem" || op == "DeleteItem") {
			return 0, 1
		}
		return 0, 0
	}
	var ccs []ddbtypes.ConsumedCapacity
	switch v := result.(type) {
	case *dynamodb.PutItemOutput:
		ccs = one(v.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		ccs = one(v.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		ccs = one(v.ConsumedCapacity)
	case *dynamodb.GetItemOutput:
		ccs = one(v.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		ccs = one(v.ConsumedCapacity)
	case *dynamodb.ScanOutput:
		ccs = one(v.ConsumedCapacity)
	case *dynamodb.BatchWriteItemOutput:
		ccs = v.ConsumedCapacity
	case *dynamodb.BatchGetItemOutput:
		ccs = v.ConsumedCapacity
	case *dynamodb.TransactWriteItemsOutput:
		ccs = v.ConsumedCapacity
	case *dynamodb.TransactGetItemsOutput:
		ccs = v.ConsumedCapacity
	}
	writeOp := dynamoWriteOps[op]
	for _, cc := range ccs {
		r, w := deref(cc.ReadCapacityUnits), deref(cc.WriteCapacityUnits)
		if r == 0 && w == 0 {
			// TOTAL may report only CapacityUnits: attribute it by the kind
			// of operation.
			if writeOp {
				w = deref(cc.CapacityUnits)
			} else {
				r = deref(cc.CapacityUnits)
			}
		}
		read += r
		write += w
	}
	return read, write
}

func one(cc *ddbtypes.ConsumedCapacity) []ddbtypes.ConsumedCapacity {
	if cc == nil {
		return nil
	}
	return []ddbtypes.ConsumedCapacity{*cc}
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// sqsPayload returns the message payload of an SQS call in bytes: message
// bodies plus message attribute names, data types and values, summed over
// the messages sent (SendMessage, SendMessageBatch) or received
// (ReceiveMessage); 0 for other operations.
func sqsPayload(input, output any) int {
	n := 0
	switch v := input.(type) {
	case *sqs.SendMessageInput:
		if v != nil {
			n += strLen(v.MessageBody) + attrsLen(v.MessageAttributes)
		}
	case *sqs.SendMessageBatchInput:
		if v != nil {
			for _, e := range v.Entries {
				n += strLen(e.MessageBody) + attrsLen(e.MessageAttributes)
			}
		}
	}
	if v, ok := output.(*sqs.ReceiveMessageOutput); ok && v != nil {
		for _, m := range v.Messages {
			n += strLen(m.Body) + attrsLen(m.MessageAttributes)
		}
	}
	return n
}

func strLen(s *string) int {
	if s == nil {
		return 0
	}
	return len(*s)
}

func attrsLen(attrs map[string]sqstypes.MessageAttributeValue) int {
	n := 0
	for name, a := range attrs {
		n += len(name) + strLen(a.DataType) + strLen(a.StringValue) + len(a.BinaryValue)
	}
	return n
}

// Tally is a set of call figures: what a Counter counted (Snapshot), the
// difference of two snapshots (Sub), or figures made by hand. Map keys are
// "Service.Operation"; a missing key counts 0. The zero Tally is empty and
// usable (its nil maps read as empty).
type Tally struct {
	// Calls counts logical calls per operation (one per client method
	// invocation, whatever the retries).
	Calls map[string]int
	// Attempts counts HTTP attempts per operation (calls plus SDK retries).
	Attempts map[string]int
	// Errors counts logical calls that returned an error, per operation.
	Errors map[string]int
	// ReadUnits and WriteUnits are the DynamoDB read and write request
	// units consumed, summed over calls, as DynamoDB reported them in
	// ConsumedCapacity (0.5 for an eventually consistent read of up to
	// 4 KB, 1 per KB written, x2 for transactions on AWS; DynamoDB Local
	// reports transactions at x1, so local figures for TransactWriteItems
	// and TransactGetItems are half of what AWS bills). WriteUnits also counts
	// 1 unit per PutItem, UpdateItem or DeleteItem that failed its
	// condition: DynamoDB bills such a write (at least 1 unit, more for an
	// item over 1 KB) but does not report it. Both are 0 when nothing was
	// reported.
	ReadUnits, WriteUnits float64
	// SQSExtraChunks is the number of SQS requests billed beyond one per
	// call because the call's payload exceeded 64 KiB (SQS bills each
	// 64 KiB chunk as a request): a SendMessageBatch of 200 KiB adds 3.
	SQSExtraChunks int
}

func newTally() Tally {
	return Tally{Calls: map[string]int{}, Attempts: map[string]int{}, Errors: map[string]int{}}
}

func (t Tally) clone() Tally {
	out := t
	out.Calls, out.Attempts, out.Errors = copyMap(t.Calls), copyMap(t.Attempts), copyMap(t.Errors)
	return out
}

func copyMap(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Sub returns t minus base, key by key, dropping keys whose difference is
// 0: with base a Snapshot taken before some work and t one taken after, the
// figures of that work. The maps of the result are new and non-nil.
func (t Tally) Sub(base Tally) Tally {
	return Tally{
		Calls:          subMap(t.Calls, base.Calls),
		Attempts:       subMap(t.Attempts, base.Attempts),
		Errors:         subMap(t.Errors, base.Errors),
		ReadUnits:      t.ReadUnits - base.ReadUnits,
		WriteUnits:     t.WriteUnits - base.WriteUnits,
		SQSExtraChunks: t.SQSExtraChunks - base.SQSExtraChunks,
	}
}

func subMap(a, b map[string]int) map[string]int {
	out := make(map[string]int, len(a))
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok && v != 0 {
			out[k] = -v
		}
	}
	return out
}

// TotalCalls returns the number of logical calls of every service.
func (t Tally) TotalCalls() int {
	n := 0
	for _, v := range t.Calls {
		n += v
	}
	return n
}

// sum adds the calls of the operations of service for which match is true.
func (t Tally) sum(service string, match func(op string) bool) int {
	n := 0
	prefix := service + "."
	for k, v := range t.Calls {
		if op, ok := strings.CutPrefix(k, prefix); ok && match(op) {
			n += v
		}
	}
	return n
}

var (
	dynamoWriteOps = map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true, "BatchWriteItem": true, "TransactWriteItems": true}
	dynamoReadOps  = map[string]bool{"GetItem": true, "Query": true, "Scan": true, "BatchGetItem": true, "TransactGetItems": true}
)

// DynamoDBWrites returns the number of DynamoDB write calls: PutItem,
// UpdateItem, DeleteItem, BatchWriteItem and TransactWriteItems (a batch or
// transaction counts once, whatever its number of items).
func (t Tally) DynamoDBWrites() int {
	return t.sum(DynamoDB, func(op string) bool { return dynamoWriteOps[op] })
}

// DynamoDBReads returns the number of DynamoDB read calls: GetItem, Query,
// Scan, BatchGetItem and TransactGetItems. Control-plane calls
// (CreateTable, DescribeTable, ...) are neither reads nor writes.
func (t Tally) DynamoDBReads() int {
	return t.sum(DynamoDB, func(op string) bool { return dynamoReadOps[op] })
}

// SQSRequests returns the number of billed SQS requests: one per SQS call
// of any operation, plus SQSExtraChunks for payloads over 64 KiB. Retried
// attempts are not included (see Attempts).
func (t Tally) SQSRequests() int {
	return t.sum(SQS, func(string) bool { return true }) + t.SQSExtraChunks
}

// S3 request tiers.
const (
	s3Free = iota
	s3PutTier
	s3GetTier
)

// s3Tier returns the pricing tier of an S3 operation: DELETE requests and
// AbortMultipartUpload are free; PUT, COPY, POST and LIST requests (the
// operations named Put*, Copy*, Create*, Upload*, Complete* and List*) are
// in the PUT tier; everything else (GET, HEAD, ...) in the GET tier.
func s3Tier(op string) int {
	switch {
	case strings.HasPrefix(op, "Delete"), op == "AbortMultipartUpload":
		return s3Free
	case strings.HasPrefix(op, "List"):
		return s3PutTier
	}
	for _, p := range []string{"Put", "Copy", "Create", "Upload", "Complete"} {
		if strings.HasPrefix(op, p) {
			return s3PutTier
		}
	}
	return s3GetTier
}

// S3Puts returns the number of S3 calls billed in the PUT tier (PUT, COPY,
// POST, LIST): PutObject, CopyObject, CreateMultipartUpload, UploadPart,
// UploadPartCopy, CompleteMultipartUpload, ListObjectsV2 and the other List*
// operations, and also bucket-level Put*/Create* calls such as CreateBucket.
// S3Lists gives the LIST part alone.
func (t Tally) S3Puts() int {
	return t.sum(S3, func(op string) bool { return s3Tier(op) == s3PutTier })
}

// S3Lists returns the number of S3 List* calls (ListObjectsV2, ListObjects,
// ListObjectVersions, ListParts, ...), which S3Puts includes.
func (t Tally) S3Lists() int {
	return t.sum(S3, func(op string) bool { return strings.HasPrefix(op, "List") })
}

// S3Gets returns the number of S3 calls billed in the GET tier ("GET and all
// other requests"): GetObject, HeadObject and every other operation that is
// neither in the PUT tier nor free (Delete*, AbortMultipartUpload), for
// example HeadBucket or GetObjectTagging.
func (t Tally) S3Gets() int {
	return t.sum(S3, func(op string) bool { return s3Tier(op) == s3GetTier })
}

// String formats the tally for a report: one line per operation, sorted,
// "DynamoDB.PutItem calls=3 attempts=4 errors=1", then the DynamoDB units.
func (t Tally) String() string {
	keys := make([]string, 0, len(t.Calls))
	for k := range t.Calls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s calls=%d attempts=%d errors=%d\n", k, t.Calls[k], t.Attempts[k], t.Errors[k])
	}
	fmt.Fprintf(&b, "DynamoDB read units=%g write units=%g; SQS extra 64 KiB chunks=%d\n", t.ReadUnits, t.WriteUnits, t.SQSExtraChunks)
	return b.String()
}
