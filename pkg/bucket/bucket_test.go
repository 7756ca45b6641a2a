package bucket

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/urlcheck/urlcheck/pkg/clock"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestBucketTakeN(t *testing.T) {
	tests := []struct {
		name   string
		b      Bucket
		now    time.Time
		n      float64
		rate   float64
		burst  float64
		ok     bool
		tokens float64
		wait   time.Duration
	}{
		{"new bucket starts full", Bucket{}, at(0), 3, 2, 3, true, 0, 0},
		{"empty bucket waits n/rate", Bucket{Tokens: 0, Refilled: at(0)}, at(0), 2, 4, 5, false, 0, 500 * time.Millisecond},
		{"greedy refill adds per ms", Bucket{Tokens: 0, Refilled: at(0)}, at(250), 1, 4, 5, true, 0, 0},
		{"refill capped at burst", Bucket{Tokens: 0, Refilled: at(0)}, at(60000), 1, 4, 5, true, 4, 0},
		{"debt is repaid first", Bucket{Tokens: -2, Refilled: at(0)}, at(0), 1, 1, 1, false, -2, 3 * time.Second},
		{"n above burst never fits", Bucket{Tokens: 1, Refilled: at(0)}, at(0), 3, 1, 2, false, 1, time.Duration(1<<63 - 1)},
		{"clock going backwards adds nothing", Bucket{Tokens: 0.5, Refilled: at(1000)}, at(0), 1, 10, 5, false, 0.5, 50 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nb, ok, wait := tc.b.TakeN(tc.now, tc.n, tc.rate, tc.burst)
			if ok != tc.ok || nb.Tokens != tc.tokens || wait != tc.wait {
				t.Fatalf("TakeN = (%+v, %v, %v), want tokens %v ok %v wait %v", nb, ok, wait, tc.tokens, tc.ok, tc.wait)
			}
		})
	}
}

func TestBucketReserve(t *testing.T) {
	tests := []struct {
		name    string
		tokens  float64
		want    int
		rate    float64
		horizon time.Duration
		n       int
		offsets []time.Duration
	}{
		{"one token now, more paced", 1, 5, 10, 250 * time.Millisecond, 3, []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}},
		{"capped by want", 1, 2, 10, time.Second, 2, []time.Duration{0, 100 * time.Millisecond}},
		{"nothing within horizon", -5, 3, 2, time.Second, 0, nil},
		{"zero horizon grants only present tokens", 2, 5, 1, 0, 2, []time.Duration{0, 0}},
		{"fractional token waits for the rest", 0.5, 1, 2, time.Second, 1, []time.Duration{250 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := Bucket{Tokens: tc.tokens, Refilled: at(0)}
			nb, n := b.Reserve(at(0), tc.want, tc.rate, 10, tc.horizon)
			if n != tc.n {
				t.Fatalf("granted %d, want %d", n, tc.n)
			}
			if nb.Tokens != tc.tokens-float64(n) {
				t.Fatalf("tokens after = %v, want %v", nb.Tokens, tc.tokens-float64(n))
			}
			for j, want := range tc.offsets {
				if got := Offset(tc.tokens, j, tc.rate); got != want {
					t.Errorf("offset %d = %v, want %v", j, got, want)
				}
			}
		})
	}
}

