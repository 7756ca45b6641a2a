package results

import (
	"context"
	"math"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/urlcheck/urlcheck/pkg/clock"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func TestBroken(t *testing.T) {
	tests := []struct {
		class string
		want  bool
	}{
		{ClassOK, false}, {ClassRedirect, false},
		{ClassClientError, true}, {ClassServerError, true}, {ClassRateLimited, true},
		{ClassBlockedByBotProtection, true}, {ClassTimeout, true}, {ClassDNS, true},
		{ClassTLS, true}, {ClassRefused, true}, {ClassReset, true},
		{ClassTooManyRedirects, true}, {ClassInvalid, true}, {ClassForbiddenTarget, true},
		{"", true}, {"OK", true}, {"something_new", true},
	}
	for _, tc := range tests {
		if got := Broken(tc.class); got != tc.want {
			t.Errorf("Broken(%q) = %v, want %v", tc.class, got, tc.want)
		}
	}
}

func TestClassesOrder(t *testing.T) {
	want := []string{"ok", "redirect", "client_error", "server_error", "rate_limited",
		"blocked_by_bot_protection", "timeout", "dns", "tls", "refused", "reset",
		"too_many_redirects", "invalid", "forbidden_target"}
	if !reflect.DeepEqual(Classes, want) {
		t.Errorf("Classes = %v, want %v", Classes, want)
	}
}

func TestPercentile(t *testing.T) {
	one2ten := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	hundred := make([]float32, 100)
	for i := range hundred {
		hundred[i] = float32(i + 1)
	}
	tests := []struct {
		name   string
		sorted []float32
		p      float64
		want   float64
	}{
		{"empty", nil, 50, 0},
		{"single p50", []float32{7}, 50, 7},
		{"single p99", []float32{7}, 99, 7},
		{"1..10 p50", one2ten, 50, 5},
		{"1..10 p90", one2ten, 90, 9},
		{"1..10 p91 rounds rank up", one2ten, 91, 10},
		{"1..10 p95", one2ten, 95, 10},
		{"1..10 p10", one2ten, 10, 1},
		{"1..10 p11", one2ten, 11, 2},
		{"1..100 p95", hundred, 95, 95},
		{"1..100 p99", hundred, 99, 99},
		{"1..100 p100", hundred, 100, 100},
		{"p0 is min", one2ten, 0, 1},
		{"p>100 is max", one2ten, 150, 10},
		{"four p50", []float32{10, 20, 30, 40}, 50, 20},
		{"four p75", []float32{10, 20, 30, 40}, 75, 30},
		{"float32 keeps short decimal", []float32{12.3}, 50, 12.3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
			}
		})
	}
}

func TestAchievedRate(t *testing.T) {
	tests := []struct {
		name        string
		n           int
		first, last time.Time
		want        float64
	}{
		{"none", 0, time.Time{}, time.Time{}, 0},
		{"one request", 1, sec(0), sec(0), 0},
		{"two at same instant", 2, sec(1), sec(1), 0},
		{"two, 1 s apart", 2, sec(0), sec(1), 1},
		{"11 over 5 s", 11, sec(0), sec(5), 2},
		{"5 over 0.5 s", 5, sec(10), sec(10.5), 8},
		{"last before first", 3, sec(2), sec(1), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := AchievedRate(tc.n, tc.first, tc.last); got != tc.want {
				t.Errorf("AchievedRate(%d, %v, %v) = %v, want %v", tc.n, tc.first, tc.last, got, tc.want)
			}
		})
	}
}

// op is one call on a Tally.
type op func(*Tally)

func add(line int, url, domain, class string, status int, ms float64) op {
	return func(t *Tally) {
		t.Add(Result{Line: line, URL: url, Domain: domain, Class: class, Status: status, LatencyMS: ms})
	}
}

func req(domain string, status int, throttled bool, at float64) op {
	return func(t *Tally) { t.RequestAt(domain, status, throttled, sec(at)) }
}

