package eventsource

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/urlcheck/urlcheck/pkg/queue/sqsqueue"
)

// sqsClient returns a client for URLCHECK_SQS_ENDPOINT, skipping t when the
// variable is not set.
func sqsClient(t *testing.T) *sqs.Client {
	t.Helper()
	endpoint := os.Getenv("URLCHECK_SQS_ENDPOINT")
	if endpoint == "" {
		t.Skip("set URLCHECK_SQS_ENDPOINT (make test starts fauxqs)")
	}
	client, err := sqsqueue.NewClient(context.Background(), endpoint, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	return client
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// newQueue creates a uniquely named queue for t and returns its URL.
func newQueue(t *testing.T, client *sqs.Client, suffix string, attrs map[string]string) string {
	t.Helper()
	name := fmt.Sprintf("urlcheck-es-%d-%s%s", time.Now().UnixNano(), unsafeName.ReplaceAllString(t.Name(), "-"), suffix)
	if len(name) > 80 {
		name = name[len(name)-80:]
	}
	url, err := sqsqueue.CreateQueue(context.Background(), client, name, attrs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
	return url
}

func send(t *testing.T, client *sqs.Client, url string, bodies ...string) {
	t.Helper()
	bs := make([][]byte, len(bodies))
	for i, b := range bodies {
		bs[i] = []byte(b)
	}
	if err := sqsqueue.New(client, url).SendBatch(context.Background(), bs, 0); err != nil {
		t.Fatal(err)
	}
}

// start runs p in the background; the returned function stops it and checks
// that Run returned nil.
func start(t *testing.T, p *SQSPoller) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("Run did not return within 30s of cancellation")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitFor polls cond until it holds or timeout passes (then fails t with
// what).
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// deliveries records, per message body, the ApproximateReceiveCount of each
// delivery the handler saw.
type deliveries struct {
	mu     sync.Mutex
	counts map[string][]int
	sizes  []int // records per invocation
}

func (d *deliveries) add(t *testing.T, ev events.SQSEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.counts == nil {
		d.counts = map[string][]int{}
	}
	d.sizes = append(d.sizes, len(ev.Records))
	for _, r := range ev.Records {
		n, err := strconv.Atoi(r.Attributes["ApproximateReceiveCount"])
		if err != nil {
			t.Errorf("record %s: ApproximateReceiveCount %q: %v", r.MessageId, r.Attributes["ApproximateReceiveCount"], err)
		}
		d.counts[r.Body] = append(d.counts[r.Body], n)
	}
}

func (d *deliveries) get(body string) []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]int(nil), d.counts[body]...)
}

func (d *deliveries) invocationSizes() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]int(nil), d.sizes...)
}

func increasing(s []int) bool {
	for i := 1; i < len(s); i++ {
		if s[i] <= s[i-1] {
			return false
		}
	}
	return len(s) > 0 && s[0] == 1
}

// queueEmpty reports whether the queue has no visible or in-flight message.
func queueEmpty(t *testing.T, client *sqs.Client, url string) bool {
	t.Helper()
	out, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes["ApproximateNumberOfMessages"] == "0" && out.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
}

