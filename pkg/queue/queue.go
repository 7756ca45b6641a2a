package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/urlcheck/urlcheck/pkg/clock"
)

// Limits of an Amazon SQS standard queue (Amazon SQS Developer Guide, "Amazon
// SQS message quotas" and the SendMessage / ReceiveMessage /
// ChangeMessageVisibility API reference). Mem clamps durations above them and
// rejects counts and sizes outside them.
const (
	// MaxDelay is the longest send delay (DelaySeconds 0..900): 15 minutes.
	MaxDelay = 15 * time.Minute
	// MaxVisibility is the longest visibility timeout (VisibilityTimeout
	// 0..43200 seconds): 12 hours.
	MaxVisibility = 12 * time.Hour
	// MaxWait is the longest long poll (WaitTimeSeconds 0..20): 20 seconds.
	MaxWait = 20 * time.Second
	// MaxBatch is the most messages one receive returns
	// (MaxNumberOfMessages 1..10).
	MaxBatch = 10
	// MaxBodyBytes is the largest message body in bytes: 256 KiB = 262,144.
	MaxBodyBytes = 256 * 1024
)

// ErrReceiptInvalid is returned (wrapped) by Delete and ChangeVisibility when
// the receipt handle is empty, unknown, or stale: its message has been
// received again since or deleted. It corresponds to SQS's
// ReceiptHandleIsInvalid error.
var ErrReceiptInvalid = errors.New("receipt handle is invalid")

// ErrInvalidArgument is returned (wrapped, with the offending value) for a
// receive count outside 1..MaxBatch, a negative duration, or a body that is
// empty or longer than MaxBodyBytes.
var ErrInvalidArgument = errors.New("invalid argument")

// Message is one delivery of a queued message.
type Message struct {
	// ID identifies the message; it stays the same across deliveries and
	// when the message moves to a dead-letter queue.
	ID string
	// Body is the message body, 1 to MaxBodyBytes bytes. It is the caller's
	// own copy.
	Body []byte
	// Receipt is the receipt handle of this delivery, needed to Delete or
	// ChangeVisibility; each receive makes a new one and voids the last.
	// Empty in a Mem.Messages snapshot of a never-received message.
	Receipt string
	// ReceiveCount is SQS's ApproximateReceiveCount: how many times the
	// message has been received, this delivery included.
	ReceiveCount int
	// SentAt is when the message was sent (SQS SentTimestamp), by the
	// queue's clock; a send delay does not change it.
	SentAt time.Time
}

// Queue is a message queue with the semantics of an Amazon SQS standard
// queue: at-least-once delivery, roughly first-in first-out, messages hidden
// for a visibility timeout while being worked on. Mem implements it in
// memory; an SQS adapter implements it for production. All methods are safe
// for concurrent use and return ctx's error (wrapped) once ctx is done.
type Queue interface {
	// Send enqueues body (1 to MaxBodyBytes bytes). The message stays
	// invisible for delay (SQS DelaySeconds); a delay above MaxDelay (15
	// minutes) is clamped to it. It returns ErrInvalidArgument for an empty
	// or oversized body or a negative delay.
	Send(ctx context.Context, body []byte, delay time.Duration) error
	// Receive returns up to max (1..MaxBatch) visible messages and hides
	// them for visibility (clamped to MaxVisibility; 0 leaves them visible,
	// as SQS's VisibilityTimeout=0). When none is visible it long-polls: it
	// waits up to wait (clamped to MaxWait) for one to become visible and
	// returns an empty, non-nil slice and nil error if none does. It returns
	// ErrInvalidArgument for max out of range or a negative duration.
	Receive(ctx context.Context, max int, visibility, wait time.Duration) ([]Message, error)
	// Delete removes the message received with receipt. It returns
	// ErrReceiptInvalid if the receipt is stale (the message was received
	// again since, or deleted) or unknown.
	Delete(ctx context.Context, receipt string) error
	// ChangeVisibility makes the message received with receipt visible
	// again timeout from now (0: at once), shortening or extending its
	// current visibility; timeout is clamped to MaxVisibility. It returns
	// ErrReceiptInvalid as Delete does and ErrInvalidArgument for a negative
	// timeout.
	ChangeVisibility(ctx context.Context, receipt string, timeout time.Duration) error
}

// MemOptions configures a Mem.
type MemOptions struct {
	// Clock supplies the time for delays, visibility timeouts and long
	// polls; nil means clock.Real{}.
	Clock clock.Clock
	// MaxReceives, when > 0 and DeadLetter is set, is SQS's redrive policy
	// maxReceiveCount: a message already received MaxReceives times is moved
	// to DeadLetter instead of being delivered again. Ignored when
	// DeadLetter is nil (messages are never dropped).
	MaxReceives int
	// DeadLetter receives the messages moved by the redrive policy, with
	// their ID, body, SentAt and ReceiveCount kept; they are visible there
	// at once.
	DeadLetter *Mem
}

