package queue

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/urlcheck/urlcheck/pkg/clock"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var _ Queue = (*Mem)(nil)

// newScaled returns a queue on a clock 100 times faster than the wall clock:
// one simulated second lasts 10 ms.
func newScaled(t testing.TB, o MemOptions) (*Mem, *clock.Scaled) {
	t.Helper()
	c := clock.NewScaled(epoch, 100)
	o.Clock = c
	return NewMem(o), c
}

func mustSend(t testing.TB, q *Mem, body string, delay time.Duration) {
	t.Helper()
	if err := q.Send(context.Background(), []byte(body), delay); err != nil {
		t.Fatalf("Send(%q): %v", body, err)
	}
}

func mustReceive(t testing.TB, q *Mem, max int, vis, wait time.Duration) []Message {
	t.Helper()
	ms, err := q.Receive(context.Background(), max, vis, wait)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	if ms == nil {
		t.Fatal("Receive returned a nil slice")
	}
	return ms
}

func bodies(ms []Message) string {
	var s []string
	for _, m := range ms {
		s = append(s, string(m.Body))
	}
	return strings.Join(s, ",")
}

// TestVisibility covers hiding on receive, reappearing after the visibility
// timeout, ChangeVisibility, delays and redelivery counts. Each step runs a
// Receive with the given wait and checks what came back and how much
// simulated time it took.
func TestVisibility(t *testing.T) {
	type step struct {
		send       string        // send this body first (with delay) ...
		delay      time.Duration //
		change     time.Duration // ... or, if >= 0 and a receipt is held, ChangeVisibility(last receipt, change)
		vis, wait  time.Duration // then Receive(10, vis, wait)
		want       string        // bodies received, comma-separated
		wantCount  int           // ReceiveCount of the first message received
		minT, maxT time.Duration // simulated time the Receive took
	}
	const never = -1
	// Bounds leave room for wall-clock stalls on a loaded machine: at 100x,
	// 10 simulated seconds are 100 ms of wall time.
	const quick = 10 * time.Second // an immediate Receive
	tests := []struct {
		name  string
		steps []step
	}{
		{"receive hides, message reappears after visibility", []step{
			{send: "a", change: never, vis: 10 * time.Second, want: "a", wantCount: 1, maxT: quick},
			{change: never, vis: time.Hour, want: "", maxT: quick},
			{change: never, vis: time.Hour, wait: 20 * time.Second, want: "a", wantCount: 2, minT: 5 * time.Second, maxT: 19 * time.Second},
		}},
		{"receive count increments with visibility 0", []step{
			{send: "a", change: never, want: "a", wantCount: 1, maxT: quick},
			{change: never, want: "a", wantCount: 2, maxT: quick},
			{change: never, want: "a", wantCount: 3, maxT: quick},
		}},
		{"ChangeVisibility to 0 makes it visible now", []step{
			{send: "a", change: never, vis: time.Hour, want: "a", wantCount: 1, maxT: quick},
			{change: 0, vis: time.Hour, want: "a", wantCount: 2, maxT: quick},
		}},
		{"ChangeVisibility shortens", []step{
			{send: "a", change: never, vis: time.Hour, want: "a", wantCount: 1, maxT: quick},
			{change: 2 * time.Second, vis: time.Hour, wait: 20 * time.Second, want: "a", wantCount: 2, minT: time.Second, maxT: 19 * time.Second},
		}},
		{"ChangeVisibility extends", []step{
			{send: "a", change: never, vis: time.Second, want: "a", wantCount: 1, maxT: quick},
			{change: time.Hour, vis: time.Hour, wait: 3 * time.Second, want: "", minT: 3 * time.Second, maxT: 60 * time.Second},
		}},
		{"delay hides a new message", []step{
			{send: "a", delay: 3 * time.Second, change: never, vis: time.Hour, want: "", maxT: quick},
			{change: never, vis: time.Hour, wait: 20 * time.Second, want: "a", wantCount: 1, minT: 2 * time.Second, maxT: 19 * time.Second},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, c := newScaled(t, MemOptions{})
			var receipt string
			for i, s := range tc.steps {
				if s.send != "" {
					mustSend(t, q, s.send, s.delay)
				}
				if s.change >= 0 && receipt != "" {
					if err := q.ChangeVisibility(context.Background(), receipt, s.change); err != nil {
						t.Fatalf("step %d: ChangeVisibility: %v", i, err)
					}
				}
				start := c.Now()
				ms := mustReceive(t, q, 10, s.vis, s.wait)
				took := c.Now().Sub(start)
				if got := bodies(ms); got != s.want {
					t.Fatalf("step %d: received %q, want %q", i, got, s.want)
				}
				if took < s.minT || took > s.maxT {
					t.Errorf("step %d: Receive took %v simulated, want %v..%v", i, took, s.minT, s.maxT)
				}
				if len(ms) > 0 {
					if ms[0].ReceiveCount != s.wantCount {
						t.Errorf("step %d: ReceiveCount %d, want %d", i, ms[0].ReceiveCount, s.wantCount)
					}
					if ms[0].Receipt == receipt {
						t.Errorf("step %d: receipt %q reused", i, receipt)
					}
					receipt = ms[0].Receipt
				}
			}
		})
	}
}

