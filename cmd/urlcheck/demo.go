package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urlcheck/urlcheck/pkg/clock"
	"github.com/urlcheck/urlcheck/pkg/simrun"
	"github.com/urlcheck/urlcheck/pkg/simweb"
)

type demoOpts struct {
	*runOpts
	urls, domains int
	big           string
	speed         float64
	seed          int64
	rateMin       float64
	rateMax       float64
	faults        bool
}

func demoFlags(out io.Writer) *demoOpts {
	o := &demoOpts{runOpts: runFlags(out)}
	o.fs.Init("demo", flag.ContinueOnError)
	o.fs.IntVar(&o.urls, "urls", 600, "URLs in the generated list")
	o.fs.IntVar(&o.domains, "domains", 60, "registrable domains in the simulated web")
	o.fs.StringVar(&o.big, "big", "150,100", "URL counts of the big domains, comma-separated")
	o.fs.Float64Var(&o.speed, "speed", 1, "simulated seconds per wall-clock second (rates, Retry-After and timeouts keep their simulated meaning)")
	o.fs.Int64Var(&o.seed, "seed", 1, "scenario seed")
	o.fs.Float64Var(&o.rateMin, "hidden-min", 1, "lowest hidden per-domain limit, requests/s")
	o.fs.Float64Var(&o.rateMax, "hidden-max", 20, "highest hidden per-domain limit, requests/s")
	o.fs.BoolVar(&o.faults, "faults", true, "include broken URLs (404s, loops, resets, timeouts, DNS and TLS failures)")
	// Simulated hangs would otherwise hold the demo for 2 × 30 s.
	if f := o.fs.Lookup("timeout"); f != nil {
		_ = f.Value.Set("5s")
		f.DefValue = "5s"
	}
	o.fs.Usage = func() {
		fmt.Fprintln(out, "Usage: urlcheck demo [flags]\n\nChecks a generated list against a simulated web on loopback: every domain has a hidden\ntoken bucket and concurrency cap and answers 429/503 when it is exceeded.")
		o.fs.PrintDefaults()
	}
	return o
}

func (o *demoOpts) scenario() (simweb.Scenario, error) {
	sc := simweb.Scenario{Seed: o.seed, Domains: o.domains, URLs: o.urls, RateMin: o.rateMin, RateMax: o.rateMax,
		HTTPS: 0.3, MaxConcurrent: 4,
		Modes: simweb.AllModes()}
	if o.faults {
		sc.Faults = simweb.MixedFaults()
	}
	for _, f := range strings.Split(o.big, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return sc, fmt.Errorf("-big: %q is not a positive URL count: %w", f, errUsage)
		}
		sc.Big = append(sc.Big, n)
	}
	if err := sc.Validate(); err != nil {
		return sc, fmt.Errorf("demo scenario: %v: %w", err, errUsage)
	}
	return sc, nil
}

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) (bool, error) {
	o := demoFlags(stderr)
	if err := o.fs.Parse(args); err != nil {
		return false, err
	}
	if o.fs.NArg() != 0 {
		return false, fmt.Errorf("demo takes no arguments: %w", errUsage)
	}
	sc, err := o.scenario()
	if err != nil {
		return false, err
	}
	clk := clock.NewScaled(time.Now(), o.speed)
	web, urls, _, err := simrun.Start(sc, clk)
	if err != nil {
		return false, err
	}
	defer web.Close()
	fmt.Fprintf(stderr, "simulated web: %d URLs over %d registrable domains on %s (HTTP) and %s (HTTPS), hidden limits %g-%g r/s, %gx speed\n",
		len(urls), o.domains, web.HTTPAddr(), web.HTTPSAddr(), o.rateMin, o.rateMax, o.speed)
	jo, err := o.jobOptions(strings.NewReader(strings.Join(urls, "\n")), "demo.txt")
	if err != nil {
		return false, err
	}
	jo.Schedule.Clock = clk
	simrun.Wire(&jo.Check, web, clk, o.timeout)
	// At -speed N a stall of this machine looks N times longer: only treat
	// latency above 250 ms of wall time as congestion.
	jo.Limits.Rate.LatencyFloor = time.Duration(o.speed * float64(250*time.Millisecond))
	o.noRateCache = true // simulated domains must not pollute the real learned rates
	broken, err := o.execute(ctx, jo, stdout, stderr)
	if err != nil {
		return broken, err
	}
	requests, throttled, peakOver := 0, 0, 0
	for _, st := range web.Stats() {
		requests += st.Requests
		throttled += st.Throttled
		peakOver += st.Violations
	}
	fmt.Fprintf(stdout, "\nSeen by the simulated hosts: %d requests, %d answered 429/503 (%.2f%%), %d over a hidden concurrency cap.\n",
		requests, throttled, 100*float64(throttled)/float64(max(requests, 1)), peakOver)
	// A demo with broken URLs in it is a success when it ran.
	return false, nil
}
