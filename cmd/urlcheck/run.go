package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/urlcheck/urlcheck/pkg/bucket"
	"github.com/urlcheck/urlcheck/pkg/check"
	"github.com/urlcheck/urlcheck/pkg/job"
	"github.com/urlcheck/urlcheck/pkg/results"
	"github.com/urlcheck/urlcheck/pkg/schedule"
	"github.com/urlcheck/urlcheck/pkg/urllist"
	"github.com/urlcheck/urlcheck/pkg/urlnorm"
)

func version() string {
	if check.Version != "dev" {
		return check.Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return check.Version
}

// runOpts are the flags shared by run and demo.
type runOpts struct {
	fs             *flag.FlagSet
	out            string
	format         string
	concurrency    int
	rate           float64
	burst          float64
	perDomain      int
	connectTimeout time.Duration
	headerTimeout  time.Duration
	timeout        time.Duration
	userAgent      string
	allowPrivate   bool
	overrides      string
	noRateCache    bool
	maxThrottles   int
	quiet          bool
	groupSize      int
	connectTo      string
	baseline       string
}

func runFlags(out io.Writer) *runOpts {
	o := &runOpts{fs: flag.NewFlagSet("run", flag.ContinueOnError)}
	fs := o.fs
	fs.SetOutput(out)
	fs.StringVar(&o.out, "out", "out", "directory for results: files go to `DIR`/<job-id>/")
	fs.StringVar(&o.format, "format", "auto", "input format: auto, text, csv or json")
	fs.IntVar(&o.concurrency, "concurrency", 64, "global cap on requests in flight across all domains")
	fs.Float64Var(&o.rate, "rate", 2, "starting rate per registrable domain, requests/s (learned rates from earlier runs take precedence)")
	fs.Float64Var(&o.burst, "burst", 1, "token bucket burst per domain, requests")
	fs.IntVar(&o.perDomain, "per-domain", 2, "requests in flight per registrable domain at most")
	fs.DurationVar(&o.connectTimeout, "connect-timeout", 10*time.Second, "TCP connect timeout (TLS handshake gets the same)")
	fs.DurationVar(&o.headerTimeout, "header-timeout", 20*time.Second, "time to wait for response headers")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "total time for one check, redirects included")
	fs.StringVar(&o.userAgent, "user-agent", check.DefaultUserAgent(), "User-Agent header")
	fs.BoolVar(&o.allowPrivate, "allow-private", false, "allow loopback, private and link-local targets (refused by default)")
	fs.StringVar(&o.overrides, "overrides", "", "file of domain rules: 'own HOST' (a host is its own site) or 'share DOMAIN WITH' (two domains share one limit)")
	fs.BoolVar(&o.noRateCache, "no-rate-cache", false, "neither read nor save learned rates in the user cache directory")
	fs.IntVar(&o.maxThrottles, "max-throttles", 20, "report a URL rate_limited after this many 429s")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress output")
	fs.IntVar(&o.groupSize, "group-size", 50, "URLs per domain group (queue message)")
	fs.Usage = func() {
		fmt.Fprintln(out, "Usage: urlcheck run [flags] FILE|-")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.baseline, "baseline", "", "after the run, compare it with the earlier scan in `DIR` (a result directory, or its summary.json or results.jsonl): print the changes to stderr and write diff.json next to the new summary.json")
	fs.StringVar(&o.connectTo, "connect-to", "", "testing: send every connection to `IP:PORT` instead of the URL host's address (as curl --connect-to does); loopback needs -allow-private")
	return o
}

func cmdRun(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (bool, error) {
	o := runFlags(stderr)
	if err := o.fs.Parse(args); err != nil {
		return false, err
	}
	if o.fs.NArg() != 1 {
		o.fs.Usage()
		return false, fmt.Errorf("run takes one FILE (or - for stdin), got %d arguments: %w", o.fs.NArg(), errUsage)
	}
	name := o.fs.Arg(0)
	in := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return false, fmt.Errorf("cannot read the list: %w", err)
		}
		defer f.Close()
		in = f
	}
	jo, err := o.jobOptions(in, name)
	if err != nil {
		return false, err
	}
	return o.execute(ctx, jo, stdout, stderr)
}