func TestStaleReceipts(t *testing.T) {
	ctx := context.Background()
	q, _ := newScaled(t, MemOptions{})
	mustSend(t, q, "a", 0)
	r1 := mustReceive(t, q, 1, 0, 0)[0].Receipt
	r2 := mustReceive(t, q, 1, time.Hour, 0)[0].Receipt
	other, _ := newScaled(t, MemOptions{})

	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"delete with receipt of an earlier receive", func() error { return q.Delete(ctx, r1) }, ErrReceiptInvalid},
		{"change visibility with earlier receipt", func() error { return q.ChangeVisibility(ctx, r1, 0) }, ErrReceiptInvalid},
		{"empty receipt", func() error { return q.Delete(ctx, "") }, ErrReceiptInvalid},
		{"receipt of another queue", func() error { return other.Delete(ctx, r2) }, ErrReceiptInvalid},
		{"current receipt deletes", func() error { return q.Delete(ctx, r2) }, nil},
		{"delete twice", func() error { return q.Delete(ctx, r2) }, ErrReceiptInvalid},
		{"change visibility after delete", func() error { return q.ChangeVisibility(ctx, r2, time.Second) }, ErrReceiptInvalid},
	}
	for _, tc := range tests { // in order: each step depends on the last
		err := tc.op()
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Fatalf("%s: error %v, want %v", tc.name, err, tc.want)
		}
	}
	if v, n := q.Len(); v != 0 || n != 0 {
		t.Errorf("Len after delete = %d, %d; want 0, 0", v, n)
	}
}

func TestInvalidArguments(t *testing.T) {
	ctx := context.Background()
	q, _ := newScaled(t, MemOptions{})
	tests := []struct {
		name string
		op   func() error
		want string
	}{
		{"empty body", func() error { return q.Send(ctx, nil, 0) }, "body of 0 bytes"},
		{"oversized body", func() error { return q.Send(ctx, make([]byte, MaxBodyBytes+1), 0) }, "body of 262145 bytes"},
		{"negative delay", func() error { return q.Send(ctx, []byte("x"), -time.Second) }, "negative delay"},
		{"max 0", func() error { _, err := q.Receive(ctx, 0, 0, 0); return err }, "max 0 messages"},
		{"max 11", func() error { _, err := q.Receive(ctx, 11, 0, 0); return err }, "max 11 messages"},
		{"negative visibility", func() error { _, err := q.Receive(ctx, 1, -1, 0); return err }, "negative visibility"},
		{"negative wait", func() error { _, err := q.Receive(ctx, 1, 0, -1); return err }, "negative wait"},
		{"negative change", func() error { return q.ChangeVisibility(ctx, "r", -1) }, "negative timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op()
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrInvalidArgument mentioning %q", err, tc.want)
			}
		})
	}
	if err := q.Send(ctx, make([]byte, MaxBodyBytes), 0); err != nil {
		t.Errorf("a body of exactly MaxBodyBytes was refused: %v", err)
	}
}

