package eventsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Limits and defaults of SQSPoller, as for a Lambda SQS event source mapping.
const (
	// DefaultBatchSize is the BatchSize used when SQSPoller.BatchSize is 0.
	DefaultBatchSize = 10
	// MaxBatchSize is the largest SQSPoller.BatchSize Lambda accepts for a
	// standard queue.
	MaxBatchSize = 10000
	// MaxBatchWindow is the largest SQSPoller.BatchWindow
	// (MaximumBatchingWindowInSeconds 300).
	MaxBatchWindow = 300 * time.Second
	// DefaultMaxConcurrency is the MaxConcurrency used when
	// SQSPoller.MaxConcurrency is 0.
	DefaultMaxConcurrency = 5
	// DefaultWaitTime is the long-poll wait used when SQSPoller.WaitTime is 0.
	DefaultWaitTime = time.Second
	// MaxWaitTime is the largest long-poll wait SQS accepts (20 s).
	MaxWaitTime = 20 * time.Second
	// MaxBatchPayload is the total body size in bytes (6 MB) at which a
	// batch stops gathering records, like Lambda's invocation payload limit.
	MaxBatchPayload = 6 << 20

	maxReceive      = 10               // MaxNumberOfMessages per ReceiveMessage
	maxVisibility   = 12 * time.Hour   // SQS VisibilityTimeout maximum
	deleteTimeout   = 30 * time.Second // bound on the deletes after an invocation
	receiveErrPause = time.Second      // pause after a failed ReceiveMessage
	shortPollPause  = 100 * time.Millisecond
)

// SQSHandler is a Lambda handler for SQS events. Returning an error (or
// panicking) fails the whole batch; otherwise the records listed in the
// response's BatchItemFailures (ItemIdentifier = MessageId) failed and all
// others succeeded.
type SQSHandler func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// SQSPoller emulates a Lambda SQS event source mapping (with
// ReportBatchItemFailures enabled) over one standard queue. Set the fields,
// then call Run; the fields must not change while Run runs. Stats may be
// called at any time, from any goroutine.
//
// Each receive is a ReceiveMessage with MaxNumberOfMessages 10 (fewer if the
// batch needs fewer), all system attributes and all message attributes. With
// BatchWindow 0 a batch is what one receive returned. With BatchWindow > 0,
// once a receive returned the batch's first record, the poller keeps
// receiving until the batch holds BatchSize records, its bodies total
// MaxBatchPayload bytes, or BatchWindow has passed since that first record.
// A message delivered twice while a batch gathers (its visibility timeout ran
// out) appears once, with the newest receipt handle.
//
// After the handler returns, the poller deletes (DeleteMessageBatch, up to 10
// entries a request) every record the handler did not report as failed. It
// deletes nothing when the handler returned an error, panicked, or reported
// a failure whose ItemIdentifier is empty or not the MessageId of a record of
// the batch (Lambda then treats the whole batch as failed). Records not
// deleted become visible again when their visibility timeout ends, and the
// queue's redrive policy, if any, applies as usual.
//
// Simplifications: one goroutine receives (Lambda scales pollers); there is
// no function timeout (the handler's context ends only when Run's does); the
// batch is not retried or split on failure.
type SQSPoller struct {
	// Client sends the SQS requests; required.
	Client *sqs.Client
	// QueueURL is the queue's URL; required.
	QueueURL string
	// QueueARN, optional, is put in each record's EventSourceARN.
	QueueARN string
	// BatchSize is the most records per invocation: 1..MaxBatchSize;
	// 0 means DefaultBatchSize (10). As in Lambda, a BatchSize above 10
	// needs a BatchWindow of at least one second.
	BatchSize int
	// BatchWindow is MaximumBatchingWindowInSeconds: how long to gather up
	// to BatchSize records, counted from the first record received; at most
	// MaxBatchWindow. 0 means invoke with what one receive returned.
	BatchWindow time.Duration
	// MaxConcurrency is ScalingConfig.MaximumConcurrency: the most handler
	// invocations in flight at once; 0 means DefaultMaxConcurrency. The
	// poller does not receive while all are busy.
	MaxConcurrency int
	// Visibility is the VisibilityTimeout passed on ReceiveMessage, rounded
	// up to whole seconds (at most 12 h); 0 means the queue's own.
	Visibility time.Duration
	// WaitTime is the long-poll wait (WaitTimeSeconds) of each receive,
	// rounded up to whole seconds; 0 means DefaultWaitTime, at most
	// MaxWaitTime. While a batch window runs, shorter waits are used so as
	// not to overshoot it (a wait of 0 seconds falls back to the queue's
	// ReceiveMessageWaitTimeSeconds, which should be 0).
	WaitTime time.Duration
	// Handler is invoked with each batch; required.
	Handler SQSHandler
	// Logger receives receive/delete errors, handler errors and panics; nil
	// discards them.
	Logger *slog.Logger

	stats pollerCounters
}

