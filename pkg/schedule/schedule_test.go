package schedule_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/urlcheck/urlcheck/pkg/bucket"
	"github.com/urlcheck/urlcheck/pkg/check"
	"github.com/urlcheck/urlcheck/pkg/clock"
	"github.com/urlcheck/urlcheck/pkg/groups"
	"github.com/urlcheck/urlcheck/pkg/queue"
	"github.com/urlcheck/urlcheck/pkg/results"
	"github.com/urlcheck/urlcheck/pkg/schedule"
)

// fakeChecker answers from a script per URL (the last answer repeats) and
// records when each domain was asked and how many checks ran at once.
type fakeChecker struct {
	clk     clock.Clock
	latency time.Duration
	script  map[string][]check.Outcome
	known   map[string]bool

	mu       sync.Mutex
	calls    map[string][]time.Time // by URL
	inFlight map[string]int         // by host
	peak     map[string]int
}

func (f *fakeChecker) Check(ctx context.Context, u string) check.Outcome {
	host := strings.Split(strings.TrimPrefix(u, "http://"), "/")[0]
	f.mu.Lock()
	n := len(f.calls[u])
	f.calls[u] = append(f.calls[u], f.clk.Now())
	f.inFlight[host]++
	f.peak[host] = max(f.peak[host], f.inFlight[host])
	f.mu.Unlock()
	_ = f.clk.Sleep(ctx, f.latency)
	f.mu.Lock()
	f.inFlight[host]--
	f.mu.Unlock()
	sc := f.script[u]
	if len(sc) == 0 {
		return check.Outcome{Class: check.ClassOK, Status: 200, FinalURL: u, Requests: 1, Latency: f.latency}
	}
	o := sc[min(n, len(sc)-1)]
	o.FinalURL, o.Requests = u, 1
	return o
}

func (f *fakeChecker) Known(u string) (check.Outcome, bool) {
	if f.known[u] {
		return check.Outcome{Class: check.ClassDNS, Error: "no such host"}, true
	}
	return check.Outcome{}, false
}

var (
	ok200   = check.Outcome{Class: check.ClassOK, Status: 200}
	gone404 = check.Outcome{Class: check.ClassClientError, Status: 404}
	slow    = check.Outcome{Class: check.ClassTimeout, Error: "timeout"}
	too429  = func(ra string) check.Outcome {
		return check.Outcome{Class: check.ClassRateLimited, Status: 429, RetryAfter: ra}
	}
)

type tcase struct {
	name   string
	urls   map[string]int // domain -> URL count (http://<domain>/<i>)
	script map[string][]check.Outcome
	known  map[string]bool
	limits bucket.Config
	cfg    schedule.Config
	check  func(t *testing.T, f *fakeChecker, byURL map[string][]results.Result)
}