// TestClamps checks that durations beyond SQS's limits are clamped, by
// looking at the visible-at times in the heap.
func TestClamps(t *testing.T) {
	tests := []struct {
		name string
		do   func(q *Mem) error
		want time.Duration // visible-at minus the time of the call
	}{
		{"delay clamped to 15 min", func(q *Mem) error { return q.Send(context.Background(), []byte("x"), 2*time.Hour) }, MaxDelay},
		{"visibility clamped to 12 h", func(q *Mem) error {
			mustSend(t, q, "x", 0)
			_, err := q.Receive(context.Background(), 1, 48*time.Hour, 0)
			return err
		}, MaxVisibility},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := clock.NewManual(epoch)
			q := NewMem(MemOptions{Clock: m})
			if err := tc.do(q); err != nil {
				t.Fatal(err)
			}
			if got := q.heap[0].visAt; got != tc.want {
				t.Errorf("visible after %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRedriveToDeadLetter(t *testing.T) {
	dlq, _ := newScaled(t, MemOptions{})
	q, _ := newScaled(t, MemOptions{MaxReceives: 2, DeadLetter: dlq})
	mustSend(t, q, "poison", 0)
	mustSend(t, q, "good", time.Hour)
	for i := 1; i <= 2; i++ {
		ms := mustReceive(t, q, 10, 0, 0)
		if bodies(ms) != "poison" || ms[0].ReceiveCount != i {
			t.Fatalf("receive %d: got %q count %d", i, bodies(ms), ms[0].ReceiveCount)
		}
	}
	if ms := mustReceive(t, q, 10, 0, 0); len(ms) != 0 {
		t.Fatalf("third receive delivered %q, want the message moved to the DLQ", bodies(ms))
	}
	if v, n := q.Len(); v != 0 || n != 1 {
		t.Errorf("source Len = %d, %d; want 0 visible, 1 delayed", v, n)
	}
	dead := dlq.Messages()
	if len(dead) != 1 || string(dead[0].Body) != "poison" || dead[0].ReceiveCount != 2 || dead[0].Receipt != "" {
		t.Fatalf("DLQ holds %+v, want poison with ReceiveCount 2 and no receipt", dead)
	}
	if v, n := dlq.Len(); v != 1 || n != 0 {
		t.Errorf("DLQ Len = %d, %d; want 1, 0", v, n)
	}
	got := mustReceive(t, dlq, 1, time.Hour, 0)
	if len(got) != 1 || got[0].ID != dead[0].ID {
		t.Fatalf("DLQ receive = %+v, want message %s", got, dead[0].ID)
	}
	if err := dlq.Delete(context.Background(), got[0].Receipt); err != nil {
		t.Fatal(err)
	}
}

func TestRedriveIgnoredWithoutDeadLetter(t *testing.T) {
	q, _ := newScaled(t, MemOptions{MaxReceives: 1})
	mustSend(t, q, "a", 0)
	for i := 1; i <= 3; i++ {
		if ms := mustReceive(t, q, 1, 0, 0); len(ms) != 1 || ms[0].ReceiveCount != i {
			t.Fatalf("receive %d: %+v", i, ms)
		}
	}
}

// TestLongPoll covers the waiting receiver: woken by a Send, by a visibility
// timeout running out (by timer, without spinning), timing out empty, and
// cancelled through its context.
func TestLongPoll(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(q *Mem)                                     // before the Receive starts
		during     func(ctx context.Context, q *Mem, c clock.Clock) // concurrently with it
		cancel     bool                                             // cancel the context after `during`
		wait       time.Duration
		want       string
		wantErr    error
		minT, maxT time.Duration
		maxWaits   int64
	}{
		{
			name: "returns when a message is sent meanwhile",
			during: func(ctx context.Context, q *Mem, c clock.Clock) {
				untilWaiting(t, q, 0)
				_ = q.Send(ctx, []byte("late"), 0)
			},
			wait: 20 * time.Second, want: "late", maxT: 19 * time.Second, maxWaits: 2,
		},
		{
			name: "wakes when visibility runs out, by timer",
			setup: func(q *Mem) {
				mustSend(t, q, "a", 0)
				mustReceive(t, q, 1, 2*time.Second, 0)
			},
			wait: 20 * time.Second, want: "a", minT: time.Second, maxT: 19 * time.Second, maxWaits: 3,
		},
		{
			name: "a delayed send during the poll wakes it at the right time",
			during: func(ctx context.Context, q *Mem, c clock.Clock) {
				untilWaiting(t, q, 0)
				_ = q.Send(ctx, []byte("d"), 3*time.Second)
			},
			wait: 20 * time.Second, want: "d", minT: 2 * time.Second, maxT: 19 * time.Second, maxWaits: 4,
		},
		{
			name: "empty after the wait",
			wait: 2 * time.Second, want: "", minT: 2 * time.Second, maxT: 60 * time.Second, maxWaits: 3,
		},
		{
			name:   "cancelled context",
			during: func(ctx context.Context, q *Mem, c clock.Clock) { untilWaiting(t, q, 0) },
			cancel: true, wait: 20 * time.Second, wantErr: context.Canceled, maxT: 19 * time.Second, maxWaits: 3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, c := newScaled(t, MemOptions{})
			if tc.setup != nil {
				tc.setup(q)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				if tc.during != nil {
					tc.during(context.Background(), q, c)
				}
				if tc.cancel {
					cancel()
				}
			}()
			start := c.Now()
			ms, err := q.Receive(ctx, 10, time.Hour, tc.wait)
			took := c.Now().Sub(start)
			<-done
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Receive error %v, want %v", err, tc.wantErr)
			}
			if got := bodies(ms); got != tc.want {
				t.Errorf("received %q, want %q", got, tc.want)
			}
			if took < tc.minT || took > tc.maxT {
				t.Errorf("took %v simulated, want %v..%v", took, tc.minT, tc.maxT)
			}
			if w := q.waits.Load(); w > tc.maxWaits {
				t.Errorf("receiver slept %d times, want <= %d (spinning?)", w, tc.maxWaits)
			}
		})
	}
}

