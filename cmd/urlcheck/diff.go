package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/urlcheck/urlcheck/pkg/diff"
	"github.com/urlcheck/urlcheck/pkg/results"
)

// defaultDiffMax is how many items per section the Markdown diff lists.
const defaultDiffMax = 20

type diffOpts struct {
	fs      *flag.FlagSet
	json    bool
	max     int
	factor  float64
	latency time.Duration
}

func diffFlags(out io.Writer) *diffOpts {
	o := &diffOpts{fs: flag.NewFlagSet("diff", flag.ContinueOnError)}
	fs := o.fs
	fs.SetOutput(out)
	fs.BoolVar(&o.json, "json", false, "print the diff as JSON instead of Markdown")
	fs.IntVar(&o.max, "max", defaultDiffMax, "Markdown: list at most `N` URLs per section (0: counts only, -1: all)")
	fs.Float64Var(&o.factor, "latency-factor", diff.DefaultLatencyFactor, "a latency regression is new > old × this factor")
	fs.DurationVar(&o.latency, "latency-min", diff.DefaultLatencyMin, "... and new - old latency > this (0: no minimum)")
	fs.Usage = func() {
		fmt.Fprintln(out, `Usage: urlcheck diff [flags] OLD NEW

Compares two scans of a list. OLD and NEW are result directories (OUT/<job-id>)
or their summary.json or results.jsonl. Prints what broke, was fixed, is still
broken, changed redirect target, status or latency, was added or removed.
Exit status: 0 no changes (still-broken URLs do not count), 1 changes, 2 error.`)
		fs.PrintDefaults()
	}
	return o
}

// cmdDiff implements "urlcheck diff"; it reports whether anything changed.
func cmdDiff(_ context.Context, args []string, stdout, stderr io.Writer) (bool, error) {
	o := diffFlags(stderr)
	if err := o.fs.Parse(args); err != nil {
		return false, err
	}
	if o.fs.NArg() != 2 {
		o.fs.Usage()
		return false, fmt.Errorf("diff takes two scans, OLD and NEW, got %d arguments: %w", o.fs.NArg(), errUsage)
	}
	if o.factor <= 0 {
		return false, fmt.Errorf("-latency-factor must be above 0, got %v: %w", o.factor, errUsage)
	}
	oldPath, newPath := o.fs.Arg(0), o.fs.Arg(1)
	oldRes, oldSum, err := diff.Load(oldPath)
	if err != nil {
		return false, err
	}
	newRes, newSum, err := diff.Load(newPath)
	if err != nil {
		return false, err
	}
	opts := diff.Options{LatencyFactor: o.factor, LatencyMin: o.latency, Since: sinceFrom(oldPath, stderr)}
	if o.latency == 0 {
		opts.LatencyMin = -1 // an explicit 0 means no minimum, not the default
	}
	d := diff.Compute(oldRes, newRes, oldSum, newSum, opts)
	if o.json {
		data, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return false, fmt.Errorf("encode the diff: %w", err)
		}
		if _, err := fmt.Fprintf(stdout, "%s\n", data); err != nil {
			return false, fmt.Errorf("write the diff: %w", err)
		}
	} else if _, err := io.WriteString(stdout, d.Markdown(o.max)); err != nil {
		return false, fmt.Errorf("write the diff: %w", err)
	}
	return !d.Empty(), nil
}

// scanDir is the directory of a scan path as accepted by diff.Load.
func scanDir(path string) string {
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		return filepath.Dir(path)
	}
	return path
}

// sinceFrom returns the "broken since" times recorded in the diff.json of
// the old scan (written when it ran with -baseline), or nil when it has
// none. A diff.json that cannot be read is reported on stderr and ignored.
func sinceFrom(oldPath string, stderr io.Writer) map[string]time.Time {
	prev, err := diff.LoadDiff(filepath.Join(scanDir(oldPath), diff.FileName))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "urlcheck: ignoring the old scan's broken-since times: %v\n", err)
		}
		return nil
	}
	return prev.BrokenSince()
}

// baseline is a scan loaded for run -baseline.
type baseline struct {
	path string
	res  []results.Result
	sum  results.Summary
}

// loadBaseline reads the -baseline scan before the run starts, so that a
// bad path fails fast.
func loadBaseline(path string) (*baseline, error) {
	rs, sum, err := diff.Load(path)
	if err != nil {
		return nil, fmt.Errorf("-baseline: %w", err)
	}
	return &baseline{path: path, res: rs, sum: sum}, nil
}

// writeBaselineDiff compares the finished run in dir with b, writes
// dir/diff.json and, unless quiet, prints the Markdown diff to stderr.
func writeBaselineDiff(b *baseline, dir string, quiet bool, stderr io.Writer) error {
	rs, sum, err := diff.Load(dir)
	if err != nil {
		return fmt.Errorf("diff against the baseline: %w", err)
	}
	d := diff.Compute(b.res, rs, b.sum, sum, diff.Options{Since: sinceFrom(b.path, stderr)})
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("diff against the baseline: encode: %w", err)
	}
	p := filepath.Join(dir, diff.FileName)
	if err := os.WriteFile(p, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("diff against the baseline: %w", err)
	}
	if !quiet {
		fmt.Fprintf(stderr, "\nChanges since %s (also in %s):\n%s", b.path, p, d.Markdown(defaultDiffMax))
	}
	return nil
}