func TestPollerConfig(t *testing.T) {
	client := sqs.New(sqs.Options{Region: "us-east-1"})
	h := func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, nil
	}
	valid := func() *SQSPoller { return &SQSPoller{Client: client, QueueURL: "http://127.0.0.1:1/q", Handler: h} }
	tests := []struct {
		name   string
		change func(p *SQSPoller)
	}{
		{"nil client", func(p *SQSPoller) { p.Client = nil }},
		{"no queue", func(p *SQSPoller) { p.QueueURL = "" }},
		{"nil handler", func(p *SQSPoller) { p.Handler = nil }},
		{"batch size negative", func(p *SQSPoller) { p.BatchSize = -1 }},
		{"batch size too big", func(p *SQSPoller) { p.BatchSize = MaxBatchSize + 1; p.BatchWindow = time.Second }},
		{"batch size > 10 without window", func(p *SQSPoller) { p.BatchSize = 11 }},
		{"batch size > 10 with short window", func(p *SQSPoller) { p.BatchSize = 11; p.BatchWindow = 500 * time.Millisecond }},
		{"window too long", func(p *SQSPoller) { p.BatchWindow = MaxBatchWindow + time.Second }},
		{"negative window", func(p *SQSPoller) { p.BatchWindow = -1 }},
		{"negative concurrency", func(p *SQSPoller) { p.MaxConcurrency = -1 }},
		{"negative visibility", func(p *SQSPoller) { p.Visibility = -1 }},
		{"negative wait", func(p *SQSPoller) { p.WaitTime = -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := valid()
			tt.change(p)
			// Run checks the configuration before any request (the queue
			// URL points nowhere).
			if err := p.Run(context.Background()); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("Run: %v, want ErrInvalidConfig", err)
			}
		})
	}
	t.Run("defaults", func(t *testing.T) {
		c, err := valid().config()
		if err != nil {
			t.Fatal(err)
		}
		if c.batch != DefaultBatchSize || c.concurrency != DefaultMaxConcurrency || c.wait != DefaultWaitTime || c.visibility != 0 || c.window != 0 {
			t.Errorf("defaults %+v", c)
		}
		p := valid()
		p.WaitTime, p.Visibility = time.Minute, 1500*time.Millisecond
		if c, err = p.config(); err != nil || c.wait != MaxWaitTime || c.visibility != 2 {
			t.Errorf("wait %v visibility %d (err %v), want 20s and 2", c.wait, c.visibility, err)
		}
	})
}

func TestPollerRecord(t *testing.T) {
	client := sqsClient(t)
	url := newQueue(t, client, "", nil)
	arn, err := sqsqueue.QueueARN(context.Background(), client, url)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-2 * time.Second).UnixMilli()
	_, err = client.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl:    aws.String(url),
		MessageBody: aws.String(`{"url":"https://example.com/"}`),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"kind": {DataType: aws.String("String"), StringValue: aws.String("check")},
			"blob": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan events.SQSMessage, 1)
	p := &SQSPoller{Client: client, QueueURL: url, QueueARN: arn, Handler: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		for _, r := range ev.Records {
			got <- r
		}
		return events.SQSEventResponse{}, nil
	}}
	stop := start(t, p)
	var r events.SQSMessage
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no record within 10s")
	}
	waitFor(t, 5*time.Second, "the delete", func() bool { return p.Stats().Deleted == 1 })
	stop()
	sum := md5.Sum([]byte(r.Body))
	if r.Body != `{"url":"https://example.com/"}` || r.MessageId == "" || r.ReceiptHandle == "" ||
		r.EventSource != "aws:sqs" || r.EventSourceARN != arn || r.AWSRegion != "us-east-1" || r.Md5OfBody != hex.EncodeToString(sum[:]) {
		t.Errorf("record %+v", r)
	}
	if r.Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("ApproximateReceiveCount %q, want 1", r.Attributes["ApproximateReceiveCount"])
	}
	for _, name := range []string{"SentTimestamp", "ApproximateFirstReceiveTimestamp"} {
		ms, err := strconv.ParseInt(r.Attributes[name], 10, 64)
		if err != nil || ms < before || ms > time.Now().UnixMilli() {
			t.Errorf("attribute %s = %q, want a recent time in ms", name, r.Attributes[name])
		}
	}
	if a := r.MessageAttributes["kind"]; a.DataType != "String" || aws.ToString(a.StringValue) != "check" {
		t.Errorf("message attribute kind %+v", a)
	}
	if a := r.MessageAttributes["blob"]; a.DataType != "Binary" || string(a.BinaryValue) != "\x00\x01\x02" {
		t.Errorf("message attribute blob %+v", a)
	}
	if r.Md5OfMessageAttributes == "" {
		t.Errorf("empty Md5OfMessageAttributes")
	}
	s := p.Stats()
	if s.Invocations != 1 || s.Messages != 1 || s.Deleted != 1 || s.Errors != 0 || s.Receives < 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestPollerPartialBatch(t *testing.T) {
	client := sqsClient(t)
	url := newQueue(t, client, "", map[string]string{"VisibilityTimeout": "1"})
	var ok, bad []string
	for i := range 3 {
		ok = append(ok, fmt.Sprintf("ok-%d", i))
		bad = append(bad, fmt.Sprintf("fail-%d", i))
	}
	send(t, client, url, append(append([]string(nil), ok...), bad...)...)
	var d deliveries
	p := &SQSPoller{Client: client, QueueURL: url, Handler: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		d.add(t, ev)
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			if strings.HasPrefix(r.Body, "fail-") {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		return resp, nil
	}}
	stop := start(t, p)
	waitFor(t, 20*time.Second, "every failed record to be delivered again", func() bool {
		for _, b := range bad {
			if len(d.get(b)) < 2 {
				return false
			}
		}
		return true
	})
	stop()
	for _, b := range ok {
		if c := d.get(b); len(c) != 1 || c[0] != 1 {
			t.Errorf("%s: receive counts %v, want [1] (deleted after the first delivery)", b, c)
		}
	}
	for _, b := range bad {
		if c := d.get(b); !increasing(c) {
			t.Errorf("%s: receive counts %v, want 1, 2, ... (ApproximateReceiveCount increasing)", b, c)
		}
	}
	s := p.Stats()
	if s.Deleted != 3 || s.Failed < 6 || s.Errors != 0 || s.DeleteErrors != 0 {
		t.Errorf("stats %+v, want Deleted 3, Failed >= 6, no errors", s)
	}
}

