// Package sqsqueue is the Amazon SQS implementation of queue.Queue, used by
// the serverless pipeline (and, against the local fauxqs server, by the local
// pipeline and integration tests).
//
// # Durations
//
// The SQS API counts delays, visibility timeouts and long-poll waits in whole
// seconds, while queue.Queue takes time.Duration. Every duration is rounded UP
// to the next whole second (so a non-zero duration never becomes 0: 1ns and
// 1s both become 1 second, 1.2s becomes 2 seconds) and then clamped to the SQS
// maximum: DelaySeconds 900 (queue.MaxDelay), VisibilityTimeout 43200
// (queue.MaxVisibility), WaitTimeSeconds 20 (queue.MaxWait). Negative
// durations are rejected with queue.ErrInvalidArgument before any request.
//
// # Zero values
//
// The SDK (service/sqs v1.52) omits a zero DelaySeconds, VisibilityTimeout or
// WaitTimeSeconds from ReceiveMessage and SendMessage requests, and SQS then
// applies the queue's own default (its DelaySeconds, VisibilityTimeout and
// ReceiveMessageWaitTimeSeconds attributes). Queue copes as follows:
//
//   - a zero send delay and a zero wait use the queue's defaults, which are 0
//     unless the queue was created otherwise: keep them 0 for queues used
//     through this package;
//   - a zero visibility in Receive is emulated: the messages are received
//     with the queue's default visibility and then made visible again at once
//     with ChangeMessageVisibilityBatch (VisibilityTimeout 0, which the SDK
//     does send). Servers may void the receipts of such messages (fauxqs
//     does), so Delete and ChangeVisibility on them can return
//     queue.ErrReceiptInvalid.
//
// # Errors
//
// Every error is wrapped with the operation and the queue URL. Delete and
// ChangeVisibility map the SQS errors that mean "this receipt is no longer
// usable" (ReceiptHandleIsInvalid, MessageNotInflight, and
// InvalidParameterValue about the ReceiptHandle, which SQS returns for an
// expired receipt) to an error wrapping queue.ErrReceiptInvalid; the original
// SQS error is kept in the chain as well. Note that SQS itself does not
// always detect a stale receipt: DeleteMessage with the receipt of an earlier
// delivery may succeed (and fauxqs 1.9 never fails a DeleteMessage for an
// unknown receipt), so Delete returning nil does not prove the message was
// still owned by the caller.
package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/urlcheck/urlcheck/pkg/awsconfig"
	"github.com/urlcheck/urlcheck/pkg/queue"
)

// MaxSendBatch is the most messages one SendMessageBatch request carries;
// SendBatch splits its bodies into chunks of this size.
const MaxSendBatch = 10

// Queue is a queue.Queue over one Amazon SQS standard queue. It is safe for
// concurrent use (as is the client).
type Queue struct {
	client *sqs.Client
	url    string
}

var _ queue.Queue = (*Queue)(nil)

// New returns a Queue that sends to and receives from the existing queue at
// queueURL (as returned by CreateQueue or GetQueueUrl).
func New(client *sqs.Client, queueURL string) *Queue {
	return &Queue{client: client, url: queueURL}
}

// URL returns the queue URL q was created with.
func (q *Queue) URL() string { return q.url }

// NewClient returns an SQS client built from the default AWS configuration
// (environment, shared config files, instance/task roles). endpoint, when not
// empty, overrides the service endpoint (BaseEndpoint, e.g.
// "http://127.0.0.1:9324" for fauxqs); region, when not empty, overrides the
// configured region. It returns an error if the default configuration cannot
// be loaded.
// Extra load options (SDK middleware, for instance) go to awsconfig.Load.
func NewClient(ctx context.Context, endpoint, region string, extra ...func(*config.LoadOptions) error) (*sqs.Client, error) {
	cfg, err := awsconfig.Load(ctx, region, extra...)
	if err != nil {
		return nil, fmt.Errorf("sqsqueue: %w", err)
	}
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}), nil
}