func TestScheduler(t *testing.T) {
	cases := []tcase{
		{
			name:   "paced at the domain's rate and capped in flight",
			urls:   map[string]int{"a.example": 30, "b.example": 5},
			limits: bucket.Config{Rate: bucket.RateConfig{Start: 10, Max: 10}, Burst: 2, MaxInFlight: 2},
			check: func(t *testing.T, f *fakeChecker, _ map[string][]results.Result) {
				times := callTimes(f, "a.example")
				// The fake stamps a call when its goroutine runs, a little
				// after the scheduler sent it: allow 5 ms of simulated time
				// (0.25 ms of wall time at 20x) of start-up jitter.
				const jitter = 0.005
				for i := range times {
					for j := i; j < len(times); j++ {
						if span := times[j].Sub(times[i]).Seconds(); float64(j-i+1) > 10*(span+jitter)+2+1e-6 {
							t.Fatalf("%d requests within %.3fs: above rate 10/s × t + burst 2", j-i+1, span)
						}
					}
				}
				if f.peak["a.example"] > 2 {
					t.Fatalf("peak in flight %d, cap 2", f.peak["a.example"])
				}
			},
		},
		{
			name:   "429 with Retry-After is retried after it and pauses the domain",
			urls:   map[string]int{"a.example": 3},
			script: map[string][]check.Outcome{"http://a.example/0": {too429("3"), ok200}},
			limits: bucket.Config{Rate: bucket.RateConfig{Start: 50}, Burst: 1, MaxInFlight: 1},
			check: func(t *testing.T, f *fakeChecker, byURL map[string][]results.Result) {
				calls := f.calls["http://a.example/0"]
				if len(calls) != 2 || calls[1].Sub(calls[0]) < 3*time.Second {
					t.Fatalf("retry after %v, want >= 3s (Retry-After)", calls[1].Sub(calls[0]))
				}
				if r := byURL["http://a.example/0"][0]; r.Class != "ok" || r.Attempts != 2 {
					t.Fatalf("result %+v, want ok after 2 attempts", r)
				}
				for _, u := range []string{"http://a.example/1", "http://a.example/2"} {
					if c := f.calls[u]; len(c) == 1 && c[0].After(calls[0]) && c[0].Before(calls[0].Add(3*time.Second)) {
						t.Errorf("%s sent %v after the 429, inside the Retry-After pause", u, c[0].Sub(calls[0]))
					}
				}
			},
		},
		{
			name:   "timeouts retried up to the attempt cap, 404 never",
			urls:   map[string]int{"a.example": 2},
			script: map[string][]check.Outcome{"http://a.example/0": {slow}, "http://a.example/1": {gone404}},
			limits: bucket.Config{Rate: bucket.RateConfig{Start: 50}},
			check: func(t *testing.T, f *fakeChecker, byURL map[string][]results.Result) {
				if r := byURL["http://a.example/0"][0]; r.Class != "timeout" || r.Attempts != 2 {
					t.Errorf("hung URL: %+v, want timeout after 2 attempts", r)
				}
				if r := byURL["http://a.example/1"][0]; r.Class != "client_error" || r.Attempts != 1 {
					t.Errorf("404: %+v, want client_error after 1 attempt", r)
				}
			},
		},
		{
			name:   "a URL throttled MaxThrottles times is reported rate_limited",
			urls:   map[string]int{"a.example": 1},
			script: map[string][]check.Outcome{"http://a.example/0": {too429("")}},
			limits: bucket.Config{Rate: bucket.RateConfig{Start: 50}},
			cfg:    schedule.Config{MaxThrottles: 4},
			check: func(t *testing.T, f *fakeChecker, byURL map[string][]results.Result) {
				if r := byURL["http://a.example/0"][0]; r.Class != "rate_limited" || r.Attempts != 4 {
					t.Errorf("%+v, want rate_limited after 4 attempts", r)
				}
			},
		},
		{
			name:  "known NXDOMAIN URLs finish without a request",
			urls:  map[string]int{"a.example": 3},
			known: map[string]bool{"http://a.example/1": true},
			check: func(t *testing.T, f *fakeChecker, byURL map[string][]results.Result) {
				if n := len(f.calls["http://a.example/1"]); n != 0 {
					t.Errorf("known URL checked %d times", n)
				}
				if r := byURL["http://a.example/1"][0]; r.Class != "dns" {
					t.Errorf("%+v, want dns", r)
				}
			},
		},
		{
			name:   "a slow domain does not hold up the others",
			urls:   map[string]int{"slow.example": 20, "fast.example": 20},
			limits: bucket.Config{Rate: bucket.RateConfig{Start: 1, Max: 1}, Burst: 1, MaxInFlight: 1},
			cfg:    schedule.Config{Concurrency: 2},
			check: func(t *testing.T, f *fakeChecker, _ map[string][]results.Result) {
				// Both domains run at 1 r/s in parallel: the fast one does not
				// wait behind the slow one's 20 s.
				fast := callTimes(f, "fast.example")
				slowT := callTimes(f, "slow.example")
				if end := fast[len(fast)-1].Sub(slowT[0]); end > 25*time.Second {
					t.Fatalf("fast domain finished %v after the start, want about 20s", end)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewScaled(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 20)
			f := &fakeChecker{clk: clk, latency: 20 * time.Millisecond, script: tc.script, known: tc.known,
				calls: map[string][]time.Time{}, inFlight: map[string]int{}, peak: map[string]int{}}
			q := queue.NewMem(queue.MemOptions{Clock: clk})
			sp := groups.NewSplitter(10)
			line := 0
			doms := make([]string, 0, len(tc.urls))
			for d := range tc.urls {
				doms = append(doms, d)
			}
			sort.Strings(doms)
			for _, d := range doms {
				for i := range tc.urls[d] {
					line++
					sp.Add(d, fmt.Sprintf("http://%s/%d", d, i), line)
				}
			}
			for _, g := range sp.Groups("j") {
				b, err := groups.Encode(g)
				if err != nil {
					t.Fatal(err)
				}
				if err := q.Send(context.Background(), b, 0); err != nil {
					t.Fatal(err)
				}
			}
			tc.cfg.Clock = clk
			lim := bucket.NewLimiter(bucket.NewMemStore(), tc.limits, clk, "t")
			var mu sync.Mutex
			byURL := map[string][]results.Result{}
			emit := func(r results.Result) {
				mu.Lock()
				byURL[r.URL] = append(byURL[r.URL], r)
				mu.Unlock()
			}
			s := schedule.New(q, lim, f, results.NewTally(clk.Now(), results.WithClock(clk)), emit, sp.Domains(), tc.cfg)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := s.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if len(byURL) != line {
				t.Fatalf("%d URLs got results, want %d", len(byURL), line)
			}
			for u, rs := range byURL {
				if len(rs) != 1 {
					t.Fatalf("%s has %d results, want 1", u, len(rs))
				}
			}
			if p := s.Progress(); p.Done != p.Total {
				t.Fatalf("progress %d/%d at the end", p.Done, p.Total)
			}
			tc.check(t, f, byURL)
		})
	}
}

func callTimes(f *fakeChecker, domain string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Time
	for u, ts := range f.calls {
		if strings.HasPrefix(u, "http://"+domain+"/") {
			out = append(out, ts...)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}