func retry() op { return func(t *Tally) { t.Retry() } }

func plan(domain string, urls int) op { return func(t *Tally) { t.SetDomain(domain, urls) } }

// zeroClasses returns ByClass with every known class at 0, then the given
// counts applied.
func zeroClasses(kv map[string]int) map[string]int {
	m := make(map[string]int)
	for _, c := range Classes {
		m[c] = 0
	}
	for k, v := range kv {
		m[k] = v
	}
	return m
}

func TestTallySummary(t *testing.T) {
	tests := []struct {
		name    string
		ops     []op
		learned func(string) float64
		want    Summary // JobID, Started, Finished, MakespanS filled in by the test
	}{
		{
			name: "empty job",
			want: Summary{ByClass: zeroClasses(nil), ByStatus: map[string]int{}, Domains: []DomainSummary{}},
		},
		{
			name: "counts by class and status, broken, unique",
			ops: []op{
				add(1, "https://a.com/", "a.com", ClassOK, 200, 10),
				add(2, "https://a.com/x", "a.com", ClassClientError, 404, 20),
				add(3, "https://a.com/", "a.com", ClassOK, 200, 30), // same URL on another line
				add(4, "not a url", "", ClassInvalid, 0, 0),
				add(5, "https://b.org/", "b.org", ClassRedirect, 301, 40),
				add(6, "https://c.net/", "c.net", ClassTimeout, 0, 50),
			},
			want: Summary{
				Total: 6, Unique: 4, Broken: 3,
				ByClass:   zeroClasses(map[string]int{"ok": 2, "client_error": 1, "invalid": 1, "redirect": 1, "timeout": 1}),
				ByStatus:  map[string]int{"200": 2, "404": 1, "301": 1},
				LatencyMS: LatencySummary{P50: 30, P95: 50, P99: 50},
				Domains: []DomainSummary{
					{Domain: "a.com", URLs: 2, P95MS: 30},
					{Domain: "b.org", URLs: 1, P95MS: 40},
					{Domain: "c.net", URLs: 1, P95MS: 50},
				},
			},
		},
		{
			name: "duplicate line counted once, first wins",
			ops: []op{
				add(1, "https://a.com/", "a.com", ClassTimeout, 0, 100),
				add(1, "https://a.com/", "a.com", ClassOK, 200, 5),
			},
			want: Summary{
				Total: 1, Unique: 1, Broken: 1,
				ByClass: zeroClasses(map[string]int{"timeout": 1}), ByStatus: map[string]int{},
				LatencyMS: LatencySummary{P50: 100, P95: 100, P99: 100},
				Domains:   []DomainSummary{{Domain: "a.com", URLs: 1, P95MS: 100}},
			},
		},
		{
			name: "requests, throttled share, retries, rates, planned URLs and sort order",
			ops: []op{
				plan("big.com", 3), plan("small.com", 1), plan("also.com", 3),
				req("big.com", 200, false, 0), req("big.com", 429, true, 1),
				req("big.com", 200, false, 2), req("big.com", 503, true, 4),
				retry(), retry(),
				req("small.com", 200, false, 7),
				req("also.com", 200, false, 3), req("also.com", 200, false, 3.5),
				add(1, "https://big.com/1", "big.com", ClassOK, 200, 1),
				add(2, "https://big.com/2", "big.com", ClassOK, 200, 2),
				add(3, "https://small.com/", "small.com", ClassOK, 200, 3),
				add(4, "https://also.com/", "also.com", ClassOK, 200, 4),
			},
			learned: func(d string) float64 { return map[string]float64{"big.com": 0.5, "also.com": 2}[d] },
			want: Summary{
				Total: 4, Unique: 4,
				ByClass: zeroClasses(map[string]int{"ok": 4}), ByStatus: map[string]int{"200": 4},
				Requests: 7, Throttled: 2, Retries: 2, ThrottledShare: 2.0 / 7,
				LatencyMS: LatencySummary{P50: 2, P95: 4, P99: 4},
				Domains: []DomainSummary{
					{Domain: "also.com", URLs: 3, Requests: 2, LearnedRate: 2, AchievedRate: 2, P95MS: 4, First: sec(3), Last: sec(3.5)},
					{Domain: "big.com", URLs: 3, Requests: 4, Throttled: 2, LearnedRate: 0.5, AchievedRate: 0.75, P95MS: 2, First: sec(0), Last: sec(4)},
					{Domain: "small.com", URLs: 1, Requests: 1, P95MS: 3, First: sec(7), Last: sec(7)},
				},
				Timeline: []DomainTimeline{ // 12.5 s job: 13 one-second buckets, busiest first
					tline("big.com", t0, 1, 13, map[int]int{0: 1, 1: 1, 2: 1, 4: 1}, map[int]int{1: 1, 4: 1}, 0.5),
					tline("also.com", t0, 1, 13, map[int]int{3: 2}, nil, 2),
					tline("small.com", t0, 1, 13, map[int]int{7: 1}, nil, 0),
				},
			},
		},
		{
			name: "requests arriving out of order set first and last",
			ops:  []op{req("a.com", 200, false, 5), req("a.com", 200, false, 1), req("a.com", 200, false, 3)},
			want: Summary{
				Requests: 3, ByClass: zeroClasses(nil), ByStatus: map[string]int{},
				Domains:  []DomainSummary{{Domain: "a.com", Requests: 3, AchievedRate: 0.5, First: sec(1), Last: sec(5)}},
				Timeline: []DomainTimeline{tline("a.com", t0, 1, 13, map[int]int{1: 1, 3: 1, 5: 1}, nil, 0)},
			},
		},
		{
			name: "non-finite or negative learned rate becomes 0",
			ops:  []op{plan("n.com", 2), plan("i.com", 1), plan("m.com", 1)},
			learned: func(d string) float64 {
				return map[string]float64{"n.com": math.NaN(), "i.com": math.Inf(1), "m.com": -1}[d]
			},
			want: Summary{
				ByClass: zeroClasses(nil), ByStatus: map[string]int{},
				Domains: []DomainSummary{{Domain: "n.com", URLs: 2}, {Domain: "i.com", URLs: 1}, {Domain: "m.com", URLs: 1}},
			},
		},
		{
			name: "unknown class is counted and broken",
			ops:  []op{add(1, "https://a.com/", "a.com", "weird", 0, 1)},
			want: Summary{
				Total: 1, Unique: 1, Broken: 1,
				ByClass: zeroClasses(map[string]int{"weird": 1}), ByStatus: map[string]int{},
				LatencyMS: LatencySummary{P50: 1, P95: 1, P99: 1},
				Domains:   []DomainSummary{{Domain: "a.com", URLs: 1, P95MS: 1}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ta := NewTally(t0)
			for _, o := range tc.ops {
				o(ta)
			}
			finished := sec(12.5)
			got := ta.Summary("job-1", finished, tc.learned)
			want := tc.want
			want.JobID, want.Started, want.Finished, want.MakespanS = "job-1", t0, finished, 12.5
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Summary mismatch\n got: %+v\nwant: %+v", got, want)
			}
			done, broken := ta.Done()
			if done != want.Total || broken != want.Broken {
				t.Errorf("Done() = %d, %d; want %d, %d", done, broken, want.Total, want.Broken)
			}
		})
	}
}