// PollerStats are the counters of an SQSPoller since it was created.
type PollerStats struct {
	Receives      int64 // ReceiveMessage requests that succeeded
	EmptyReceives int64 // of those, the ones that returned no message
	ReceiveErrors int64 // ReceiveMessage requests that failed
	Messages      int64 // messages received (each delivery counts)
	Invocations   int64 // handler invocations
	Errors        int64 // invocations that returned an error or an invalid batch response
	Panics        int64 // invocations that panicked
	Deleted       int64 // records deleted after an invocation
	Failed        int64 // records reported in BatchItemFailures of valid responses
	DeleteErrors  int64 // records whose delete failed
}

type pollerCounters struct {
	receives, emptyReceives, receiveErrors, messages, invocations,
	errors, panics, deleted, failed, deleteErrors atomic.Int64
}

// Stats returns a snapshot of p's counters.
func (p *SQSPoller) Stats() PollerStats {
	c := &p.stats
	return PollerStats{
		Receives:      c.receives.Load(),
		EmptyReceives: c.emptyReceives.Load(),
		ReceiveErrors: c.receiveErrors.Load(),
		Messages:      c.messages.Load(),
		Invocations:   c.invocations.Load(),
		Errors:        c.errors.Load(),
		Panics:        c.panics.Load(),
		Deleted:       c.deleted.Load(),
		Failed:        c.failed.Load(),
		DeleteErrors:  c.deleteErrors.Load(),
	}
}

// pollerConfig is an SQSPoller's configuration with defaults applied.
type pollerConfig struct {
	batch, concurrency int
	window, wait       time.Duration
	visibility         int32
	region             string
	log                *slog.Logger
}

// ErrInvalidConfig is wrapped by the errors Run returns for an invalid
// SQSPoller configuration.
var ErrInvalidConfig = errors.New("eventsource: invalid configuration")

func (p *SQSPoller) config() (pollerConfig, error) {
	c := pollerConfig{
		batch:       p.BatchSize,
		concurrency: p.MaxConcurrency,
		window:      p.BatchWindow,
		wait:        p.WaitTime,
		log:         p.Logger,
	}
	bad := func(format string, args ...any) (pollerConfig, error) {
		return pollerConfig{}, fmt.Errorf("%w: sqs poller for %q: %s", ErrInvalidConfig, p.QueueURL, fmt.Sprintf(format, args...))
	}
	switch {
	case p.Client == nil:
		return bad("nil Client")
	case p.QueueURL == "":
		return bad("empty QueueURL")
	case p.Handler == nil:
		return bad("nil Handler")
	case c.batch < 0 || c.batch > MaxBatchSize:
		return bad("BatchSize %d, want 1..%d (0 for %d)", c.batch, MaxBatchSize, DefaultBatchSize)
	case c.window < 0 || c.window > MaxBatchWindow:
		return bad("BatchWindow %v, want 0..%v", c.window, MaxBatchWindow)
	case c.concurrency < 0:
		return bad("negative MaxConcurrency %d", c.concurrency)
	case p.Visibility < 0:
		return bad("negative Visibility %v", p.Visibility)
	case c.wait < 0:
		return bad("negative WaitTime %v", c.wait)
	}
	if c.batch == 0 {
		c.batch = DefaultBatchSize
	}
	if c.batch > maxReceive && c.window < time.Second {
		return bad("BatchSize %d > %d needs a BatchWindow of at least 1s (Lambda rule), have %v", c.batch, maxReceive, c.window)
	}
	if c.concurrency == 0 {
		c.concurrency = DefaultMaxConcurrency
	}
	if c.wait == 0 {
		c.wait = DefaultWaitTime
	}
	c.wait = min(c.wait, MaxWaitTime)
	c.visibility = ceilSeconds(min(p.Visibility, maxVisibility))
	c.region = p.Client.Options().Region
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.log = c.log.With("queue", p.QueueURL)
	return c, nil
}