// TestWakeExactlyManual checks, on a manual clock and so independently of
// machine load, that a waiting receiver wakes exactly when a message becomes
// visible: not before, and without waiting for the end of its poll.
func TestWakeExactlyManual(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(q *Mem) (receipt string)
		during   func(q *Mem, receipt string) // once the receiver sleeps
		early    time.Duration
		late     time.Duration // advanced after early; the message is visible then
		want     string
		maxWaits int64
	}{
		{
			name: "visibility timeout runs out",
			setup: func(q *Mem) string {
				mustSend(t, q, "a", 0)
				return mustReceive(t, q, 1, 5*time.Second, 0)[0].Receipt
			},
			early: 4 * time.Second, late: time.Second, want: "a", maxWaits: 1,
		},
		{
			name:   "delayed send made during the poll",
			during: func(q *Mem, _ string) { mustSend(t, q, "d", 3*time.Second) },
			early:  2 * time.Second, late: time.Second, want: "d", maxWaits: 2,
		},
		{
			name: "visibility shortened during the poll",
			setup: func(q *Mem) string {
				mustSend(t, q, "c", 0)
				return mustReceive(t, q, 1, time.Hour, 0)[0].Receipt
			},
			during: func(q *Mem, receipt string) {
				if err := q.ChangeVisibility(context.Background(), receipt, 7*time.Second); err != nil {
					t.Error(err)
				}
			},
			early: 6 * time.Second, late: time.Second, want: "c", maxWaits: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := clock.NewManual(epoch)
			q := NewMem(MemOptions{Clock: m})
			var receipt string
			if tc.setup != nil {
				receipt = tc.setup(q)
			}
			res := make(chan []Message, 1)
			go func() {
				ms, err := q.Receive(context.Background(), 10, time.Hour, 20*time.Second)
				if err != nil {
					t.Error(err)
				}
				res <- ms
			}()
			untilWaiting(t, q, 0)
			if tc.during != nil {
				before := q.waits.Load()
				tc.during(q, receipt)
				untilWaiting(t, q, before) // the receiver re-arms its timer
			}
			m.Advance(tc.early)
			select {
			case ms := <-res:
				t.Fatalf("receiver returned %q before the message was visible", bodies(ms))
			default:
			}
			m.Advance(tc.late)
			select {
			case ms := <-res:
				if got := bodies(ms); got != tc.want {
					t.Errorf("received %q, want %q", got, tc.want)
				}
			case <-time.After(10 * time.Second): // failure guard only
				t.Fatal("receiver did not wake when the message became visible")
			}
			if w := q.waits.Load(); w > tc.maxWaits {
				t.Errorf("receiver slept %d times, want <= %d", w, tc.maxWaits)
			}
		})
	}
}