// CreateQueue creates the standard queue name with the given queue
// attributes (SQS attribute names such as "VisibilityTimeout" or
// "RedrivePolicy"; nil for none) and returns its URL. Creating a queue that
// already exists with the same attributes returns the existing queue's URL;
// with different attributes SQS fails with QueueNameExists. Meant for tests
// and the local pipeline; production queues come from the deployment
// template. Errors are wrapped with the queue name.
func CreateQueue(ctx context.Context, client *sqs.Client, name string, attrs map[string]string) (url string, err error) {
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", fmt.Errorf("sqsqueue: creating queue %q: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// QueueARN returns the ARN of the queue at url (its QueueArn attribute), as
// needed for the deadLetterTargetArn of a redrive policy. Errors are wrapped
// with the URL.
func QueueARN(ctx context.Context, client *sqs.Client, url string) (string, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", fmt.Errorf("sqsqueue: getting the ARN of queue %s: %w", url, err)
	}
	arn := out.Attributes[string(types.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", fmt.Errorf("sqsqueue: queue %s has no QueueArn attribute", url)
	}
	return arn, nil
}

// seconds converts d (>= 0) to whole seconds for the SQS API: rounded up to
// the next whole second, then clamped to max (itself a whole number of
// seconds).
func seconds(d, max time.Duration) int32 {
	d = min(d, max)
	s := d / time.Second
	if d%time.Second != 0 {
		s++
	}
	return int32(s)
}

func checkBody(op string, body []byte) error {
	if len(body) == 0 || len(body) > queue.MaxBodyBytes {
		return fmt.Errorf("sqsqueue: %s: body of %d bytes, want 1..%d: %w", op, len(body), queue.MaxBodyBytes, queue.ErrInvalidArgument)
	}
	return nil
}

// Send implements queue.Queue.Send with one SendMessage request. delay is
// rounded up to whole seconds and clamped to 900 (queue.MaxDelay); 0 means
// the queue's default delay (see the package documentation). The body is sent
// as a string: SQS accepts only certain Unicode characters in message bodies,
// so bodies should be UTF-8 text (such as JSON). Errors wrap
// queue.ErrInvalidArgument (empty or oversized body, negative delay, checked
// before any request) or the SDK's error.
func (q *Queue) Send(ctx context.Context, body []byte, delay time.Duration) error {
	if err := checkBody("send", body); err != nil {
		return err
	}
	if delay < 0 {
		return fmt.Errorf("sqsqueue: send: negative delay %v: %w", delay, queue.ErrInvalidArgument)
	}
	_, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:     aws.String(q.url),
		MessageBody:  aws.String(string(body)),
		DelaySeconds: seconds(delay, queue.MaxDelay),
	})
	if err != nil {
		return fmt.Errorf("sqsqueue: send to %s: %w", q.url, err)
	}
	return nil
}

