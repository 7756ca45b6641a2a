package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/urlcheck/urlcheck/pkg/queue"
)

func TestSeconds(t *testing.T) {
	tests := []struct {
		d, max time.Duration
		want   int32
	}{
		{0, queue.MaxDelay, 0},
		{time.Nanosecond, queue.MaxDelay, 1},
		{999 * time.Millisecond, queue.MaxDelay, 1},
		{time.Second, queue.MaxDelay, 1},
		{time.Second + time.Nanosecond, queue.MaxDelay, 2},
		{1500 * time.Millisecond, queue.MaxDelay, 2},
		{queue.MaxDelay, queue.MaxDelay, 900},
		{queue.MaxDelay + time.Nanosecond, queue.MaxDelay, 900},
		{time.Hour, queue.MaxDelay, 900},
		{19*time.Second + time.Millisecond, queue.MaxWait, 20},
		{21 * time.Second, queue.MaxWait, 20},
		{queue.MaxVisibility - time.Millisecond, queue.MaxVisibility, 43200},
		{1 << 62, queue.MaxVisibility, 43200},
	}
	for _, tt := range tests {
		if got := seconds(tt.d, tt.max); got != tt.want {
			t.Errorf("seconds(%v, %v) = %d, want %d", tt.d, tt.max, got, tt.want)
		}
	}
}

// TestInvalidArguments needs no server: arguments are checked before any
// request (the nil client would panic otherwise).
func TestInvalidArguments(t *testing.T) {
	q := New(nil, "http://invalid/queue")
	ctx := context.Background()
	big := make([]byte, queue.MaxBodyBytes+1)
	checks := map[string]error{
		"send empty":           q.Send(ctx, nil, 0),
		"send oversized":       q.Send(ctx, big, 0),
		"send negative delay":  q.Send(ctx, []byte("x"), -time.Second),
		"batch empty body":     q.SendBatch(ctx, [][]byte{[]byte("x"), {}}, 0),
		"batch negative delay": q.SendBatch(ctx, [][]byte{[]byte("x")}, -1),
		"change negative":      q.ChangeVisibility(ctx, "r", -1),
	}
	for _, max := range []int{0, queue.MaxBatch + 1} {
		_, err := q.Receive(ctx, max, 0, 0)
		checks["receive max "+strconv.Itoa(max)] = err
	}
	_, checks["receive negative visibility"] = q.Receive(ctx, 1, -1, 0)
	_, checks["receive negative wait"] = q.Receive(ctx, 1, 0, -1)
	for name, err := range checks {
		if !errors.Is(err, queue.ErrInvalidArgument) {
			t.Errorf("%s: error %v, want ErrInvalidArgument", name, err)
		}
	}
	if err := q.Delete(ctx, ""); !errors.Is(err, queue.ErrReceiptInvalid) {
		t.Errorf("Delete(\"\"): error %v, want ErrReceiptInvalid", err)
	}
	if err := q.ChangeVisibility(ctx, "", 0); !errors.Is(err, queue.ErrReceiptInvalid) {
		t.Errorf("ChangeVisibility(\"\"): error %v, want ErrReceiptInvalid", err)
	}
	if err := q.SendBatch(ctx, nil, 0); err != nil {
		t.Errorf("SendBatch(nil): %v", err)
	}
}

