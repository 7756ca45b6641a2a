package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urlcheck/urlcheck/pkg/check"
	"github.com/urlcheck/urlcheck/pkg/clock"
	"github.com/urlcheck/urlcheck/pkg/pipeline"
	"github.com/urlcheck/urlcheck/pkg/pipeline/local"
	"github.com/urlcheck/urlcheck/pkg/simrun"
	"github.com/urlcheck/urlcheck/pkg/simweb"
)

type serveOpts struct {
	fs       *flag.FlagSet
	addr     string
	simulate int
	once     bool
	dataDir  string
	verbose  bool
}

func serveFlags(out io.Writer) *serveOpts {
	o := &serveOpts{fs: flag.NewFlagSet("serve", flag.ContinueOnError)}
	o.fs.SetOutput(out)
	o.fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address of the HTTP API")
	o.fs.IntVar(&o.simulate, "simulate", 0, "point the checker at a simulated web of this many URLs on loopback (0: check real URLs)")
	o.fs.BoolVar(&o.once, "once", false, "with -simulate: submit the simulated list through POST /jobs and the drop folder, wait for both jobs, print where the results are, and exit")
	o.fs.StringVar(&o.dataDir, "data", "", "directory of the local S3 server's objects (default: a temporary directory removed at exit)")
	o.fs.BoolVar(&o.verbose, "v", false, "log every ingest, summary and failed message")
	o.fs.Usage = func() {
		fmt.Fprintln(out, `Usage: urlcheck serve [flags]

Runs the serverless pipeline on this machine with the same handlers as on AWS: the
HTTP API on -addr, the S3 drop folder (a versitygw server whose event webhook calls
the ingest handler) and an SQS event-source loop calling the checker, against
DynamoDB Local and fauxqs. Start them first (make local does it all):
  eval "$(infra/local/emu.sh env)"`)
		o.fs.PrintDefaults()
	}
	return o
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) (bool, error) {
	o := serveFlags(stderr)
	if err := o.fs.Parse(args); err != nil {
		return false, err
	}
	if o.fs.NArg() != 0 {
		return false, fmt.Errorf("serve takes no arguments: %w", errUsage)
	}
	if o.once && o.simulate <= 0 {
		return false, fmt.Errorf("-once needs -simulate: %w", errUsage)
	}
	lo := local.Options{DDBEndpoint: os.Getenv(pipeline.EnvDDBEndpoint), SQSEndpoint: os.Getenv(pipeline.EnvSQSEndpoint),
		VersityGW: os.Getenv("URLCHECK_VERSITYGW_BIN"), DataDir: o.dataDir, APIAddr: o.addr}
	if lo.DDBEndpoint == "" || lo.SQSEndpoint == "" || lo.VersityGW == "" {
		return false, fmt.Errorf("the local AWS servers are not configured: run `eval \"$(infra/local/emu.sh env)\"` after `infra/local/emu.sh start`, or use `make local`: %w", errUsage)
	}
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelInfo
	}
	lo.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	var urls []string
	if o.simulate > 0 {
		sc := simweb.Scenario{Seed: 1, Domains: max(10, o.simulate/40), Big: []int{o.simulate / 5}, URLs: o.simulate,
			RateMin: 5, RateMax: 25, BigRate: 40, Faults: simweb.MixedFaults(), HTTPS: 0.3, Modes: simweb.AllModes()}
		web, u, _, err := simrun.Start(sc, clock.Real{})
		if err != nil {
			return false, err
		}
		defer web.Close()
		urls = u
		lo.Configure = func(d *pipeline.Deps) {
			d.Check = check.Config{AllowPrivate: true, Resolver: web.Resolver, Dial: web.Dial, RootCAs: web.CertPool(),
				TotalTimeout: 10 * time.Second}
		}
		list := filepath.Join("out", "simulated-urls.txt")
		if err := os.MkdirAll("out", 0o755); err == nil {
			_ = os.WriteFile(list, []byte(strings.Join(urls, "\n")+"\n"), 0o644)
			fmt.Fprintf(stderr, "simulated web: %d URLs over %d domains; list in %s\n", len(urls), sc.Domains, list)
		}
	}
	p, err := local.Start(ctx, lo)
	if err != nil {
		return false, err
	}
	defer p.Close()
	fmt.Fprintf(stderr, "API on %s, S3 on %s (bucket %s), queue %s\n", p.APIURL, p.S3Endpoint, p.Deps.Objects.Bucket(), p.QueueURL)
	if !o.once {
		fmt.Fprintf(stderr, "try:\n  curl -s -X POST -H 'Content-Type: text/plain' --data-binary @out/simulated-urls.txt %s/jobs\n  curl -s %s/jobs/JOB_ID\nCtrl-C stops.\n", p.APIURL, p.APIURL)
		<-ctx.Done()
		return false, nil
	}
	list := []byte(strings.Join(urls, "\n"))
	start := time.Now()
	idA, err := p.Submit(ctx, list, "text/plain")
	if err != nil {
		return false, err
	}
	idB, err := p.Drop(ctx, "simulated-urls.txt", list)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(stderr, "submitted job %s (POST /jobs) and job %s (drop folder)\n", idA, idB)
	for _, id := range []string{idA, idB} {
		st, err := p.Wait(ctx, id, time.Second)
		if err != nil {
			return false, err
		}
		_, sum, err := p.Results(ctx, id)
		if err != nil {
			return false, err
		}
		fmt.Fprintf(stdout, "job %s: %s in %.1fs: %d lines, %d broken, %d requests, %.2f%% throttled; s3://%s/results/%s/\n",
			id, st.State, time.Since(start).Seconds(), sum.Total, sum.Broken, sum.Requests, 100*sum.ThrottledShare,
			p.Deps.Objects.Bucket(), id)
	}
	return false, nil
}
