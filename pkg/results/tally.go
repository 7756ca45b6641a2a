package results

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/urlcheck/urlcheck/pkg/clock"
)

// Tally aggregates a job's results and requests into a Summary. It is safe
// for concurrent use. Memory: 4 bytes per latency sample (kept as float32
// milliseconds, in the job total and again in the sample's domain), 4 bytes
// per request and 4 more per throttled request (int32 milliseconds since the
// job's start, for Summary.Timeline), plus one map entry per distinct line
// number and per distinct URL.
type Tally struct {
	clk     clock.Clock
	started time.Time
	base    time.Time // origin of domainTally.times: started, or the first request time if started is zero

	mu        sync.Mutex
	lines     map[int]struct{} // line numbers already added
	urls      map[string]struct{}
	done      int
	broken    int
	byClass   map[string]int
	byStatus  map[int]int
	latencies []float32
	requests  int
	throttled int
	retries   int
	domains   map[string]*domainTally
}

type domainTally struct {
	planned     int  // from SetDomain
	plannedSet  bool // SetDomain was called
	seenURLs    int  // distinct checked URLs added for the domain
	requests    int
	throttled   int
	first, last time.Time
	latencies   []float32
	times       []int32 // request times, ms since Tally.base (clamped to int32)
	thrTimes    []int32 // times of the throttled requests, ditto
}

// TallyOption configures NewTally.
type TallyOption func(*Tally)

// WithClock makes Request timestamp requests with c instead of the wall
// clock (clock.Real{}); pass the job's clock, e.g. a clock.Scaled in tests.
func WithClock(c clock.Clock) TallyOption {
	return func(t *Tally) { t.clk = c }
}

// NewTally returns an empty Tally for a job that started at started (used
// for Summary.MakespanS). Request times come from the wall clock unless
// WithClock is given.
func NewTally(started time.Time, opts ...TallyOption) *Tally {
	t := &Tally{
		clk:      clock.Real{},
		started:  started,
		base:     started,
		lines:    make(map[int]struct{}),
		urls:     make(map[string]struct{}),
		byClass:  make(map[string]int),
		byStatus: make(map[int]int),
		domains:  make(map[string]*domainTally),
	}
	for _, o := range opts {
		o(t)
	}
	return t
}

// domain returns the entry for name, creating it; t.mu is held.
func (t *Tally) domain(name string) *domainTally {
	d := t.domains[name]
	if d == nil {
		d = &domainTally{}
		t.domains[name] = d
	}
	return d
}

// Add counts one per-line result: by class, by status (when Status != 0),
// as broken (see Broken), and, unless its class is "invalid", as a latency
// sample of the job and of its domain and as a URL for Summary.Unique.
// A result whose Line (>= 1) was already added is ignored, so that a
// redelivered line is counted once, as Writer keeps it once; results with
// Line < 1 are always counted.
func (t *Tally) Add(r Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.Line >= 1 {
		if _, dup := t.lines[r.Line]; dup {
			return
		}
		t.lines[r.Line] = struct{}{}
	}
	t.done++
	if Broken(r.Class) {
		t.broken++
	}
	t.byClass[r.Class]++
	if r.Status != 0 {
		t.byStatus[r.Status]++
	}
	if r.Class == ClassInvalid {
		return
	}
	lat := float32(r.LatencyMS)
	t.latencies = append(t.latencies, lat)
	var d *domainTally
	if r.Domain != "" {
		d = t.domain(r.Domain)
		d.latencies = append(d.latencies, lat)
	}
	if _, seen := t.urls[r.URL]; !seen {
		t.urls[r.URL] = struct{}{}
		if d != nil {
			d.seenURLs++
		}
	}
}

// Request counts one HTTP request sent to domain, timestamped with the
// Tally's clock. status is the response's HTTP status code (0 when none
// arrived); throttled reports that the server pushed back (a 429, or a 503
// treated as throttling, RFC 9110 §15.6.4 / RFC 6585 §4), as decided by the
// caller. status is accepted for the record but not aggregated: per-status
// counts in the Summary come from Add.
func (t *Tally) Request(domain string, status int, throttled bool) {
	t.RequestAt(domain, status, throttled, t.clk.Now())
}