// counts returns n buckets, zero except for the given index: count pairs.
func counts(n int, kv map[int]int) []int {
	out := make([]int, n)
	for i, c := range kv {
		out[i] = c
	}
	return out
}

// tline builds the DomainTimeline Tally.Summary is expected to return.
func tline(domain string, start time.Time, bucketS float64, n int, reqs, thr map[int]int, learned float64) DomainTimeline {
	return DomainTimeline{Domain: domain, Start: start, BucketSeconds: bucketS,
		Requests: counts(n, reqs), Throttled: counts(n, thr), LearnedRate: learned}
}

func TestTallyTimeline(t *testing.T) {
	tests := []struct {
		name     string
		started  time.Time
		ops      []op
		finished time.Time
		learned  func(string) float64
		want     []DomainTimeline
	}{
		{
			name:     "no requests: no timeline",
			started:  t0,
			ops:      []op{plan("a.com", 3), add(1, "https://a.com/", "a.com", ClassOK, 200, 1)},
			finished: sec(10),
		},
		{
			name:    "top 5 by requests, ties by name, domains without requests left out",
			started: t0,
			ops: []op{
				plan("idle.com", 100),
				req("f.com", 200, false, 0),
				req("e.com", 200, false, 0), req("e.com", 200, false, 0.5),
				req("d.com", 200, false, 1), req("d.com", 200, false, 1.2),
				req("c.com", 200, false, 2), req("c.com", 200, false, 2), req("c.com", 429, true, 2.999),
				req("b.com", 200, false, 0), req("b.com", 200, false, 1), req("b.com", 200, false, 2), req("b.com", 200, false, 3),
				req("a.com", 200, false, 0), req("a.com", 200, false, 3.999),
			},
			finished: sec(3.5), // the last request (3.999) extends the span to 4 buckets
			learned:  func(d string) float64 { return map[string]float64{"b.com": 3}[d] },
			want: []DomainTimeline{
				tline("b.com", t0, 1, 4, map[int]int{0: 1, 1: 1, 2: 1, 3: 1}, nil, 3),
				tline("c.com", t0, 1, 4, map[int]int{2: 3}, map[int]int{2: 1}, 0),
				tline("a.com", t0, 1, 4, map[int]int{0: 1, 3: 1}, nil, 0),
				tline("d.com", t0, 1, 4, map[int]int{1: 2}, nil, 0),
				tline("e.com", t0, 1, 4, map[int]int{0: 2}, nil, 0),
			},
		},
		{
			name:     "long job: buckets widen to whole seconds, at most 600",
			started:  t0,
			ops:      []op{req("a.com", 200, false, 0), req("a.com", 503, true, 5.9), req("a.com", 200, false, 6), req("a.com", 200, false, 3599)},
			finished: sec(3600), // 3600 s / 600 = 6 s buckets
			want:     []DomainTimeline{tline("a.com", t0, 6, 600, map[int]int{0: 2, 1: 1, 599: 1}, map[int]int{0: 1}, 0)},
		},
		{
			name:     "not quite 600 s: one-second buckets",
			started:  t0,
			ops:      []op{req("a.com", 200, false, 599.9)},
			finished: sec(600),
			want:     []DomainTimeline{tline("a.com", t0, 1, 600, map[int]int{599: 1}, nil, 0)},
		},
		{
			name:     "600.5 s: two-second buckets",
			started:  t0,
			ops:      []op{req("a.com", 200, false, 600.4)},
			finished: sec(600.5),
			want:     []DomainTimeline{tline("a.com", t0, 2, 301, map[int]int{300: 1}, nil, 0)},
		},
		{
			name:     "request before the start moves the origin; one at the end goes in the last bucket",
			started:  t0,
			ops:      []op{req("a.com", 200, false, -1.5), req("a.com", 200, false, 2)},
			finished: sec(2),
			want:     []DomainTimeline{tline("a.com", sec(-1.5), 1, 4, map[int]int{0: 1, 3: 1}, nil, 0)},
		},
		{
			name:     "zero start and zero finish: span of the requests",
			ops:      []op{req("a.com", 200, false, 10), req("a.com", 200, false, 12.5)},
			finished: time.Time{},
			want:     []DomainTimeline{tline("a.com", sec(10), 1, 3, map[int]int{0: 1, 2: 1}, nil, 0)},
		},
		{
			name:     "all requests at one instant: one bucket",
			ops:      []op{req("a.com", 200, false, 1), req("a.com", 429, true, 1)},
			finished: time.Time{},
			want:     []DomainTimeline{tline("a.com", sec(1), 1, 1, map[int]int{0: 2}, map[int]int{0: 1}, 0)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ta := NewTally(tc.started)
			for _, o := range tc.ops {
				o(ta)
			}
			got := ta.Summary("j", tc.finished, tc.learned).Timeline
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Timeline mismatch\n got: %+v\nwant: %+v", got, tc.want)
			}
			for _, tl := range got {
				if n := len(tl.Requests); n > TimelineMaxBuckets || n != len(tl.Throttled) {
					t.Errorf("%s: %d request buckets, %d throttled buckets; want equal and <= %d", tl.Domain, n, len(tl.Throttled), TimelineMaxBuckets)
				}
			}
		})
	}
}

