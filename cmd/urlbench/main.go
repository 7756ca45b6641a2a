// Command urlbench measures urlcheck's politeness and speed against the
// simulated web and prints a Markdown table (`make bench`).
//
// Figures:
//   - makespan ÷ lower bound, where the lower bound is max over registrable
//     domains of (URLs on the domain ÷ its hidden rate): no schedule that
//     keeps every hidden limit can finish sooner; target ≤ 1.2.
//   - share of requests the simulated hosts answered 429/503; target ≤ 1 %.
//   - URLs/s on an unthrottled scenario (10,000 URLs over 1,000 fast hosts,
//     real time); target ≥ 2,000.
//   - peak RSS of `urlcheck run` checking 100,000 URLs in its own process,
//     against a simulated web in this one (-connect-to); target ≤ 200 MB.
//   - parse + split of 1,000,000 URLs; target ≤ 3 s.
//   - the serverless ingest of a 1,000,000-URL list (S3 -> split -> SQS)
//     against the local servers: time and heap, within Lambda's limits.
//   - the AWS cost of a serverless job (serverless.go): one 5,000-URL job
//     through the local serverless pipeline (package pipeline/local), its
//     AWS API calls per URL counted by SDK middleware (package awscalls) —
//     DynamoDB writes ≤ 0.3, SQS requests ≤ 0.1, S3 PUTs ≤ 0.02 per URL —
//     and the dollars per 75,000 URLs at on-demand us-east-1 prices. It
//     needs the local AWS servers (URLCHECK_DDB_ENDPOINT and friends, set by
//     infra/local/with-servers.sh); without them its rows read "skipped".
//     One line per AWS operation follows the table.
//
// Scaled scenarios run on a scaled clock: simulated seconds are reported.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/urlcheck/urlcheck/pkg/clock"
	"github.com/urlcheck/urlcheck/pkg/groups"
	"github.com/urlcheck/urlcheck/pkg/job"
	"github.com/urlcheck/urlcheck/pkg/schedule"
	"github.com/urlcheck/urlcheck/pkg/simrun"
	"github.com/urlcheck/urlcheck/pkg/simweb"
	"github.com/urlcheck/urlcheck/pkg/urllist"
)

func main() {
	only := flag.String("only", "", "run only scenarios whose name contains this")
	flag.Parse()
	if err := run(*only); err != nil {
		fmt.Fprintln(os.Stderr, "urlbench:", err)
		os.Exit(1)
	}
}

var faults = simweb.MixedFaults()

var modes = simweb.AllModes()

type row struct{ name, figure, target, value, verdict string }