// RequestAt is Request with an explicit request time at, which sets the
// domain's First and Last request times (the earliest and latest at seen,
// in whatever order calls arrive) and is kept, to the millisecond, for
// Summary.Timeline. Times more than about 24 days away from the job's
// start are clamped for the timeline only.
func (t *Tally) RequestAt(domain string, status int, throttled bool, at time.Time) {
	_ = status
	t.mu.Lock()
	defer t.mu.Unlock()
	t.requests++
	if throttled {
		t.throttled++
	}
	if t.base.IsZero() {
		t.base = at
	}
	ms := msSince(t.base, at)
	d := t.domain(domain)
	d.requests++
	d.times = append(d.times, ms)
	if throttled {
		d.throttled++
		d.thrTimes = append(d.thrTimes, ms)
	}
	if d.first.IsZero() || at.Before(d.first) {
		d.first = at
	}
	if d.last.IsZero() || at.After(d.last) {
		d.last = at
	}
}

// Retry counts one retry scheduled.
func (t *Tally) Retry() {
	t.mu.Lock()
	t.retries++
	t.mu.Unlock()
}

// SetDomain records that urls distinct URLs are planned for domain; a later
// call replaces the earlier value. Without it, a domain's URL count is the
// number of distinct checked URLs added for it.
func (t *Tally) SetDomain(domain string, urls int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.domain(domain)
	d.planned, d.plannedSet = urls, true
}

// Done returns progress for the live status line: the number of lines added
// so far and how many of them are broken.
func (t *Tally) Done() (done, broken int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done, t.broken
}

// Summary builds the job summary as of finished. learned, which may be nil,
// returns each domain's learned request rate in requests/s at the end of the
// job; a nil function, or a NaN, infinite or negative rate, gives 0. The
// Timeline covers the TimelineDomains domains with the most requests (see
// DomainTimeline); it is empty when no request was sent. The Tally is not
// changed and may keep being used.
func (t *Tally) Summary(jobID string, finished time.Time, learned func(domain string) float64) Summary {
	t.mu.Lock()
	defer t.mu.Unlock()

	s := Summary{
		JobID:     jobID,
		Started:   t.started,
		Finished:  finished,
		MakespanS: math.Max(0, finished.Sub(t.started).Seconds()),
		Total:     t.done,
		Unique:    len(t.urls),
		Broken:    t.broken,
		ByClass:   make(map[string]int, len(Classes)),
		ByStatus:  make(map[string]int, len(t.byStatus)),
		Requests:  t.requests,
		Throttled: t.throttled,
		Retries:   t.retries,
	}
	for _, c := range Classes {
		s.ByClass[c] = 0
	}
	for c, n := range t.byClass {
		s.ByClass[c] = n
	}
	for code, n := range t.byStatus {
		s.ByStatus[strconv.Itoa(code)] = n
	}
	if t.requests > 0 {
		s.ThrottledShare = float64(t.throttled) / float64(t.requests)
	}
	sorted := slices.Clone(t.latencies)
	slices.Sort(sorted)
	s.LatencyMS.P50 = Percentile(sorted, 50)
	s.LatencyMS.P95 = Percentile(sorted, 95)
	s.LatencyMS.P99 = Percentile(sorted, 99)

	s.Domains = make([]DomainSummary, 0, len(t.domains))
	for name, d := range t.domains {
		ds := DomainSummary{
			Domain:       name,
			URLs:         d.seenURLs,
			Requests:     d.requests,
			Throttled:    d.throttled,
			AchievedRate: AchievedRate(d.requests, d.first, d.last),
			First:        d.first,
			Last:         d.last,
		}
		if d.plannedSet {
			ds.URLs = d.planned
		}
		if learned != nil {
			if r := learned(name); r >= 0 && !math.IsInf(r, 1) { // false for NaN
				ds.LearnedRate = r
			}
		}
		dl := slices.Clone(d.latencies)
		slices.Sort(dl)
		ds.P95MS = Percentile(dl, 95)
		s.Domains = append(s.Domains, ds)
	}
	slices.SortFunc(s.Domains, func(a, b DomainSummary) int {
		if c := cmp.Compare(b.URLs, a.URLs); c != 0 {
			return c
		}
		return cmp.Compare(a.Domain, b.Domain)
	})
	s.Timeline = t.timeline(finished, s.Domains)
	return s
}