// untilWaiting returns once receivers of q have gone to sleep more than
// before times, so that what the caller does next happens during a long
// poll. It reports an error (never sleeping) if that takes 10 s of wall time.
func untilWaiting(t testing.TB, q *Mem, before int64) {
	guard := time.Now().Add(10 * time.Second) // failure guard only
	for q.waits.Load() <= before {
		if time.Now().After(guard) {
			t.Errorf("no receiver went to sleep (waits %d)", before)
			return
		}
		runtime.Gosched()
	}
}

func TestReceiveMaxInSendOrder(t *testing.T) {
	q, _ := newScaled(t, MemOptions{})
	for i := 0; i < 15; i++ {
		mustSend(t, q, fmt.Sprint(i), 0)
	}
	tests := []struct {
		max  int
		want string
	}{
		{10, "0,1,2,3,4,5,6,7,8,9"},
		{3, "10,11,12"},
		{10, "13,14"},
		{10, ""},
	}
	for _, tc := range tests {
		if got := bodies(mustReceive(t, q, tc.max, time.Hour, 0)); got != tc.want {
			t.Fatalf("Receive(max %d) = %q, want %q", tc.max, got, tc.want)
		}
	}
}

func TestLenAndMessages(t *testing.T) {
	q, _ := newScaled(t, MemOptions{})
	for i := 0; i < 50; i++ {
		delay := time.Duration(0)
		if i%5 == 0 {
			delay = time.Hour
		}
		mustSend(t, q, fmt.Sprint(i), delay)
	}
	mustReceive(t, q, 10, time.Hour, 0) // 10 in flight
	if v, n := q.Len(); v != 30 || n != 20 {
		t.Errorf("Len = %d, %d; want 30 visible, 20 delayed or in flight", v, n)
	}
	ms := q.Messages()
	if len(ms) != 50 {
		t.Fatalf("Messages returned %d, want 50", len(ms))
	}
	received := 0
	for i, m := range ms {
		if string(m.Body) != fmt.Sprint(i) {
			t.Fatalf("Messages()[%d] = %q, want send order", i, m.Body)
		}
		if m.ReceiveCount > 0 {
			received++
		}
	}
	if received != 10 {
		t.Errorf("%d messages show a receive, want 10", received)
	}
	ms[0].Body[0] = 'X' // the snapshot is a copy
	if got := q.Messages()[0].Body[0]; got == 'X' {
		t.Error("Messages shares bodies with the queue")
	}
}