// Mem is an in-memory Queue. Create it with NewMem; do not copy it.
//
// Every message, visible or not, sits in one min-heap keyed by the time it
// becomes visible; receipts of in-flight messages are in a map. Send,
// Receive (per message), Delete and ChangeVisibility cost O(log n). A
// receiver with nothing to take waits on a broadcast channel, closed by
// every Send and ChangeVisibility, and on a clock timer set for the earliest
// time a message becomes visible or its poll ends, so it never spins.
type Mem struct {
	clock       clock.Clock
	base        time.Time // visible-at times are offsets from base
	maxReceives int
	dlq         *Mem

	mu       sync.Mutex
	heap     []*msg
	receipts map[string]*msg
	wake     chan struct{} // closed and cleared to wake waiting receivers; nil when none waits

	waits atomic.Int64 // times a receiver went to sleep; read by tests
}

type msg struct {
	id      string
	seq     uint64 // send order, breaks ties between equal visible-at
	body    []byte
	sentAt  time.Time
	visAt   time.Duration // visible from base+visAt
	receipt string        // current receipt handle, "" before the first receive
	count   int
	idx     int // position in Mem.heap
}

// seq numbers message IDs and receipt handles process-wide, so that neither
// repeats across queues (a receipt from one Mem is invalid on another).
var seq atomic.Uint64

// NewMem returns an empty in-memory queue configured by o.
func NewMem(o MemOptions) *Mem {
	c := o.Clock
	if c == nil {
		c = clock.Real{}
	}
	return &Mem{
		clock:       c,
		base:        c.Now(),
		maxReceives: o.MaxReceives,
		dlq:         o.DeadLetter,
		receipts:    make(map[string]*msg),
	}
}

func clampDur(d, max time.Duration) time.Duration { return min(d, max) }

// Send implements Queue.Send: body (1..MaxBodyBytes bytes, copied) becomes
// visible after delay (clamped to MaxDelay) by q's clock. Errors wrap
// ErrInvalidArgument or ctx.Err().
func (q *Mem) Send(ctx context.Context, body []byte, delay time.Duration) error {
	if len(body) == 0 || len(body) > MaxBodyBytes {
		return fmt.Errorf("queue: send: body of %d bytes, want 1..%d: %w", len(body), MaxBodyBytes, ErrInvalidArgument)
	}
	if delay < 0 {
		return fmt.Errorf("queue: send: negative delay %v: %w", delay, ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("queue: send: %w", err)
	}
	delay = clampDur(delay, MaxDelay)
	n := seq.Add(1)
	m := &msg{id: "m" + strconv.FormatUint(n, 10), seq: n, body: slices.Clone(body)}
	q.mu.Lock()
	now := q.clock.Now()
	m.sentAt = now
	m.visAt = now.Sub(q.base) + delay
	q.push(m)
	q.signal()
	q.mu.Unlock()
	return nil
}

// Receive implements Queue.Receive: up to max (1..MaxBatch) messages, hidden
// for visibility (clamped to MaxVisibility), waiting up to wait (clamped to
// MaxWait) of q's clock time when none is visible. Messages due for the
// dead-letter queue are moved there instead of returned. Errors wrap
// ErrInvalidArgument or ctx.Err().
func (q *Mem) Receive(ctx context.Context, max int, visibility, wait time.Duration) ([]Message, error) {
	if max < 1 || max > MaxBatch {
		return nil, fmt.Errorf("queue: receive: max %d messages, want 1..%d: %w", max, MaxBatch, ErrInvalidArgument)
	}
	if visibility < 0 {
		return nil, fmt.Errorf("queue: receive: negative visibility timeout %v: %w", visibility, ErrInvalidArgument)
	}
	if wait < 0 {
		return nil, fmt.Errorf("queue: receive: negative wait %v: %w", wait, ErrInvalidArgument)
	}
	visibility = clampDur(visibility, MaxVisibility)
	wait = clampDur(wait, MaxWait)
	var deadline time.Duration
	for first := true; ; first = false {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("queue: receive: %w", err)
		}
		q.mu.Lock()
		now := q.clock.Now().Sub(q.base)
		if first {
			deadline = now + wait
		}
		out, dead := q.take(now, max, visibility)
		if len(out) > 0 || now >= deadline {
			q.mu.Unlock()
			q.redrive(dead)
			if out == nil {
				out = []Message{}
			}
			return out, nil
		}
		next := deadline
		if len(q.heap) > 0 {
			next = min(next, q.heap[0].visAt)
		}
		if q.wake == nil {
			q.wake = make(chan struct{})
		}
		wake := q.wake
		q.mu.Unlock()
		q.redrive(dead)

		t := q.clock.NewTimer(next - now)
		q.waits.Add(1) // after NewTimer: a test that sees it may move a manual clock
		select {
		case <-ctx.Done():
		case <-wake:
		case <-t.C():
		}
		t.Stop()
	}
}

