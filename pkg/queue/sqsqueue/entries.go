package sqsqueue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/urlcheck/urlcheck/pkg/queue"
)

// Outgoing is one message to send with its own delay.
type Outgoing struct {
	Body  []byte
	Delay time.Duration // rounded up to whole seconds, clamped to 900 s
}

// SendEach sends msgs with SendMessageBatch requests of up to MaxSendBatch
// entries and returns one error per message (nil when it was sent): an
// invalid body or negative delay (queue.ErrInvalidArgument, not sent), the
// request's error for every entry of a failed request, or the SQS code and
// message of an entry SQS rejected. Unlike SendBatch it never stops early,
// so that the caller can tell exactly which messages are on the queue.
func (q *Queue) SendEach(ctx context.Context, msgs []Outgoing) []error {
	errs := make([]error, len(msgs))
	var idx []int
	for i, m := range msgs {
		switch {
		case checkBody("send each", m.Body) != nil:
			errs[i] = checkBody("send each", m.Body)
		case m.Delay < 0:
			errs[i] = fmt.Errorf("sqsqueue: send each: negative delay %v: %w", m.Delay, queue.ErrInvalidArgument)
		default:
			idx = append(idx, i)
		}
	}
	for start := 0; start < len(idx); start += MaxSendBatch {
		chunk := idx[start:min(start+MaxSendBatch, len(idx))]
		entries := make([]types.SendMessageBatchRequestEntry, len(chunk))
		for j, i := range chunk {
			entries[j] = types.SendMessageBatchRequestEntry{
				Id:           aws.String(strconv.Itoa(i)),
				MessageBody:  aws.String(string(msgs[i].Body)),
				DelaySeconds: seconds(msgs[i].Delay, queue.MaxDelay),
			}
		}
		out, err := q.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
		if err != nil {
			for _, i := range chunk {
				errs[i] = fmt.Errorf("sqsqueue: send batch to %s: %w", q.url, err)
			}
			continue
		}
		for _, f := range out.Failed {
			if i, err := strconv.Atoi(aws.ToString(f.Id)); err == nil && i >= 0 && i < len(errs) {
				errs[i] = fmt.Errorf("sqsqueue: send batch to %s: %s: %s", q.url, aws.ToString(f.Code), aws.ToString(f.Message))
			}
		}
	}
	return errs
}

// Visibility is one ChangeMessageVisibility to make.
type Visibility struct {
	Receipt string
	Timeout time.Duration // rounded up to whole seconds, clamped to 43200 s
}

// ChangeVisibilityEach changes the visibility timeouts of several in-flight
// messages with ChangeMessageVisibilityBatch requests of up to 10 entries
// and returns one error per entry (nil on success; entries whose receipt
// SQS rejects as invalid or not in flight wrap queue.ErrReceiptInvalid).
func (q *Queue) ChangeVisibilityEach(ctx context.Context, vs []Visibility) []error {
	errs := make([]error, len(vs))
	var idx []int
	for i, v := range vs {
		switch {
		case v.Receipt == "":
			errs[i] = fmt.Errorf("sqsqueue: change visibility in %s: empty receipt: %w", q.url, queue.ErrReceiptInvalid)
		case v.Timeout < 0:
			errs[i] = fmt.Errorf("sqsqueue: change visibility in %s: negative timeout %v: %w", q.url, v.Timeout, queue.ErrInvalidArgument)
		default:
			idx = append(idx, i)
		}
	}
	for start := 0; start < len(idx); start += MaxSendBatch {
		chunk := idx[start:min(start+MaxSendBatch, len(idx))]
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for j, i := range chunk {
			entries[j] = types.ChangeMessageVisibilityBatchRequestEntry{
				Id:                aws.String(strconv.Itoa(i)),
				ReceiptHandle:     aws.String(vs[i].Receipt),
				VisibilityTimeout: seconds(vs[i].Timeout, queue.MaxVisibility),
			}
		}
		out, err := q.client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
		if err != nil {
			for _, i := range chunk {
				errs[i] = wrapReceiptErr("change visibility batch in", q.url, err)
			}
			continue
		}
		for _, f := range out.Failed {
			i, err := strconv.Atoi(aws.ToString(f.Id))
			if err != nil || i < 0 || i >= len(errs) {
				continue
			}
			code := aws.ToString(f.Code)
			e := fmt.Errorf("sqsqueue: change visibility in %s: %s: %s", q.url, code, aws.ToString(f.Message))
			switch code {
			case "ReceiptHandleIsInvalid", "MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight":
				e = fmt.Errorf("%w: %w", e, queue.ErrReceiptInvalid)
			}
			errs[i] = e
		}
	}
	return errs
}