// TestConcurrentExactlyOnce: with a visibility timeout longer than the test,
// 32 receivers that delete what they get must see every one of 10,000
// messages exactly once.
func TestConcurrentExactlyOnce(t *testing.T) {
	const n, receivers = 10_000, 32
	q, _ := newScaled(t, MemOptions{})
	ctx := context.Background()
	go func() {
		for i := 0; i < n; i++ {
			if err := q.Send(ctx, []byte(fmt.Sprint(i)), 0); err != nil {
				panic(err)
			}
		}
	}()
	var (
		mu      sync.Mutex
		seen    = make(map[string]int, n)
		deleted atomic.Int64
		wg      sync.WaitGroup
		errs    = make(chan error, receivers)
	)
	for r := 0; r < receivers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for deleted.Load() < n {
				ms, err := q.Receive(ctx, 10, time.Hour, 100*time.Millisecond)
				if err != nil {
					errs <- err
					return
				}
				for _, m := range ms {
					mu.Lock()
					seen[string(m.Body)]++
					mu.Unlock()
					if err := q.Delete(ctx, m.Receipt); err != nil {
						errs <- err
						return
					}
					deleted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Fatalf("%d distinct messages delivered, want %d", len(seen), n)
	}
	for body, k := range seen {
		if k != 1 {
			t.Fatalf("message %s delivered %d times", body, k)
		}
	}
	if v, f := q.Len(); v != 0 || f != 0 {
		t.Errorf("Len after all deletes = %d, %d", v, f)
	}
}

// TestConcurrentAtLeastOnce: with a visibility timeout shorter than the work,
// messages are redelivered and some deletes find stale receipts, but every
// message is eventually deleted and the queue ends empty.
func TestConcurrentAtLeastOnce(t *testing.T) {
	const n, receivers = 500, 8
	q, c := newScaled(t, MemOptions{})
	ctx := context.Background()
	for i := 0; i < n; i++ {
		mustSend(t, q, fmt.Sprint(i), 0)
	}
	var (
		mu      sync.Mutex
		done    = make(map[string]bool, n)
		wg      sync.WaitGroup
		errs    = make(chan error, receivers)
		pending atomic.Int64
	)
	pending.Store(n)
	for r := 0; r < receivers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pending.Load() > 0 {
				ms, err := q.Receive(ctx, 10, 50*time.Millisecond, 100*time.Millisecond)
				if err != nil {
					errs <- err
					return
				}
				for i, m := range ms {
					if i%3 == 2 {
						_ = c.Sleep(ctx, 100*time.Millisecond) // slow work: receipt may go stale
					}
					if i%4 == 1 {
						if err := q.ChangeVisibility(ctx, m.Receipt, 0); err != nil && !errors.Is(err, ErrReceiptInvalid) {
							errs <- err
							return
						}
						continue
					}
					err := q.Delete(ctx, m.Receipt)
					if err != nil && !errors.Is(err, ErrReceiptInvalid) {
						errs <- err
						return
					}
					if err == nil {
						mu.Lock()
						if done[string(m.Body)] {
							errs <- fmt.Errorf("message %s deleted twice", m.Body)
						}
						done[string(m.Body)] = true
						mu.Unlock()
						pending.Add(-1)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if v, f := q.Len(); v != 0 || f != 0 || len(done) != n {
		t.Errorf("after draining: Len %d, %d; %d deleted of %d", v, f, len(done), n)
	}
}

func BenchmarkSendReceiveDelete(b *testing.B) {
	q := NewMem(MemOptions{})
	ctx := context.Background()
	body := []byte(`{"j":"job","d":"example.com","i":[{"u":"https://example.com/","l":[1]}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := q.Send(ctx, body, 0); err != nil {
			b.Fatal(err)
		}
		ms, err := q.Receive(ctx, 1, time.Minute, 0)
		if err != nil || len(ms) != 1 {
			b.Fatal(err, len(ms))
		}
		if err := q.Delete(ctx, ms[0].Receipt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDrain100k64 drains 100,000 queued messages with 64 concurrent
// receivers taking 10 at a time; ns/op is per message.
func BenchmarkDrain100k64(b *testing.B) {
	const n, receivers = 100_000, 64
	ctx := context.Background()
	body := []byte("x")
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		q := NewMem(MemOptions{})
		for i := 0; i < n; i++ {
			_ = q.Send(ctx, body, 0)
		}
		var left atomic.Int64
		left.Store(n)
		var wg sync.WaitGroup
		b.StartTimer()
		for r := 0; r < receivers; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for left.Load() > 0 {
					ms, err := q.Receive(ctx, 10, time.Hour, 0)
					if err != nil {
						panic(err)
					}
					for _, m := range ms {
						if err := q.Delete(ctx, m.Receipt); err != nil {
							panic(err)
						}
						left.Add(-1)
					}
				}
			}()
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
}
