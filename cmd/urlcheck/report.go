package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/urlcheck/urlcheck/pkg/diff"
	"github.com/urlcheck/urlcheck/pkg/report"
)

type reportOpts struct {
	fs       *flag.FlagSet
	baseline string
	out      string
}

func reportFlags(out io.Writer) *reportOpts {
	o := &reportOpts{fs: flag.NewFlagSet("report", flag.ContinueOnError)}
	o.fs.SetOutput(out)
	o.fs.StringVar(&o.baseline, "baseline", "", "an earlier scan (result directory, or its summary.json or results.jsonl) to report the changes against")
	o.fs.StringVar(&o.out, "o", "", "write the report to this file (default DIR/"+report.FileName+")")
	o.fs.Usage = func() {
		fmt.Fprintln(out, `Usage: urlcheck report [-baseline DIR] [-o FILE] DIR

Writes one self-contained HTML page (no network access needed to view it) for the
scan in DIR (a result directory, or its summary.json or results.jsonl): counts by
class, the broken URLs, the domains, a timeline of the busiest domains' request
rates and, with -baseline, what changed since an earlier scan. Prints the path.`)
		o.fs.PrintDefaults()
	}
	return o
}

// cmdReport implements `urlcheck report`. It never reports broken URLs
// through its exit status: 0 when the report was written, 2 otherwise.
func cmdReport(_ context.Context, args []string, stdout, stderr io.Writer) (bool, error) {
	o := reportFlags(stderr)
	if err := o.fs.Parse(args); err != nil {
		return false, err
	}
	if o.fs.NArg() != 1 {
		return false, fmt.Errorf("report wants one result DIR: %w", errUsage)
	}
	src := o.fs.Arg(0)
	rs, sum, err := diff.Load(src)
	if err != nil {
		return false, fmt.Errorf("report: %w", err)
	}
	in := report.Input{Summary: sum, Results: rs}
	if o.baseline != "" {
		ors, osum, err := diff.Load(o.baseline)
		if err != nil {
			return false, fmt.Errorf("report: baseline: %w", err)
		}
		d := diff.Compute(ors, rs, osum, sum, diff.Options{})
		in.Diff = &d
	}
	dest := o.out
	if dest == "" {
		dir := src
		if fi, err := os.Stat(src); err == nil && !fi.IsDir() {
			dir = filepath.Dir(src)
		}
		dest = filepath.Join(dir, report.FileName)
	}
	if err := writeReport(dest, in); err != nil {
		return false, err
	}
	fmt.Fprintln(stdout, dest)
	return false, nil
}

// writeReport renders in to path atomically: into a temporary file in the
// same directory, renamed over path once complete.
func writeReport(path string, in report.Input) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".report-*.html")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // fails harmlessly once renamed
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := report.Write(bw, in); err != nil {
		f.Close()
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("report: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