func run(only string) error {
	tmp, err := os.MkdirTemp("", "urlbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ctx := context.Background()
	var rows []row
	add := func(r row) {
		rows = append(rows, r)
		fmt.Fprintf(os.Stderr, "%s: %s = %s\n", r.name, r.figure, r.value)
	}
	want := func(name string) bool { return only == "" || strings.Contains(name, only) }

	throttled := []struct {
		name  string
		sc    simweb.Scenario
		scale float64
	}{
		{"2k URLs / 120 domains", simweb.Scenario{Seed: 7, Domains: 120, Big: []int{400, 400}, URLs: 2000, MaxConcurrent: 2, HTTPS: 0.3, Faults: faults, Modes: modes}, 5},
		{"2k URLs / 120 domains, no faults", simweb.Scenario{Seed: 7, Domains: 120, Big: []int{400, 400}, URLs: 2000, MaxConcurrent: 2, HTTPS: 0.3, Modes: modes}, 5},
		{"20k URLs / 1,000 domains", simweb.Scenario{Seed: 11, Domains: 1000, Big: []int{1500, 1000, 600}, URLs: 20000, MaxConcurrent: 2, HTTPS: 0.3, Faults: faults, Modes: modes}, 2},
	}
	for _, tc := range throttled {
		if !want(tc.name) {
			continue
		}
		r, err := simrun.Execute(ctx, tc.sc, simrun.Options{Scale: tc.scale, Out: tmp, ID: "b",
			Job: job.Options{Schedule: schedule.Config{Concurrency: 64}}})
		if err != nil {
			return fmt.Errorf("%s: %w", tc.name, err)
		}
		s := r.Report.Summary
		add(row{tc.name, "makespan ÷ lower bound", "≤ 1.2",
			fmt.Sprintf("%.2f (%.1f s ÷ %.1f s on %s)", r.Ratio(), s.MakespanS, r.LowerBound, r.LowerBoundDomain), verdict(r.Ratio() <= 1.2)})
		add(row{tc.name, "requests answered 429/503", "≤ 1 %",
			fmt.Sprintf("%.2f %% (%d of %d)", 100*r.ThrottledShare(), r.Throttled, r.Requests), verdict(r.ThrottledShare() <= 0.01)})
		add(row{tc.name, "over a hidden concurrency cap", "0", fmt.Sprint(r.Violations), verdict(r.Violations == 0)})
	}

	if want("unthrottled") {
		sc := simweb.Scenario{Seed: 3, Domains: 1000, URLs: 10000, RateMin: 10000, RateMax: 10000, BurstFactor: 1, MaxConcurrent: -1, Latency: -1}
		r, err := simrun.Execute(ctx, sc, simrun.Options{Scale: 1, Out: tmp, ID: "u",
			Job: job.Options{Schedule: schedule.Config{Concurrency: 256}}})
		if err != nil {
			return fmt.Errorf("unthrottled: %w", err)
		}
		ups := float64(len(r.URLs)) / r.Wall.Seconds()
		add(row{"unthrottled 10k URLs / 1,000 hosts", "URLs/s (wall, " + fmt.Sprint(runtime.NumCPU()) + " cores)", "≥ 2,000",
			fmt.Sprintf("%.0f (%d URLs in %.2f s)", ups, len(r.URLs), r.Wall.Seconds()), verdict(ups >= 2000)})
	}

	if want("rss") {
		// The checker runs as its own process against a simulated web in
		// this one, so its peak RSS is the checker's alone.
		bin := filepath.Join(tmp, "urlcheck")
		if out, err := exec.Command("go", "build", "-o", bin, "./cmd/urlcheck").CombinedOutput(); err != nil {
			return fmt.Errorf("building urlcheck: %v\n%s", err, out)
		}
		web, urls, _, err := simrun.Start(simweb.Scenario{Seed: 5, Domains: 5000, URLs: 100000,
			RateMin: 1000, RateMax: 1000, MaxConcurrent: -1, Latency: -1}, clock.Real{})
		if err != nil {
			return err
		}
		list := filepath.Join(tmp, "100k.txt")
		if err := os.WriteFile(list, []byte(strings.Join(urls, "\n")), 0o644); err != nil {
			return err
		}
		cmd := exec.Command(bin, "run", "-connect-to", web.HTTPAddr(), "-allow-private", "-no-rate-cache", "-quiet",
			"-concurrency", "256", "-out", tmp, list)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		web.Close()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() > 1 {
			return fmt.Errorf("urlcheck run at 100k: %v\n%s", err, out)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		mb := float64(ru.Maxrss) / 1024 // Linux reports KiB
		add(row{"100k URLs / 5,000 domains (urlcheck run, own process)", "peak RSS", "≤ 200 MB",
			fmt.Sprintf("%.0f MB (%.1f s)", mb, time.Since(start).Seconds()), verdict(mb <= 200)})
	}

	if want("split") {
		var b strings.Builder
		for i := range 1_000_000 {
			fmt.Fprintf(&b, "https://www.site%d.example.com/path/%d?q=%d\n", i%100_000, i, i%7)
		}
		list := b.String()
		start := time.Now()
		sp := groups.NewSplitter(50)
		err := urllist.Read(strings.NewReader(list), urllist.Options{Format: urllist.FormatText}, func(e urllist.Entry) error {
			if e.Err == "" {
				sp.Add(e.Domain, e.URL, e.Line)
			}
			return nil
		})
		if err != nil {
			return err
		}
		gs := sp.Groups("bench")
		el := time.Since(start)
		add(row{"1,000,000 URLs over 100,000 domains", "parse + split", "≤ 3 s",
			fmt.Sprintf("%.2f s (%d groups)", el.Seconds(), len(gs)), verdict(el <= 3*time.Second)})
	}

	var ops []string
	if want(serverlessName) {
		rs, lines, err := serverless(ctx, serverlessName, true)
		if err != nil {
			return err
		}
		for _, r := range rs {
			add(r)
		}
		ops = lines
	}
	if want(serverlessCleanName) {
		rs, _, err := serverless(ctx, serverlessCleanName, false)
		if err != nil {
			return err
		}
		for _, r := range rs {
			add(r)
		}
	}
	if want(ingestName) {
		rs, err := ingestMillion(ctx)
		if err != nil {
			return err
		}
		for _, r := range rs {
			add(r)
		}
	}

	fmt.Println("| scenario | figure | target | measured | |")
	fmt.Println("|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s | %s |\n", r.name, r.figure, r.target, r.value, r.verdict)
	}
	if len(ops) > 0 {
		fmt.Printf("\nAWS API calls of the serverless job (%d URLs, set-up excluded):\n\n", serverlessURLs)
		for _, l := range ops {
			fmt.Println("    " + l)
		}
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**below target**"
}