// SendBatch sends every body in bodies, each delayed by delay (rounded up to
// whole seconds, clamped to 900), with SendMessageBatch requests of up to
// MaxSendBatch entries, in order. Entry IDs are the bodies' indexes in
// bodies. Bodies are validated first, so an invalid body sends nothing
// (error wrapping queue.ErrInvalidArgument). A failed request stops the
// batch: the error names the index range of the chunk, and earlier chunks
// have been sent. Entries that SQS rejects individually do not stop the
// batch; afterwards SendBatch returns an error listing every failed index
// with its SQS code and message (the other bodies were sent). An empty
// bodies sends nothing and returns nil.
func (q *Queue) SendBatch(ctx context.Context, bodies [][]byte, delay time.Duration) error {
	for i, b := range bodies {
		if err := checkBody("send batch", b); err != nil {
			return fmt.Errorf("%w (entry %d)", err, i)
		}
	}
	if delay < 0 {
		return fmt.Errorf("sqsqueue: send batch: negative delay %v: %w", delay, queue.ErrInvalidArgument)
	}
	secs := seconds(delay, queue.MaxDelay)
	var failed []string
	for start := 0; start < len(bodies); start += MaxSendBatch {
		end := min(start+MaxSendBatch, len(bodies))
		entries := make([]types.SendMessageBatchRequestEntry, 0, end-start)
		for i := start; i < end; i++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{
				Id:           aws.String(strconv.Itoa(i)),
				MessageBody:  aws.String(string(bodies[i])),
				DelaySeconds: secs,
			})
		}
		out, err := q.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
		if err != nil {
			return fmt.Errorf("sqsqueue: send batch to %s: entries %d..%d: %w", q.url, start, end-1, err)
		}
		for _, f := range out.Failed {
			failed = append(failed, fmt.Sprintf("entry %s: %s: %s", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("sqsqueue: send batch to %s: %d of %d entries failed: %s", q.url, len(failed), len(bodies), strings.Join(failed, "; "))
	}
	return nil
}

// Receive implements queue.Queue.Receive with one ReceiveMessage request
// (MaxNumberOfMessages max; VisibilityTimeout visibility rounded up to whole
// seconds, clamped to 43200; WaitTimeSeconds wait rounded up, clamped to 20),
// asking for the ApproximateReceiveCount and SentTimestamp system attributes.
// A zero visibility is emulated with a ChangeMessageVisibilityBatch (see the
// package documentation); a zero wait means the queue's default wait. It
// returns an empty, non-nil slice when no message arrives. Errors wrap
// queue.ErrInvalidArgument (max outside 1..queue.MaxBatch or a negative
// duration, checked before any request), the SDK's error, or a decoding
// error for a malformed system attribute.
func (q *Queue) Receive(ctx context.Context, max int, visibility, wait time.Duration) ([]queue.Message, error) {
	if max < 1 || max > queue.MaxBatch {
		return nil, fmt.Errorf("sqsqueue: receive: max %d messages, want 1..%d: %w", max, queue.MaxBatch, queue.ErrInvalidArgument)
	}
	if visibility < 0 {
		return nil, fmt.Errorf("sqsqueue: receive: negative visibility timeout %v: %w", visibility, queue.ErrInvalidArgument)
	}
	if wait < 0 {
		return nil, fmt.Errorf("sqsqueue: receive: negative wait %v: %w", wait, queue.ErrInvalidArgument)
	}
	vis := seconds(visibility, queue.MaxVisibility)
	out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(q.url),
		MaxNumberOfMessages: int32(max),
		VisibilityTimeout:   vis, // 0 is omitted by the SDK: emulated below
		WaitTimeSeconds:     seconds(wait, queue.MaxWait),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{
			types.MessageSystemAttributeNameApproximateReceiveCount,
			types.MessageSystemAttributeNameSentTimestamp,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("sqsqueue: receive from %s: %w", q.url, err)
	}
	msgs := make([]queue.Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		qm, err := convert(m)
		if err != nil {
			return nil, fmt.Errorf("sqsqueue: receive from %s: %w", q.url, err)
		}
		msgs = append(msgs, qm)
	}
	if vis == 0 && len(msgs) > 0 {
		if err := q.release(ctx, msgs); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// release makes msgs visible again at once (VisibilityTimeout 0).
func (q *Queue) release(ctx context.Context, msgs []queue.Message) error {
	entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{
			Id:                aws.String(strconv.Itoa(i)),
			ReceiptHandle:     aws.String(m.Receipt),
			VisibilityTimeout: 0,
		}
	}
	out, err := q.client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
	if err != nil {
		return fmt.Errorf("sqsqueue: receive from %s: releasing messages for visibility 0: %w", q.url, err)
	}
	if len(out.Failed) > 0 {
		f := out.Failed[0]
		return fmt.Errorf("sqsqueue: receive from %s: releasing messages for visibility 0: %d of %d failed, first: entry %s: %s: %s",
			q.url, len(out.Failed), len(msgs), aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message))
	}
	return nil
}

// convert turns an SQS message into a queue.Message.
func convert(m types.Message) (queue.Message, error) {
	qm := queue.Message{
		ID:      aws.ToString(m.MessageId),
		Body:    []byte(aws.ToString(m.Body)),
		Receipt: aws.ToString(m.ReceiptHandle),
	}
	if s, ok := m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]; ok {
		n, err := strconv.Atoi(s)
		if err != nil {
			return queue.Message{}, fmt.Errorf("message %s: ApproximateReceiveCount %q: %w", qm.ID, s, err)
		}
		qm.ReceiveCount = n
	}
	if s, ok := m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)]; ok {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return queue.Message{}, fmt.Errorf("message %s: SentTimestamp %q: %w", qm.ID, s, err)
		}
		qm.SentAt = time.UnixMilli(ms)
	}
	return qm, nil
}