// TimelineDomains is the number of domains, the busiest by requests, that
// Summary.Timeline covers.
const TimelineDomains = 5

// TimelineMaxBuckets bounds the number of buckets per DomainTimeline: the
// bucket width is the smallest whole number of seconds (at least 1) that
// covers the timeline's span in at most this many buckets.
const TimelineMaxBuckets = 600

// timeline buckets the request times of the busiest domains; t.mu is held.
// domains carries each domain's learned rate. All timelines share one origin
// (the job's start, or an earlier request) and one bucket width, and end at
// finished or the latest request, whichever is later.
func (t *Tally) timeline(finished time.Time, domains []DomainSummary) []DomainTimeline {
	busy := make([]DomainSummary, 0, len(domains))
	for _, ds := range domains {
		if ds.Requests > 0 {
			busy = append(busy, ds)
		}
	}
	if len(busy) == 0 {
		return nil
	}
	slices.SortStableFunc(busy, func(a, b DomainSummary) int {
		if c := cmp.Compare(b.Requests, a.Requests); c != 0 {
			return c
		}
		return cmp.Compare(a.Domain, b.Domain)
	})
	busy = busy[:min(len(busy), TimelineDomains)]

	// Span in ms relative to t.base: lo is the origin, hi the end.
	var lo, hi int64
	if t.started.IsZero() {
		lo = math.MaxInt64
	}
	if !finished.IsZero() {
		hi = int64(msSince(t.base, finished))
	}
	for _, ds := range busy {
		for _, ms := range t.domains[ds.Domain].times {
			lo, hi = min(lo, int64(ms)), max(hi, int64(ms))
		}
	}
	hi = max(hi, lo)
	span := hi - lo                                                    // ms
	bucketMS := max(1000, ceilDiv(span, TimelineMaxBuckets*1000)*1000) // whole seconds
	n := int(max(1, ceilDiv(span, bucketMS)))
	start := t.base.Add(time.Duration(lo) * time.Millisecond)

	out := make([]DomainTimeline, 0, len(busy))
	for _, ds := range busy {
		d := t.domains[ds.Domain]
		tl := DomainTimeline{
			Domain:        ds.Domain,
			Start:         start,
			BucketSeconds: float64(bucketMS) / 1000,
			Requests:      make([]int, n),
			Throttled:     make([]int, n),
			LearnedRate:   ds.LearnedRate,
		}
		for _, ms := range d.times {
			tl.Requests[min(int((int64(ms)-lo)/bucketMS), n-1)]++
		}
		for _, ms := range d.thrTimes {
			tl.Throttled[min(int((int64(ms)-lo)/bucketMS), n-1)]++
		}
		out = append(out, tl)
	}
	return out
}

// msSince returns at - base in milliseconds, clamped to the int32 range
// (about ±24.8 days).
func msSince(base, at time.Time) int32 {
	ms := at.Sub(base).Milliseconds()
	return int32(min(max(ms, math.MinInt32), math.MaxInt32))
}

// ceilDiv returns ceil(a/b) for a >= 0, b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// Percentile returns the p-th percentile (0 < p <= 100) of sorted, which
// must be in ascending order, by the nearest-rank method: the smallest
// sample such that at least p% of the samples are <= it, i.e.
// sorted[ceil(p/100*n)-1]. It returns 0 for no samples; p <= 0 gives the
// minimum and p > 100 the maximum. The float32 sample is widened via its
// shortest decimal form, so 12.3 stays 12.3 rather than 12.300000190734863.
func Percentile(sorted []float32, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(sorted[rank-1]), 'g', -1, 32), 64)
	return v
}

// AchievedRate returns the request rate in requests/s actually achieved by
// requests requests, the first sent at first and the last at last:
// (requests-1)/(last-first) in seconds when requests >= 2 and last is after
// first, else 0.
func AchievedRate(requests int, first, last time.Time) float64 {
	span := last.Sub(first).Seconds()
	if requests < 2 || span <= 0 {
		return 0
	}
	return float64(requests-1) / span
}