func TestPollerBatchFailure(t *testing.T) {
	client := sqsClient(t)
	tests := []struct {
		name string
		fail func(ev events.SQSEvent) (events.SQSEventResponse, error)
		stat func(s PollerStats) int64
	}{
		{"handler error", func(events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{}, errors.New("boom")
		}, func(s PollerStats) int64 { return s.Errors }},
		{"panic", func(events.SQSEvent) (events.SQSEventResponse, error) {
			panic("boom")
		}, func(s PollerStats) int64 { return s.Panics }},
		{"unknown item identifier", func(events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "not-a-message-id"}}}, nil
		}, func(s PollerStats) int64 { return s.Errors }},
		{"empty item identifier", func(events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{}}}, nil
		}, func(s PollerStats) int64 { return s.Errors }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := newQueue(t, client, "", map[string]string{"VisibilityTimeout": "1"})
			bodies := []string{"a", "b", "c"}
			send(t, client, url, bodies...)
			var d deliveries
			var failures atomic.Int64
			p := &SQSPoller{Client: client, QueueURL: url, Handler: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				d.add(t, ev)
				for _, r := range ev.Records {
					if r.Attributes["ApproximateReceiveCount"] == "1" {
						failures.Add(1)
						return tt.fail(ev) // a first delivery: fail the batch
					}
				}
				return events.SQSEventResponse{}, nil
			}}
			stop := start(t, p)
			waitFor(t, 20*time.Second, "all records to be deleted", func() bool { return p.Stats().Deleted == 3 })
			stop()
			for _, b := range bodies {
				if c := d.get(b); len(c) < 2 || !increasing(c) {
					t.Errorf("%s: receive counts %v, want 1, 2, ... (returned to the queue after the failure)", b, c)
				}
			}
			s := p.Stats()
			if got := tt.stat(s); got != failures.Load() || got == 0 {
				t.Errorf("failure counter %d, want %d (stats %+v)", got, failures.Load(), s)
			}
			if !queueEmpty(t, client, url) {
				t.Errorf("queue not empty")
			}
		})
	}
}