// jobOptions turns flags into job options; errors are usage errors.
func (o *runOpts) jobOptions(in io.Reader, name string) (job.Options, error) {
	format, err := urllist.ParseFormat(o.format)
	if err != nil {
		return job.Options{}, fmt.Errorf("-format: %v: %w", err, errUsage)
	}
	var ov urlnorm.Overrides
	if o.overrides != "" {
		f, err := os.Open(o.overrides)
		if err != nil {
			return job.Options{}, fmt.Errorf("-overrides: %v: %w", err, errUsage)
		}
		ov, err = urlnorm.ParseOverrides(f)
		f.Close()
		if err != nil {
			return job.Options{}, fmt.Errorf("-overrides %s: %v: %w", o.overrides, err, errUsage)
		}
	}
	switch {
	case o.rate <= 0:
		return job.Options{}, fmt.Errorf("-rate must be above 0 requests/s, got %v: %w", o.rate, errUsage)
	case o.burst < 1:
		return job.Options{}, fmt.Errorf("-burst must be at least 1, got %v: %w", o.burst, errUsage)
	case o.perDomain < 1 || o.concurrency < 1:
		return job.Options{}, fmt.Errorf("-per-domain and -concurrency must be at least 1: %w", errUsage)
	case o.timeout <= 0 || o.connectTimeout <= 0 || o.headerTimeout <= 0:
		return job.Options{}, fmt.Errorf("timeouts must be positive: %w", errUsage)
	}
	var resolver func(context.Context, string) ([]netip.Addr, error)
	var dial func(context.Context, string, netip.AddrPort) (net.Conn, error)
	if o.connectTo != "" {
		to, err := netip.ParseAddrPort(o.connectTo)
		if err != nil {
			return job.Options{}, fmt.Errorf("-connect-to wants IP:PORT: %v: %w", err, errUsage)
		}
		resolver = func(context.Context, string) ([]netip.Addr, error) { return []netip.Addr{to.Addr()}, nil }
		d := &net.Dialer{Timeout: o.connectTimeout}
		dial = func(ctx context.Context, network string, _ netip.AddrPort) (net.Conn, error) {
			return d.DialContext(ctx, network, to.String())
		}
	}
	return job.Options{
		Input:     in,
		List:      urllist.Options{Format: format, Name: name, Keyer: urlnorm.NewKeyer(ov)},
		Out:       o.out,
		GroupSize: o.groupSize,
		Limits: bucket.Config{
			Rate:        bucket.RateConfig{Start: o.rate},
			Burst:       o.burst,
			MaxInFlight: o.perDomain,
			LeaseTTL:    2*o.timeout + time.Minute,
		},
		Schedule: schedule.Config{
			Concurrency:  o.concurrency,
			Visibility:   3*o.timeout + 2*time.Minute,
			MaxThrottles: o.maxThrottles,
		},
		Check: check.Config{
			ConnectTimeout: o.connectTimeout,
			TLSTimeout:     o.connectTimeout,
			HeaderTimeout:  o.headerTimeout,
			TotalTimeout:   o.timeout,
			UserAgent:      o.userAgent,
			AllowPrivate:   o.allowPrivate,
			Resolver:       resolver,
			Dial:           dial,
		},
	}, nil
}

// execute runs the job with progress output, rate persistence and the final
// summary; it reports whether any URL is broken.
func (o *runOpts) execute(ctx context.Context, jo job.Options, stdout, stderr io.Writer) (bool, error) {
	store := bucket.NewMemStore()
	ratesPath := ""
	if !o.noRateCache {
		if p, err := bucket.RatesFile(); err == nil {
			ratesPath = p
			if rates, err := bucket.LoadRates(p); err != nil {
				fmt.Fprintf(stderr, "urlcheck: ignoring learned rates: %v\n", err)
			} else {
				store.Seed(rates)
			}
		}
	}
	jo.Store = store
	var base *baseline
	if o.baseline != "" {
		b, err := loadBaseline(o.baseline)
		if err != nil {
			return false, err
		}
		base = b
	}
	if !o.quiet {
		jo.Progress, jo.ProgressEvery = progressPrinter(stderr)
	}
	rep, err := job.Run(ctx, jo)
	if err != nil {
		return false, err
	}
	if ratesPath != "" {
		if err := bucket.SaveRates(ratesPath, store.Rates()); err != nil {
			fmt.Fprintf(stderr, "urlcheck: %v\n", err)
		}
	}
	printSummary(stdout, rep)
	if base != nil {
		if err := writeBaselineDiff(base, rep.Dir, o.quiet, stderr); err != nil {
			return rep.Summary.Broken > 0, err
		}
	}
	return rep.Summary.Broken > 0, nil
}