// Delete implements queue.Queue.Delete with one DeleteMessage request. An
// empty receipt, or an SQS error saying the receipt is invalid or expired,
// yields an error wrapping queue.ErrReceiptInvalid (see the package
// documentation: SQS does not detect every stale receipt). Other failures
// wrap the SDK's error.
func (q *Queue) Delete(ctx context.Context, receipt string) error {
	if receipt == "" {
		return fmt.Errorf("sqsqueue: delete from %s: empty receipt: %w", q.url, queue.ErrReceiptInvalid)
	}
	_, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(receipt)})
	if err != nil {
		return wrapReceiptErr("delete from", q.url, err)
	}
	return nil
}

// ChangeVisibility implements queue.Queue.ChangeVisibility with one
// ChangeMessageVisibility request; timeout is rounded up to whole seconds and
// clamped to 43200 (0 makes the message visible at once). An empty receipt,
// or an SQS error saying the receipt is invalid or expired or the message is
// not in flight (MessageNotInflight: its visibility timeout already ran out,
// or it was deleted), yields an error wrapping queue.ErrReceiptInvalid. A
// negative timeout yields queue.ErrInvalidArgument. Other failures wrap the
// SDK's error.
func (q *Queue) ChangeVisibility(ctx context.Context, receipt string, timeout time.Duration) error {
	if timeout < 0 {
		return fmt.Errorf("sqsqueue: change visibility in %s: negative timeout %v: %w", q.url, timeout, queue.ErrInvalidArgument)
	}
	if receipt == "" {
		return fmt.Errorf("sqsqueue: change visibility in %s: empty receipt: %w", q.url, queue.ErrReceiptInvalid)
	}
	_, err := q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(q.url),
		ReceiptHandle:     aws.String(receipt),
		VisibilityTimeout: seconds(timeout, queue.MaxVisibility),
	})
	if err != nil {
		return wrapReceiptErr("change visibility in", q.url, err)
	}
	return nil
}

// isReceiptErr reports whether err is an SQS error meaning the receipt handle
// can no longer be used.
func isReceiptErr(err error) bool {
	var invalid *types.ReceiptHandleIsInvalid
	var notInflight *types.MessageNotInflight
	if errors.As(err, &invalid) || errors.As(err, &notInflight) {
		return true
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	// Servers speaking the JSON protocol in query-compatible mode may report
	// the legacy code, e.g. "AWS.SimpleQueueService.MessageNotInflight"
	// (fauxqs does): compare the last dot-separated part.
	code := ae.ErrorCode()
	code = code[strings.LastIndexByte(code, '.')+1:]
	switch code {
	case "ReceiptHandleIsInvalid", "MessageNotInflight":
		return true
	case "InvalidParameterValue":
		return strings.Contains(strings.ToLower(ae.ErrorMessage()), "receipt")
	}
	return false
}

// wrapReceiptErr wraps err from a receipt operation, adding
// queue.ErrReceiptInvalid when isReceiptErr.
func wrapReceiptErr(op, url string, err error) error {
	if isReceiptErr(err) {
		return fmt.Errorf("sqsqueue: %s %s: %w: %w", op, url, queue.ErrReceiptInvalid, err)
	}
	return fmt.Errorf("sqsqueue: %s %s: %w", op, url, err)
}