// ceilSeconds rounds d (>= 0) up to whole seconds.
func ceilSeconds(d time.Duration) int32 {
	s := d / time.Second
	if d%time.Second != 0 {
		s++
	}
	return int32(s)
}

// Run polls the queue and invokes the handler until ctx is done, then waits
// for the invocations in flight (their context is ctx, so they see the
// cancellation) and their deletes, and returns nil. A batch gathered when
// ctx ends is not handed to the handler: its records return to the queue
// after their visibility timeout. Failed ReceiveMessage requests are logged,
// counted and retried after a pause of one second. Run returns an error
// wrapping ErrInvalidConfig, before any request, if the configuration is
// invalid. Run must not be called again while it runs.
func (p *SQSPoller) Run(ctx context.Context) error {
	cfg, err := p.config()
	if err != nil {
		return err
	}
	slots := make(chan struct{}, cfg.concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		batch := p.gather(ctx, cfg)
		if ctx.Err() != nil {
			<-slots
			if len(batch) > 0 {
				cfg.log.Info("sqs poller stopping: batch not invoked, records return after their visibility timeout", "records", len(batch))
			}
			return nil
		}
		if len(batch) == 0 {
			<-slots
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			p.invoke(ctx, cfg, batch)
		}()
	}
}

// gather receives one batch (see the SQSPoller documentation). It returns
// early, with what it has, when ctx ends.
func (p *SQSPoller) gather(ctx context.Context, cfg pollerConfig) []types.Message {
	var (
		batch    []types.Message
		index    = map[string]int{} // MessageId -> position in batch
		payload  int
		deadline time.Time
	)
	for {
		wait := cfg.wait
		if !deadline.IsZero() {
			rem := time.Until(deadline)
			if rem <= 0 {
				return batch
			}
			wait = min(wait, rem.Truncate(time.Second)) // do not overshoot the window
		}
		msgs, err := p.receive(ctx, cfg, min(maxReceive, cfg.batch-len(batch)), wait)
		if err != nil {
			if ctx.Err() != nil {
				return batch
			}
			p.stats.receiveErrors.Add(1)
			cfg.log.Error("sqs poller: receive failed", "err", err)
			if len(batch) > 0 {
				return batch
			}
			sleep(ctx, receiveErrPause)
			return nil
		}
		for _, m := range msgs {
			id := aws.ToString(m.MessageId)
			if i, ok := index[id]; ok {
				batch[i] = m // redelivered while gathering: keep the newest receipt
				continue
			}
			index[id] = len(batch)
			batch = append(batch, m)
			payload += len(aws.ToString(m.Body))
		}
		if cfg.window == 0 || len(batch) >= cfg.batch || payload >= MaxBatchPayload || ctx.Err() != nil {
			return batch
		}
		if len(batch) == 0 {
			return nil // nothing yet: let Run start over (and re-check ctx)
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(cfg.window)
		}
		if len(msgs) == 0 && wait < time.Second {
			// A short poll found nothing: pause rather than spin.
			sleep(ctx, min(shortPollPause, time.Until(deadline)))
		}
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// receive sends one ReceiveMessage request for up to max messages, waiting
// up to wait (rounded up to whole seconds).
func (p *SQSPoller) receive(ctx context.Context, cfg pollerConfig, max int, wait time.Duration) ([]types.Message, error) {
	out, err := p.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(p.QueueURL),
		MaxNumberOfMessages:         int32(max),
		VisibilityTimeout:           cfg.visibility, // 0 is omitted: the queue's default
		WaitTimeSeconds:             ceilSeconds(wait),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return nil, fmt.Errorf("eventsource: receive from %s: %w", p.QueueURL, err)
	}
	p.stats.receives.Add(1)
	if len(out.Messages) == 0 {
		p.stats.emptyReceives.Add(1)
	}
	p.stats.messages.Add(int64(len(out.Messages)))
	return out.Messages, nil
}

// records converts received messages into the records of an SQS event.
func (p *SQSPoller) records(cfg pollerConfig, batch []types.Message) []events.SQSMessage {
	recs := make([]events.SQSMessage, len(batch))
	for i, m := range batch {
		attrs := make(map[string]string, len(m.Attributes))
		for k, v := range m.Attributes {
			attrs[k] = v
		}
		mattrs := make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes))
		for k, v := range m.MessageAttributes {
			mattrs[k] = events.SQSMessageAttribute{
				StringValue:      v.StringValue,
				BinaryValue:      v.BinaryValue,
				StringListValues: nonNil(v.StringListValues),
				BinaryListValues: nonNil(v.BinaryListValues),
				DataType:         aws.ToString(v.DataType),
			}
		}
		recs[i] = events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             attrs,
			MessageAttributes:      mattrs,
			EventSourceARN:         p.QueueARN,
			EventSource:            "aws:sqs",
			AWSRegion:              cfg.region,
		}
	}
	return recs
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// invoke runs the handler on batch and deletes the records that succeeded.
func (p *SQSPoller) invoke(ctx context.Context, cfg pollerConfig, batch []types.Message) {
	recs := p.records(cfg, batch)
	p.stats.invocations.Add(1)
	resp, err, panicked := callSQS(ctx, p.Handler, events.SQSEvent{Records: recs})
	switch {
	case panicked != nil:
		p.stats.panics.Add(1)
		cfg.log.Error("sqs poller: handler panicked; no record deleted", "records", len(recs), "panic", panicked.value, "stack", panicked.stack)
		return
	case err != nil:
		p.stats.errors.Add(1)
		cfg.log.Warn("sqs poller: handler failed; no record deleted", "records", len(recs), "err", err)
		return
	}
	failed := make(map[string]bool, len(resp.BatchItemFailures))
	ids := make(map[string]bool, len(recs))
	for _, r := range recs {
		ids[r.MessageId] = true
	}
	for _, f := range resp.BatchItemFailures {
		if !ids[f.ItemIdentifier] {
			p.stats.errors.Add(1)
			cfg.log.Warn("sqs poller: batch item failure with an unknown ItemIdentifier; whole batch failed, no record deleted",
				"itemIdentifier", f.ItemIdentifier, "records", len(recs))
			return
		}
		failed[f.ItemIdentifier] = true
	}
	p.stats.failed.Add(int64(len(failed)))
	var del []events.SQSMessage
	for _, r := range recs {
		if !failed[r.MessageId] {
			del = append(del, r)
		}
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	p.delete(dctx, cfg, del)
}

// panicInfo is a recovered panic.
type panicInfo struct {
	value any
	stack string
}

// callSQS calls h, recovering a panic.
func callSQS(ctx context.Context, h SQSHandler, ev events.SQSEvent) (resp events.SQSEventResponse, err error, p *panicInfo) {
	defer func() {
		if v := recover(); v != nil {
			p = &panicInfo{value: v, stack: string(debug.Stack())}
		}
	}()
	resp, err = h(ctx, ev)
	return resp, err, nil
}

// delete deletes recs with DeleteMessageBatch requests of up to 10 entries.
func (p *SQSPoller) delete(ctx context.Context, cfg pollerConfig, recs []events.SQSMessage) {
	for start := 0; start < len(recs); start += maxReceive {
		chunk := recs[start:min(start+maxReceive, len(recs))]
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for i, r := range chunk {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(r.ReceiptHandle)}
		}
		out, err := p.Client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(p.QueueURL), Entries: entries})
		if err != nil {
			p.stats.deleteErrors.Add(int64(len(chunk)))
			cfg.log.Error("sqs poller: delete failed; the records will be delivered again", "records", len(chunk), "err", err)
			continue
		}
		p.stats.deleted.Add(int64(len(out.Successful)))
		for _, f := range out.Failed {
			p.stats.deleteErrors.Add(1)
			msgID := ""
			if i, err := strconv.Atoi(aws.ToString(f.Id)); err == nil && i >= 0 && i < len(chunk) {
				msgID = chunk[i].MessageId
			}
			cfg.log.Error("sqs poller: delete of a record failed; it will be delivered again",
				"messageId", msgID, "code", aws.ToString(f.Code), "message", aws.ToString(f.Message))
		}
	}
}