// progressPrinter returns a live progress bar on a terminal, else plain
// lines every 5 s.
func progressPrinter(w io.Writer) (func(schedule.Progress, int, int), time.Duration) {
	f, isFile := w.(*os.File)
	if isFile && term.IsTerminal(int(f.Fd())) {
		var bar *progressbar.ProgressBar
		return func(p schedule.Progress, done, broken int) {
			if bar == nil {
				bar = progressbar.NewOptions(p.Total,
					progressbar.OptionSetWriter(w),
					progressbar.OptionSetDescription("checking"),
					progressbar.OptionShowCount(),
					progressbar.OptionShowIts(),
					progressbar.OptionSetItsString("URLs"),
					progressbar.OptionSetPredictTime(true),
					progressbar.OptionClearOnFinish(),
				)
			}
			bar.Describe(fmt.Sprintf("checking (%d domains waiting on their limit, %d broken)", p.Waiting, broken))
			_ = bar.Set(p.Done)
			if p.Done >= p.Total {
				_ = bar.Finish()
			}
		}, 200 * time.Millisecond
	}
	start := time.Now()
	return func(p schedule.Progress, done, broken int) {
		el := time.Since(start).Seconds()
		rate := float64(p.Done) / max(el, 1e-9)
		eta := "?"
		if rate > 0 {
			eta = (time.Duration(float64(p.Total-p.Done)/rate) * time.Second).Round(time.Second).String()
		}
		fmt.Fprintf(w, "progress: %d/%d URLs, %.1f URLs/s, ETA %s, %d domains waiting on their limit, %d broken, queue %d ready %d delayed\n",
			p.Done, p.Total, rate, eta, p.Waiting, broken, p.Visible, p.Hidden)
	}, 5 * time.Second
}

func printSummary(w io.Writer, rep job.Report) {
	s := rep.Summary
	fmt.Fprintf(w, "\nChecked %d lines (%d unique URLs) in %.1fs: %d ok, %d broken.\n", s.Total, s.Unique, s.MakespanS, s.Total-s.Broken, s.Broken)
	fmt.Fprintf(w, "Requests: %d, answered 429/503: %d (%.2f%%), retries: %d.\n", s.Requests, s.Throttled, 100*s.ThrottledShare, s.Retries)
	fmt.Fprintln(w, "\nBy class:")
	for _, c := range results.Classes {
		if n := s.ByClass[c]; n > 0 {
			fmt.Fprintf(w, "  %-26s %6d\n", c, n)
		}
	}
	doms := append([]results.DomainSummary(nil), s.Domains...)
	sort.Slice(doms, func(i, j int) bool {
		return doms[i].Last.After(doms[j].Last) // the domains that finished last set the makespan
	})
	if len(doms) > 0 {
		fmt.Fprintln(w, "\nSlowest domains (finished last):")
		fmt.Fprintf(w, "  %-32s %6s %8s %8s %11s %11s\n", "domain", "URLs", "requests", "429/503", "learned r/s", "achieved r/s")
		for _, d := range doms[:min(5, len(doms))] {
			fmt.Fprintf(w, "  %-32s %6d %8d %8d %11.2f %11.2f\n", d.Domain, d.URLs, d.Requests, d.Throttled, d.LearnedRate, d.AchievedRate)
		}
	}
	if s.Broken > 0 {
		if rs, err := results.ReadJSONL(rep.Dir + "/results.jsonl"); err == nil {
			fmt.Fprintln(w, "\nFirst broken URLs:")
			shown := 0
			for _, r := range rs {
				if !results.Broken(r.Class) {
					continue
				}
				detail := r.Error
				if r.Status > 0 {
					detail = fmt.Sprintf("HTTP %d %s", r.Status, detail)
				}
				fmt.Fprintf(w, "  line %-6d %-20s %s  %s\n", r.Line, r.Class, r.URL, strings.TrimSpace(detail))
				if shown++; shown == 10 {
					break
				}
			}
		}
	}
	fmt.Fprintf(w, "\nResults: %s/results.jsonl, results.csv, summary.json\n", rep.Dir)
}