// integration returns a client for the SQS server at URLCHECK_SQS_ENDPOINT,
// skipping the test when it is not set.
func integration(t *testing.T) *sqs.Client {
	t.Helper()
	endpoint := os.Getenv("URLCHECK_SQS_ENDPOINT")
	if endpoint == "" {
		t.Skip("set URLCHECK_SQS_ENDPOINT (make test-aws starts fauxqs)")
	}
	client, err := NewClient(context.Background(), endpoint, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	return client
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// newQueue creates a uniquely named queue for t with attrs.
func newQueue(t *testing.T, client *sqs.Client, suffix string, attrs map[string]string) *Queue {
	t.Helper()
	name := fmt.Sprintf("urlcheck-test-%d-%s%s", time.Now().UnixNano(), unsafeName.ReplaceAllString(t.Name(), "-"), suffix)
	if len(name) > 80 {
		name = name[len(name)-80:]
	}
	url, err := CreateQueue(context.Background(), client, name, attrs)
	if err != nil {
		t.Fatal(err)
	}
	return New(client, url)
}

// receiveOne receives exactly one message or fails t.
func receiveOne(t *testing.T, q *Queue, visibility, wait time.Duration) queue.Message {
	t.Helper()
	ms, err := q.Receive(context.Background(), 1, visibility, wait)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 {
		t.Fatalf("received %d messages, want 1", len(ms))
	}
	return ms[0]
}

// receiveNone fails t if a message is received within wait.
func receiveNone(t *testing.T, q *Queue, wait time.Duration) {
	t.Helper()
	ms, err := q.Receive(context.Background(), queue.MaxBatch, 30*time.Second, wait)
	if err != nil {
		t.Fatal(err)
	}
	if ms == nil || len(ms) != 0 {
		t.Fatalf("received %d messages (nil slice: %v), want an empty slice", len(ms), ms == nil)
	}
}

func TestSQS(t *testing.T) {
	client := integration(t)
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, q *Queue)
	}{
		{"receive hides the message, count 1", func(t *testing.T, q *Queue) {
			before := time.Now().Add(-time.Second)
			if err := q.Send(ctx, []byte(`{"url":"https://example.com/"}`), 0); err != nil {
				t.Fatal(err)
			}
			m := receiveOne(t, q, 30*time.Second, time.Second)
			if string(m.Body) != `{"url":"https://example.com/"}` || m.ID == "" || m.Receipt == "" {
				t.Errorf("message %+v", m)
			}
			if m.ReceiveCount != 1 {
				t.Errorf("ReceiveCount %d, want 1", m.ReceiveCount)
			}
			if m.SentAt.Before(before) || m.SentAt.After(time.Now().Add(time.Second)) {
				t.Errorf("SentAt %v, want about %v", m.SentAt, time.Now())
			}
			receiveNone(t, q, 0)
			if err := q.Delete(ctx, m.Receipt); err != nil {
				t.Errorf("Delete: %v", err)
			}
		}},
		{"change visibility 0 shows it again, count 2", func(t *testing.T, q *Queue) {
			if err := q.Send(ctx, []byte("a"), 0); err != nil {
				t.Fatal(err)
			}
			m1 := receiveOne(t, q, 30*time.Second, time.Second)
			if err := q.ChangeVisibility(ctx, m1.Receipt, 0); err != nil {
				t.Fatal(err)
			}
			m2 := receiveOne(t, q, 30*time.Second, time.Second)
			if m2.ID != m1.ID || m2.ReceiveCount != 2 || m2.Receipt == m1.Receipt {
				t.Errorf("second delivery %+v after %+v: want same ID, count 2, new receipt", m2, m1)
			}
			// Extending the current receipt works.
			if err := q.ChangeVisibility(ctx, m2.Receipt, 45*time.Second); err != nil {
				t.Errorf("ChangeVisibility(current receipt, 45s): %v", err)
			}
		}},
		{"stale receipt", func(t *testing.T, q *Queue) {
			if err := q.Send(ctx, []byte("s"), 0); err != nil {
				t.Fatal(err)
			}
			m1 := receiveOne(t, q, 30*time.Second, time.Second)
			if err := q.ChangeVisibility(ctx, m1.Receipt, 0); err != nil {
				t.Fatal(err)
			}
			m2 := receiveOne(t, q, 30*time.Second, time.Second)
			// SQS may accept a stale DeleteMessage (fauxqs always does); the
			// only error allowed is ErrReceiptInvalid.
			if err := q.Delete(ctx, m1.Receipt); err != nil && !errors.Is(err, queue.ErrReceiptInvalid) {
				t.Errorf("Delete(stale receipt): %v, want nil or ErrReceiptInvalid", err)
			}
			// A stale receipt is not in flight: ChangeMessageVisibility fails
			// (fauxqs: MessageNotInflight).
			if err := q.ChangeVisibility(ctx, m1.Receipt, 10*time.Second); !errors.Is(err, queue.ErrReceiptInvalid) {
				t.Errorf("ChangeVisibility(stale receipt): %v, want ErrReceiptInvalid", err)
			}
			if err := q.ChangeVisibility(ctx, "no-such-receipt", 10*time.Second); !errors.Is(err, queue.ErrReceiptInvalid) {
				t.Errorf("ChangeVisibility(unknown receipt): %v, want ErrReceiptInvalid", err)
			}
			if err := q.Delete(ctx, m2.Receipt); err != nil {
				t.Fatalf("Delete(current receipt): %v", err)
			}
			if err := q.ChangeVisibility(ctx, m2.Receipt, 0); !errors.Is(err, queue.ErrReceiptInvalid) {
				t.Errorf("ChangeVisibility(deleted message): %v, want ErrReceiptInvalid", err)
			}
			receiveNone(t, q, 0)
		}},
		{"delay rounds up to 1 s", func(t *testing.T, q *Queue) {
			start := time.Now()
			if err := q.Send(ctx, []byte("d"), 300*time.Millisecond); err != nil { // rounds up to 1 s
				t.Fatal(err)
			}
			receiveNone(t, q, 0)
			m := receiveOne(t, q, 30*time.Second, 2*time.Second)
			if el := time.Since(start); el < 900*time.Millisecond || el > 2500*time.Millisecond {
				t.Errorf("delayed message received after %v, want about 1 s", el)
			}
			if string(m.Body) != "d" {
				t.Errorf("body %q", m.Body)
			}
		}},
		{"send batch of 25", func(t *testing.T, q *Queue) {
			const n = 25
			bodies := make([][]byte, n)
			for i := range bodies {
				bodies[i] = []byte("body-" + strconv.Itoa(i))
			}
			if err := q.SendBatch(ctx, bodies, 0); err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for tries := 0; len(seen) < n && tries < 20; tries++ {
				ms, err := q.Receive(ctx, queue.MaxBatch, 30*time.Second, time.Second)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range ms {
					if seen[string(m.Body)] {
						t.Errorf("body %q received twice", m.Body)
					}
					seen[string(m.Body)] = true
				}
			}
			for _, b := range bodies {
				if !seen[string(b)] {
					t.Errorf("body %q not received", b)
				}
			}
			if len(seen) != n {
				t.Errorf("received %d distinct bodies, want %d", len(seen), n)
			}
		}},
		{"redrive to the dead-letter queue after 2 receives", func(t *testing.T, q *Queue) {
			// q itself is unused: the queue under test needs a redrive policy.
			dlq := newQueue(t, client, "-dlq", nil)
			arn, err := QueueARN(ctx, client, dlq.URL())
			if err != nil {
				t.Fatal(err)
			}
			src := newQueue(t, client, "-src", map[string]string{
				"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, arn),
			})
			if err := src.Send(ctx, []byte("poison"), 0); err != nil {
				t.Fatal(err)
			}
			// Visibility 0 (emulated by Receive): visible again at once.
			m1 := receiveOne(t, src, 0, time.Second)
			m2 := receiveOne(t, src, 0, time.Second)
			if m1.ReceiveCount != 1 || m2.ReceiveCount != 2 || m2.ID != m1.ID {
				t.Errorf("deliveries %+v, %+v: want counts 1, 2 of one message", m1, m2)
			}
			receiveNone(t, src, 0)
			d := receiveOne(t, dlq, 30*time.Second, time.Second)
			if d.ID != m1.ID || string(d.Body) != "poison" {
				t.Errorf("dead-letter message %+v, want ID %s body poison", d, m1.ID)
			}
			t.Logf("dead-letter delivery ReceiveCount %d", d.ReceiveCount)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(t, newQueue(t, client, "", nil))
		})
	}
}