// take pops up to max visible messages, hides them until now+visibility and
// returns their deliveries, plus the messages due for the dead-letter queue.
// q.mu must be held.
func (q *Mem) take(now time.Duration, max int, visibility time.Duration) (out []Message, dead []*msg) {
	var taken [MaxBatch]*msg
	n := 0
	for n < max && len(q.heap) > 0 && q.heap[0].visAt <= now {
		m := q.pop()
		if m.receipt != "" {
			delete(q.receipts, m.receipt)
		}
		if q.dlq != nil && q.maxReceives > 0 && m.count >= q.maxReceives {
			dead = append(dead, m)
			continue
		}
		m.count++
		m.receipt = m.id + "." + strconv.FormatUint(seq.Add(1), 36)
		m.visAt = now + visibility
		q.receipts[m.receipt] = m
		taken[n] = m
		n++
	}
	if n > 0 {
		out = make([]Message, n)
		for i, m := range taken[:n] {
			out[i] = m.message()
			q.push(m) // after the loop, so that visibility 0 cannot deliver m twice
		}
	}
	return out, dead
}

func (m *msg) message() Message {
	return Message{ID: m.id, Body: slices.Clone(m.body), Receipt: m.receipt, ReceiveCount: m.count, SentAt: m.sentAt}
}

// redrive moves dead messages to the dead-letter queue. It runs without q.mu
// held, so that no two queues' locks are ever held together.
func (q *Mem) redrive(dead []*msg) {
	if len(dead) == 0 {
		return
	}
	d := q.dlq
	d.mu.Lock()
	now := d.clock.Now().Sub(d.base)
	for _, m := range dead {
		m.receipt = ""
		m.visAt = now
		d.push(m)
	}
	d.signal()
	d.mu.Unlock()
}

// signal wakes every waiting receiver. q.mu must be held.
func (q *Mem) signal() {
	if q.wake != nil {
		close(q.wake)
		q.wake = nil
	}
}

// Delete implements Queue.Delete. It returns an error wrapping
// ErrReceiptInvalid for an empty, unknown or stale receipt, or ctx.Err().
func (q *Mem) Delete(ctx context.Context, receipt string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("queue: delete: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	m, ok := q.receipts[receipt]
	if !ok {
		return fmt.Errorf("queue: delete: receipt %q: %w", receipt, ErrReceiptInvalid)
	}
	delete(q.receipts, receipt)
	q.remove(m.idx)
	return nil
}

// ChangeVisibility implements Queue.ChangeVisibility: the message becomes
// visible timeout (clamped to MaxVisibility) after now. As long as the receipt
// is current it works even after the visibility timeout has run out, hiding
// the message again. Errors wrap ErrReceiptInvalid, ErrInvalidArgument or
// ctx.Err().
func (q *Mem) ChangeVisibility(ctx context.Context, receipt string, timeout time.Duration) error {
	if timeout < 0 {
		return fmt.Errorf("queue: change visibility: negative timeout %v: %w", timeout, ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("queue: change visibility: %w", err)
	}
	timeout = clampDur(timeout, MaxVisibility)
	q.mu.Lock()
	defer q.mu.Unlock()
	m, ok := q.receipts[receipt]
	if !ok {
		return fmt.Errorf("queue: change visibility: receipt %q: %w", receipt, ErrReceiptInvalid)
	}
	m.visAt = q.clock.Now().Sub(q.base) + timeout
	q.fix(m.idx)
	q.signal()
	return nil
}

// Len returns the number of messages visible now (SQS
// ApproximateNumberOfMessages) and of those delayed or in flight
// (ApproximateNumberOfMessagesDelayed + ApproximateNumberOfMessagesNotVisible).
// It costs O(visible). Messages being moved to a dead-letter queue by a
// concurrent Receive may briefly be counted in neither queue.
func (q *Mem) Len() (visible, delayedOrInFlight int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now().Sub(q.base)
	// Heap order: a node that is not visible has no visible descendant.
	stack := []int{0}
	for len(stack) > 0 && len(q.heap) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(q.heap) || q.heap[i].visAt > now {
			continue
		}
		visible++
		stack = append(stack, 2*i+1, 2*i+2)
	}
	return visible, len(q.heap) - visible
}

// Messages returns a snapshot of every message in the queue, visible or not,
// in send order. Receipt and ReceiveCount are those of the latest delivery
// (empty and 0 if never received); bodies are copies. Meant for inspecting a
// dead-letter queue in tests.
func (q *Mem) Messages() []Message {
	q.mu.Lock()
	ms := slices.Clone(q.heap)
	slices.SortFunc(ms, func(a, b *msg) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]Message, len(ms))
	for i, m := range ms {
		out[i] = m.message()
	}
	q.mu.Unlock()
	return out
}