func TestLearnedObserve(t *testing.T) {
	cfg := RateConfig{Start: 4, Min: 0.5, Max: 40}
	tests := []struct {
		name  string
		start Learned
		now   time.Time
		fb    Feedback
		want  float64
		check func(t *testing.T, l Learned)
	}{
		{name: "unknown domain starts at Start", start: Learned{}, now: at(0), fb: Feedback{OK: 1}, want: 4},
		{name: "slow start doubles per streak when backlogged", start: Learned{Rate: 4}, now: at(0), fb: Feedback{OK: 3, Backlogged: true}, want: 8},
		{name: "no growth without backlog", start: Learned{Rate: 4}, now: at(0), fb: Feedback{OK: 30}, want: 4},
		{name: "429 halves and records the ceiling", start: Learned{Rate: 8}, now: at(5000), fb: Feedback{Throttled: 1}, want: 4,
			check: func(t *testing.T, l Learned) {
				if l.Ceiling != 8 || l.Cuts != 1 || l.Signals != 1 {
					t.Fatalf("after cut: %+v", l)
				}
			}},
		{name: "a second cut without a streak between is steeper", start: Learned{Rate: 8, Cuts: 1, LastCut: at(0)}, now: at(5000), fb: Feedback{Throttled: 2}, want: 8 * math.Pow(0.5, 1.5)},
		{name: "the third and later cuts quarter the rate", start: Learned{Rate: 8, Cuts: 5, LastCut: at(0)}, now: at(5000), fb: Feedback{Throttled: 1}, want: 2},
		{name: "throttles within the cooldown are echoes", start: Learned{Rate: 4, Cuts: 1, LastCut: at(0), Ceiling: 8}, now: at(500), fb: Feedback{Throttled: 1}, want: 4},
		{name: "floor holds", start: Learned{Rate: 0.6, Cuts: 3, LastCut: at(0)}, now: at(9000), fb: Feedback{Throttled: 1}, want: 0.5},
		{name: "timeouts cut gently", start: Learned{Rate: 8}, now: at(5000), fb: Feedback{Timeouts: 1}, want: 6},
		{name: "an isolated timeout after a success streak does not cut", start: Learned{Rate: 8, Streak: 9, Clean: 20}, now: at(5000), fb: Feedback{Timeouts: 1}, want: 8,
			check: func(t *testing.T, l Learned) {
				if l.Streak != 4 {
					t.Fatalf("streak = %d, want halved to 4", l.Streak)
				}
			}},
		{name: "near the ceiling growth is additive", start: Learned{Rate: 10, Ceiling: 20}, now: at(0), fb: Feedback{OK: 5, Backlogged: true}, want: 11},
		{name: "slow start stops at half the ceiling", start: Learned{Rate: 4, Ceiling: 20}, now: at(0), fb: Feedback{OK: 3, Backlogged: true}, want: 8},
		{name: "ceiling of Max", start: Learned{Rate: 30}, now: at(0), fb: Feedback{OK: 15, Backlogged: true}, want: 40},
		{name: "rising p95 is congestion", start: Learned{Rate: 10, BaseMS: 50}, now: at(0), fb: Feedback{OK: 10, P95: 400 * time.Millisecond, Backlogged: true}, want: 9},
		{name: "fast responses lower the baseline", start: Learned{Rate: 10, BaseMS: 50}, now: at(0), fb: Feedback{OK: 1, P95: 20 * time.Millisecond},
			want: 10, check: func(t *testing.T, l Learned) {
				if l.BaseMS != 20 {
					t.Fatalf("baseline = %v, want 20", l.BaseMS)
				}
			}},
		{name: "a full streak clears the cut count", start: Learned{Rate: 4, Cuts: 2, LastCut: at(0), Ceiling: 8}, now: at(9000), fb: Feedback{OK: 3}, want: 4,
			check: func(t *testing.T, l Learned) {
				if l.Cuts != 0 {
					t.Fatalf("cuts = %d, want 0", l.Cuts)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.start.Observe(cfg, tc.now, tc.fb)
			if got.Rate != tc.want {
				t.Fatalf("rate = %v, want %v (state %+v)", got.Rate, tc.want, got)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func TestLimiterConcurrencyCapAndLeases(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	lim := NewLimiter(NewMemStore(), Config{Rate: RateConfig{Start: 100}, Burst: 10, MaxInFlight: 2, LeaseTTL: time.Minute}, clk, "t")
	g1, err := lim.Acquire(ctx, "example.com", 1)
	if err != nil || g1.N != 1 || g1.Slots != 1 {
		t.Fatalf("first grant = %+v, %v", g1, err)
	}
	g2, _ := lim.Acquire(ctx, "example.com", 5)
	if g2.Slots != 1 {
		t.Fatalf("second grant slots = %d, want the 1 left of the cap", g2.Slots)
	}
	g3, _ := lim.Acquire(ctx, "example.com", 1)
	if g3.N != 0 || g3.Wait <= 0 {
		t.Fatalf("grant over the cap = %+v, want N=0 and a wait", g3)
	}
	if _, err := lim.Settle(ctx, g1, Feedback{OK: 1}); err != nil {
		t.Fatal(err)
	}
	if g4, _ := lim.Acquire(ctx, "example.com", 1); g4.N != 1 {
		t.Fatalf("after a release: %+v, want a grant", g4)
	}
	// g2's and g4's leases are never settled (a crashed worker): they expire.
	clk.Advance(2 * time.Minute)
	if g5, _ := lim.Acquire(ctx, "example.com", 1); g5.N != 1 || g5.Slots != 1 {
		t.Fatalf("after lease expiry: %+v, want a grant", g5)
	}
}

func TestLimiterSettleKeepsStragglerSlots(t *testing.T) {
	ctx := context.Background()
	lim := NewLimiter(NewMemStore(), Config{Rate: RateConfig{Start: 100}, Burst: 10, MaxInFlight: 2}, clock.NewManual(t0), "t")
	g, _ := lim.Acquire(ctx, "example.com", 4)
	if g.Slots != 2 {
		t.Fatalf("slots = %d, want 2", g.Slots)
	}
	g.Keep = 1 // one request still hangs
	if _, err := lim.Settle(ctx, g, Feedback{OK: 3}); err != nil {
		t.Fatal(err)
	}
	if g2, _ := lim.Acquire(ctx, "example.com", 4); g2.Slots != 1 {
		t.Fatalf("with one straggler kept: %d slots, want 1", g2.Slots)
	} else {
		lim.Settle(ctx, g2, Feedback{})
	}
	g.Keep = 0
	if _, err := lim.Settle(ctx, g, Feedback{Timeouts: 1}); err != nil {
		t.Fatal(err)
	}
	if g3, _ := lim.Acquire(ctx, "example.com", 4); g3.Slots != 2 {
		t.Fatalf("after the straggler settled: %d slots, want 2", g3.Slots)
	}
}

func TestLimiterReserveQueuesFollowUps(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	lim := NewLimiter(NewMemStore(), Config{Rate: RateConfig{Start: 4}, Burst: 1}, clk, "t")
	want := []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond}
	for i, w := range want {
		got, err := lim.Reserve(ctx, "example.com")
		if err != nil || got != w {
			t.Fatalf("reservation %d: wait %v, %v; want %v", i, got, err, w)
		}
	}
	// The grants that follow wait behind the reservations.
	if g, _ := lim.Acquire(ctx, "example.com", 1); g.N != 1 || g.Offset(0) != 750*time.Millisecond {
		t.Fatalf("grant after 3 reservations: %+v offset %v, want 1 at +750ms", g, g.Offset(0))
	}
}

func TestLimiterRetryAfterPausesDomain(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	lim := NewLimiter(NewMemStore(), Config{Rate: RateConfig{Start: 10}, Burst: 5, MaxInFlight: 4}, clk, "t")
	g, _ := lim.Acquire(ctx, "example.com", 1)
	l, err := lim.Settle(ctx, g, Feedback{Throttled: 1, RetryAfter: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if l.Rate != 5 {
		t.Fatalf("rate after 429 = %v, want 5", l.Rate)
	}
	g2, _ := lim.Acquire(ctx, "example.com", 1)
	if g2.N != 0 || g2.Wait != 3*time.Second {
		t.Fatalf("during Retry-After: %+v, want N=0 wait 3s", g2)
	}
	clk.Advance(2500 * time.Millisecond)
	g3, _ := lim.Acquire(ctx, "example.com", 1)
	if g3.N != 1 || g3.Offset(0) != 500*time.Millisecond {
		t.Fatalf("pause ending within the horizon: %+v offset %v, want 1 at +500ms", g3, g3.Offset(0))
	}
}

func TestLimiterChargesExtraRequests(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	lim := NewLimiter(NewMemStore(), Config{Rate: RateConfig{Start: 1}, Burst: 1, Horizon: time.Millisecond}, clk, "t")
	g, _ := lim.Acquire(ctx, "example.com", 1)
	if _, err := lim.Settle(ctx, g, Feedback{OK: 1, Extra: 2}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if g2, _ := lim.Acquire(ctx, "example.com", 1); g2.N != 0 || g2.Wait != 2*time.Second {
		t.Fatalf("after 2 extra requests at 1 r/s: %+v, want a 2s wait", g2)
	}
}

func TestRatesFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "rates.json")
	if m, err := LoadRates(path); err != nil || len(m) != 0 {
		t.Fatalf("missing file: %v, %v", m, err)
	}
	in := map[string]Learned{"github.com": {Rate: 12.5, Ceiling: 20}}
	if err := SaveRates(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := LoadRates(path)
	if err != nil || out["github.com"].Rate != 12.5 {
		t.Fatalf("round trip = %v, %v", out, err)
	}
	ms := NewMemStore()
	ms.Seed(out)
	lim := NewLimiter(ms, Config{}, clock.NewManual(t0), "t")
	if l, _ := lim.Learned(context.Background(), "github.com"); l.Rate != 12.5 {
		t.Fatalf("seeded rate = %v", l.Rate)
	}
	if l, _ := lim.Learned(context.Background(), "new.example"); l.Rate != 2 {
		t.Fatalf("unseeded rate = %v, want the default start 2", l.Rate)
	}
}