func TestTallyMakespanNeverNegative(t *testing.T) {
	s := NewTally(sec(10)).Summary("j", sec(5), nil)
	if s.MakespanS != 0 {
		t.Errorf("MakespanS = %v, want 0 when finished precedes started", s.MakespanS)
	}
}

// fixedClock is a clock.Clock whose time the test sets.
type fixedClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fixedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *fixedClock) set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }
func (c *fixedClock) Sleep(ctx context.Context, d time.Duration) error {
	return ctx.Err() // never waits: these tests do not sleep
}
func (c *fixedClock) NewTimer(d time.Duration) clock.Timer { return clock.Real{}.NewTimer(d) }

func TestTallyRequestUsesInjectedClock(t *testing.T) {
	clk := &fixedClock{now: sec(2)}
	ta := NewTally(t0, WithClock(clk))
	ta.Request("a.com", 200, false)
	clk.set(sec(6))
	ta.Request("a.com", 429, true)
	s := ta.Summary("j", sec(7), nil)
	want := []DomainSummary{{Domain: "a.com", Requests: 2, Throttled: 1, AchievedRate: 0.25, First: sec(2), Last: sec(6)}}
	if !reflect.DeepEqual(s.Domains, want) {
		t.Errorf("Domains = %+v, want %+v", s.Domains, want)
	}
	if s.ThrottledShare != 0.5 {
		t.Errorf("ThrottledShare = %v, want 0.5", s.ThrottledShare)
	}
}

