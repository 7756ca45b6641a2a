package backoff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// constRnd returns a random source that always yields v.
func constRnd(v float64) func() float64 { return func() float64 { return v } }

func TestDefaultPolicy(t *testing.T) {
	p := DefaultPolicy()
	want := Policy{Base: time.Second, Cap: 60 * time.Second, MaxAttempts: 5, MaxRetryAfter: 10 * time.Minute}
	if p != want {
		t.Errorf("DefaultPolicy() = %+v; want %+v", p, want)
	}
	// A zero Policy behaves like DefaultPolicy.
	for retry := 1; retry <= 8; retry++ {
		if z, d := (Policy{}).Ceiling(retry), p.Ceiling(retry); z != d {
			t.Errorf("Policy{}.Ceiling(%d) = %v; DefaultPolicy gives %v", retry, z, d)
		}
	}
	if _, _, giveUp := (Policy{}).Next(5, "", now, constRnd(0)); !giveUp {
		t.Error("Policy{}.Next(5) did not give up; default MaxAttempts is 5")
	}
}

func TestCeiling(t *testing.T) {
	tests := []struct {
		name  string
		p     Policy
		retry int
		want  time.Duration
	}{
		{"first retry is Base", DefaultPolicy(), 1, 1 * time.Second},
		{"doubles", DefaultPolicy(), 2, 2 * time.Second},
		{"doubles again", DefaultPolicy(), 3, 4 * time.Second},
		{"6th retry", DefaultPolicy(), 6, 32 * time.Second},
		{"7th retry capped", DefaultPolicy(), 7, 60 * time.Second},
		{"huge retry capped without overflow", DefaultPolicy(), 1000, 60 * time.Second},
		{"retry 63 capped", DefaultPolicy(), 63, 60 * time.Second},
		{"max int retry capped", DefaultPolicy(), math.MaxInt, 60 * time.Second},
		{"retry 0 treated as 1", DefaultPolicy(), 0, 1 * time.Second},
		{"negative retry treated as 1", DefaultPolicy(), -3, 1 * time.Second},
		{"Cap below Base", Policy{Base: 5 * time.Second, Cap: 2 * time.Second}, 1, 2 * time.Second},
		{"1ns base, large cap", Policy{Base: 1, Cap: math.MaxInt64}, 63, 1 << 62},
		{"1ns base, max cap, retry 64", Policy{Base: 1, Cap: math.MaxInt64}, 64, math.MaxInt64},
		{"custom", Policy{Base: 100 * time.Millisecond, Cap: 1 * time.Second}, 4, 800 * time.Millisecond},
		{"custom capped", Policy{Base: 100 * time.Millisecond, Cap: 1 * time.Second}, 5, 1 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Ceiling(tt.retry); got != tt.want {
				t.Errorf("%+v.Ceiling(%d) = %v; want %v", tt.p, tt.retry, got, tt.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	p := DefaultPolicy()
	almostOne := math.Nextafter(1, 0)
	tests := []struct {
		name  string
		retry int
		rnd   float64
		want  time.Duration
	}{
		{"rnd 0 gives 0", 1, 0, 0},
		{"rnd 0 gives 0 at cap", 10, 0, 0},
		{"rnd 0.5 first retry", 1, 0.5, 500 * time.Millisecond},
		{"rnd 0.5 second retry", 2, 0.5, 1 * time.Second},
		{"rnd 0.5 third retry", 3, 0.5, 2 * time.Second},
		{"rnd 0.5 capped", 9, 0.5, 30 * time.Second},
		{"rnd 0.25 fourth retry", 4, 0.25, 2 * time.Second},
		{"rnd almost 1 stays below ceiling", 1, almostOne, time.Second - 1},
		{"rnd almost 1 stays below cap", 50, almostOne, 60*time.Second - 1},
		{"rnd 0.999 first retry", 1, 0.999, 999 * time.Millisecond},
		{"rnd 1 (out of contract) below ceiling", 2, 1, 2*time.Second - 1},
		{"rnd 7 (out of contract) below ceiling", 2, 7, 2*time.Second - 1},
		{"rnd +Inf below ceiling", 2, math.Inf(1), 2*time.Second - 1},
		{"rnd negative gives 0", 2, -0.5, 0},
		{"rnd NaN gives 0", 2, math.NaN(), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Backoff(tt.retry, constRnd(tt.rnd)); got != tt.want {
				t.Errorf("Backoff(%d, %v) = %v; want %v", tt.retry, tt.rnd, got, tt.want)
			}
		})
	}
}

// TestBackoffBoundsAndGrowth checks, for deterministic sources, that every
// delay is in [0, ceiling) and that delays never shrink as retries grow.
func TestBackoffBoundsAndGrowth(t *testing.T) {
	policies := []Policy{
		DefaultPolicy(),
		{Base: 10 * time.Millisecond, Cap: 3 * time.Second},
		{Base: 1, Cap: math.MaxInt64},
	}
	for _, p := range policies {
		for _, r := range []float64{0, 0.1, 0.5, 0.999, math.Nextafter(1, 0)} {
			prev := time.Duration(-1)
			for retry := 1; retry <= 70; retry++ {
				d := p.Backoff(retry, constRnd(r))
				c := p.Ceiling(retry)
				if d < 0 || d >= c {
					t.Fatalf("%+v.Backoff(%d, %v) = %v; outside [0, %v)", p, retry, r, d, c)
				}
				if d < prev {
					t.Fatalf("%+v.Backoff(%d, %v) = %v < %v at retry %d", p, retry, r, d, prev, retry-1)
				}
				prev = d
			}
		}
	}
}

// TestBackoffDistribution draws many delays from a seeded source and checks
// that they are spread uniformly over [0, ceiling): mean near ceiling/2 and
// about a quarter of draws in each quarter of the range.
func TestBackoffDistribution(t *testing.T) {
	p := DefaultPolicy()
	const n = 200_000
	for _, retry := range []int{1, 3, 8} {
		src := rand.New(rand.NewPCG(1, uint64(retry)))
		ceiling := p.Ceiling(retry)
		var sum float64
		var quarters [4]int
		for range n {
			d := p.Backoff(retry, src.Float64)
			if d < 0 || d >= ceiling {
				t.Fatalf("Backoff(%d) = %v; outside [0, %v)", retry, d, ceiling)
			}
			sum += float64(d)
			quarters[int(4*float64(d)/float64(ceiling))]++
		}
		// The standard error of the mean is ceiling/sqrt(12n), about 0.065 %
		// of the ceiling; 1 % is over 15 standard errors.
		mean := sum / n
		if half := float64(ceiling) / 2; math.Abs(mean-half) > 0.01*float64(ceiling) {
			t.Errorf("retry %d: mean %v; want about %v", retry, time.Duration(mean), time.Duration(half))
		}
		for i, q := range quarters {
			if frac := float64(q) / n; math.Abs(frac-0.25) > 0.01 {
				t.Errorf("retry %d: quarter %d holds %.4f of draws; want about 0.25", retry, i, frac)
			}
		}
	}
}

func TestBackoffNilRnd(t *testing.T) {
	p := DefaultPolicy()
	for retry := 1; retry <= 10; retry++ {
		if d, c := p.Backoff(retry, nil), p.Ceiling(retry); d < 0 || d >= c {
			t.Errorf("Backoff(%d, nil) = %v; outside [0, %v)", retry, d, c)
		}
	}
}

func TestNext(t *testing.T) {
	p := Policy{Base: time.Second, Cap: 60 * time.Second, MaxAttempts: 4, MaxRetryAfter: 2 * time.Minute}
	tests := []struct {
		name       string
		retry      int
		retryAfter string
		want       time.Duration
		wantSource string
		wantGiveUp bool
		wantRnd    bool // whether rnd must have been called
	}{
		{"no Retry-After uses backoff", 1, "", 500 * time.Millisecond, SourceBackoff, false, true},
		{"backoff grows", 3, "", 2 * time.Second, SourceBackoff, false, true},
		{"Retry-After seconds wins", 1, "7", 7 * time.Second, SourceRetryAfter, false, false},
		{"Retry-After wins even when shorter", 3, "1", time.Second, SourceRetryAfter, false, false},
		{"Retry-After 0 wins", 2, "0", 0, SourceRetryAfter, false, false},
		{"Retry-After date wins", 1, "Sun, 01 Jun 2025 12:00:45 GMT", 45 * time.Second, SourceRetryAfter, false, false},
		{"Retry-After past date gives 0", 1, "Sun, 01 Jun 2025 11:00:45 GMT", 0, SourceRetryAfter, false, false},
		{"Retry-After clamped to MaxRetryAfter", 1, "100000", 2 * time.Minute, SourceRetryAfter, false, false},
		{"malformed Retry-After falls back", 2, "soon", time.Second, SourceBackoff, false, true},
		{"negative Retry-After falls back", 2, "-10", time.Second, SourceBackoff, false, true},
		{"last allowed retry", 3, "", 2 * time.Second, SourceBackoff, false, true},
		{"give up at MaxAttempts", 4, "", 0, SourceGiveUp, true, false},
		{"give up beats Retry-After", 4, "7", 0, SourceGiveUp, true, false},
		{"give up beyond MaxAttempts", 9, "", 0, SourceGiveUp, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			rnd := func() float64 { calls++; return 0.5 }
			wait, source, giveUp := p.Next(tt.retry, tt.retryAfter, now, rnd)
			if wait != tt.want || source != tt.wantSource || giveUp != tt.wantGiveUp {
				t.Errorf("Next(%d, %q) = %v, %q, %v; want %v, %q, %v",
					tt.retry, tt.retryAfter, wait, source, giveUp, tt.want, tt.wantSource, tt.wantGiveUp)
			}
			if (calls > 0) != tt.wantRnd {
				t.Errorf("Next(%d, %q) called rnd %d times; want called=%v", tt.retry, tt.retryAfter, calls, tt.wantRnd)
			}
		})
	}
}

func TestNextMaxAttemptsOne(t *testing.T) {
	p := Policy{MaxAttempts: 1}
	if _, source, giveUp := p.Next(1, "5", now, constRnd(0)); !giveUp || source != SourceGiveUp {
		t.Errorf("MaxAttempts 1: Next(1) = %q, giveUp %v; want give-up", source, giveUp)
	}
}

func ExamplePolicy_Next() {
	p := DefaultPolicy()
	now := time.Date(2025, time.June, 1, 12, 0, 0, 0, time.UTC)
	half := func() float64 { return 0.5 } // use rand.Float64 in real code
	for retry := 1; retry <= 5; retry++ {
		wait, source, giveUp := p.Next(retry, "", now, half)
		fmt.Println(retry, wait, source, giveUp)
	}
	wait, source, _ := p.Next(1, "120", now, half)
	fmt.Println(wait, source)
	// Output:
	// 1 500ms backoff false
	// 2 1s backoff false
	// 3 2s backoff false
	// 4 4s backoff false
	// 5 0s give-up true
	// 2m0s retry-after
}
