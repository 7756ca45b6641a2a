// Package simrun runs a urlcheck job against a simulated web and measures
// it from the hosts' side: the integration tests, `make bench` and
// `urlcheck demo` share it.
//
// The job runs on a scaled clock (clock.Scaled): rates, Retry-After values,
// latencies and timeouts keep their meaning in simulated seconds while the
// run takes 1/Scale of the wall time.
package simrun

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/urlcheck/urlcheck/pkg/bucket"
	"github.com/urlcheck/urlcheck/pkg/check"
	"github.com/urlcheck/urlcheck/pkg/clock"
	"github.com/urlcheck/urlcheck/pkg/job"
	"github.com/urlcheck/urlcheck/pkg/simweb"
	"github.com/urlcheck/urlcheck/pkg/urlnorm"
)

// Options tune a simulated run. Zero values take the defaults given.
type Options struct {
	Scale   float64       // simulated seconds per wall second; default 1
	Timeout time.Duration // per-check total timeout in simulated time; default 5s
	Out     string        // result directory root; required
	ID      string        // job id; default "sim"
	Limits  bucket.Config // the checker's own politeness settings
	Job     job.Options   // Schedule and GroupSize are used; Input, List, Out, ID and Check are set here
	// Repeat lists the first Repeat URLs again after the scenario's (lines
	// N+1..N+Repeat): a URL twice in one list is checked once.
	Repeat int
	// Extra is appended to the generated list (after the scenario's URLs,
	// which are lines 1..N), e.g. duplicates and bad lines.
	Extra []string
}

// Run is a finished simulated run.
type Run struct {
	Report job.Report
	Web    *simweb.Web
	URLs   []string          // the scenario's URLs, line i+1 holds URLs[i]
	Truth  map[string]string // URL -> class the simulated web makes it
	// Measured on the server side.
	Requests, Throttled, Violations int
	// LowerBound is max over registrable domains of URLs / hidden rate, in
	// seconds: no schedule that keeps every hidden limit finishes sooner.
	LowerBound       float64
	LowerBoundDomain string
	Wall             time.Duration // wall-clock time of the job
}

// ThrottledShare is the share of requests the hosts answered 429/503.
func (r Run) ThrottledShare() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Throttled) / float64(r.Requests)
}

// Ratio is the makespan divided by the lower bound (0 without a bound).
func (r Run) Ratio() float64 {
	if r.LowerBound == 0 {
		return 0
	}
	return r.Report.Summary.MakespanS / r.LowerBound
}

// Start builds the scenario's web on clk and starts it; the caller closes it.
func Start(sc simweb.Scenario, clk clock.Clock) (*simweb.Web, []string, map[string]string, error) {
	if err := sc.Validate(); err != nil {
		return nil, nil, nil, fmt.Errorf("scenario: %w", err)
	}
	web := simweb.New(clk)
	urls, truth := sc.Build(web)
	if err := web.Start(); err != nil {
		return nil, nil, nil, fmt.Errorf("starting the simulated web: %w", err)
	}
	return web, urls, truth, nil
}

// Wire points a check configuration at web: its resolver, dialer and CA,
// private targets allowed, and the given simulated timeout converted to wall
// time for net/http.
func Wire(c *check.Config, web *simweb.Web, clk *clock.Scaled, timeout time.Duration) {
	c.ConnectTimeout, c.TLSTimeout = clk.Real(timeout), clk.Real(timeout)
	c.HeaderTimeout, c.TotalTimeout = clk.Real(timeout), clk.Real(timeout)
	c.AllowPrivate, c.Resolver, c.Dial, c.RootCAs = true, web.Resolver, web.Dial, web.CertPool()
	c.Clock = clk
}

// Execute runs a job over the scenario and measures it.
func Execute(ctx context.Context, sc simweb.Scenario, o Options) (Run, error) {
	if o.Scale <= 0 {
		o.Scale = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.ID == "" {
		o.ID = "sim"
	}
	clk := clock.NewScaled(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), o.Scale)
	web, urls, truth, err := Start(sc, clk)
	if err != nil {
		return Run{}, err
	}
	defer web.Close()
	lines := append([]string(nil), urls...)
	lines = append(lines, urls[:min(o.Repeat, len(urls))]...)
	list := strings.Join(append(lines, o.Extra...), "\n")
	jo := o.Job
	jo.Input = io.Reader(strings.NewReader(list))
	jo.Out, jo.ID = o.Out, o.ID
	jo.Limits = o.Limits
	if jo.Limits.Rate.LatencyFloor == 0 {
		// On a scaled clock a wall-clock hiccup of the test machine looks
		// Scale times longer: only treat latency above 250 ms of wall time
		// as a congestion signal.
		jo.Limits.Rate.LatencyFloor = time.Duration(o.Scale * float64(250*time.Millisecond))
	}
	jo.Schedule.Clock = clk
	Wire(&jo.Check, web, clk, o.Timeout)
	start := time.Now()
	rep, err := job.Run(ctx, jo)
	if err != nil {
		return Run{}, err
	}
	r := Run{Report: rep, Web: web, URLs: urls, Truth: truth, Wall: time.Since(start)}
	stats := web.Stats()
	for _, st := range stats {
		r.Requests += st.Requests
		r.Throttled += st.Throttled
		r.Violations += st.Violations
	}
	r.LowerBound, r.LowerBoundDomain = LowerBound(urls, stats)
	return r, nil
}

// LowerBound returns max over registrable domains of URLs / hidden rate in
// seconds, and that domain.
func LowerBound(urls []string, stats map[string]simweb.DomainStats) (float64, string) {
	keyer := urlnorm.NewKeyer(urlnorm.Overrides{})
	per := map[string]int{}
	for _, u := range urls {
		if pu, err := url.Parse(u); err == nil {
			per[keyer.Key(pu.Hostname())]++
		}
	}
	best, which := 0.0, ""
	for d, n := range per {
		if st, ok := stats[d]; ok && st.Limit.Rate > 0 {
			if lb := float64(n) / st.Limit.Rate; lb > best {
				best, which = lb, d
			}
		}
	}
	return best, which
}