func TestTallyConcurrent(t *testing.T) {
	const workers, per = 8, 500
	ta := NewTally(t0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range per {
				line := w*per + i + 1
				class := ClassOK
				if line%4 == 0 {
					class = ClassServerError
				}
				ta.Add(Result{Line: line, URL: "https://a.com/" + string(rune('a'+w)) + "/" + strconv.Itoa(i), Domain: "a.com", Class: class, Status: 200, LatencyMS: float64(line)})
				ta.RequestAt("a.com", 200, i%10 == 0, sec(float64(line)))
				if i%5 == 0 {
					ta.Retry()
				}
				ta.Done()
			}
		})
	}
	wg.Wait()
	n := workers * per
	s := ta.Summary("j", sec(float64(n)), nil)
	if s.Total != n || s.Unique != n || s.Broken != n/4 || s.Requests != n || s.Throttled != n/10 || s.Retries != n/5 {
		t.Errorf("got total=%d unique=%d broken=%d requests=%d throttled=%d retries=%d; want %d %d %d %d %d %d",
			s.Total, s.Unique, s.Broken, s.Requests, s.Throttled, s.Retries, n, n, n/4, n, n/10, n/5)
	}
	// Latencies are 1..n ms, so nearest-rank percentiles are exact.
	if want := (LatencySummary{P50: 2000, P95: 3800, P99: 3960}); s.LatencyMS != want {
		t.Errorf("LatencyMS = %+v, want %+v", s.LatencyMS, want)
	}
	if d := s.Domains[0]; d.First != sec(1) || d.Last != sec(float64(n)) || d.AchievedRate != 1 {
		t.Errorf("domain first=%v last=%v rate=%v; want %v %v 1", d.First, d.Last, d.AchievedRate, sec(1), sec(float64(n)))
	}
}