func TestPollerMaxConcurrency(t *testing.T) {
	client := sqsClient(t)
	url := newQueue(t, client, "", nil)
	const n, limit = 20, 3
	var bodies []string
	for i := range n {
		bodies = append(bodies, strconv.Itoa(i))
	}
	send(t, client, url, bodies...)
	var inflight, maxInflight atomic.Int64
	p := &SQSPoller{Client: client, QueueURL: url, BatchSize: 1, MaxConcurrency: limit,
		Handler: func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			cur := inflight.Add(1)
			defer inflight.Add(-1)
			for m := maxInflight.Load(); cur > m && !maxInflight.CompareAndSwap(m, cur); m = maxInflight.Load() {
			}
			// Hold the slot until the limit is reached (or a while, for
			// the last messages), so that the poller is pushed against it.
			deadline := time.Now().Add(300 * time.Millisecond)
			for inflight.Load() < limit && time.Now().Before(deadline) {
				time.Sleep(2 * time.Millisecond)
			}
			time.Sleep(10 * time.Millisecond)
			return events.SQSEventResponse{}, nil
		}}
	stop := start(t, p)
	waitFor(t, 30*time.Second, "all records to be deleted", func() bool { return p.Stats().Deleted == n })
	stop()
	if m := maxInflight.Load(); m != limit {
		t.Errorf("max in flight %d, want %d", m, limit)
	}
	if s := p.Stats(); s.Invocations != n {
		t.Errorf("stats %+v, want %d invocations", s, n)
	}
}

func TestPollerBatchWindow(t *testing.T) {
	client := sqsClient(t)
	url := newQueue(t, client, "", nil)
	const n = 25
	var bodies []string
	for i := range n {
		bodies = append(bodies, strconv.Itoa(i))
	}
	send(t, client, url, bodies...)
	var d deliveries
	p := &SQSPoller{Client: client, QueueURL: url, BatchSize: n, BatchWindow: 2 * time.Second,
		Handler: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			d.add(t, ev)
			return events.SQSEventResponse{}, nil
		}}
	stop := start(t, p)
	waitFor(t, 20*time.Second, "all records to be deleted", func() bool { return p.Stats().Deleted == n })
	stop()
	sizes := d.invocationSizes()
	biggest := 0
	for _, s := range sizes {
		biggest = max(biggest, s)
	}
	if biggest <= 10 || biggest > n {
		t.Errorf("invocation sizes %v, want one with more than 10 records and none with more than %d", sizes, n)
	}
	for _, b := range bodies {
		if c := d.get(b); len(c) != 1 {
			t.Errorf("%s delivered %d times, want once", b, len(c))
		}
	}
}

func TestPollerRedriveToDLQ(t *testing.T) {
	client := sqsClient(t)
	ctx := context.Background()
	dlqURL := newQueue(t, client, "-dlq", nil)
	dlqARN, err := sqsqueue.QueueARN(ctx, client, dlqURL)
	if err != nil {
		t.Fatal(err)
	}
	url := newQueue(t, client, "", map[string]string{
		"VisibilityTimeout": "1",
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, dlqARN),
	})
	send(t, client, url, "poison")
	var d deliveries
	p := &SQSPoller{Client: client, QueueURL: url, Handler: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		d.add(t, ev)
		return events.SQSEventResponse{}, errors.New("always failing")
	}}
	stop := start(t, p)
	dlq := sqsqueue.New(client, dlqURL)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ms, err := dlq.Receive(ctx, 1, 30*time.Second, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 1 {
			if string(ms[0].Body) != "poison" {
				t.Errorf("DLQ message body %q", ms[0].Body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("message not in the DLQ after 20s; deliveries %v, stats %+v", d.get("poison"), p.Stats())
		}
	}
	stop()
	if c := d.get("poison"); len(c) != 2 || c[0] != 1 || c[1] != 2 {
		t.Errorf("receive counts %v, want [1 2] (maxReceiveCount 2)", c)
	}
	if s := p.Stats(); s.Errors != 2 || s.Deleted != 0 {
		t.Errorf("stats %+v, want 2 errors, nothing deleted", s)
	}
}
