package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/urlcheck/urlcheck/pkg/jobs"
	"github.com/urlcheck/urlcheck/pkg/report"
	"github.com/urlcheck/urlcheck/pkg/results"
)

// learnedLookups caps the domains whose learned rate the summary reads from
// the domains table (the busiest ones); the others report 0.
const learnedLookups = 100

// finishJob moves a complete job from running to summarizing and, if this
// caller won that conditional transition, summarizes it. Exactly one caller
// wins, so the summary is written once.
func (d *Deps) finishJob(ctx context.Context, id string) error {
	won, err := d.Jobs.Transition(ctx, id, jobs.Running, jobs.Summarizing)
	if err != nil {
		return fmt.Errorf("job %s: running -> summarizing: %w", id, err)
	}
	if !won {
		return nil
	}
	return d.Summarize(ctx, id)
}

// Summarize merges the parts of a job in state summarizing into
// results/<job>/results.jsonl and results.csv (one result per input line,
// sorted by line; where a line has several results, from a message delivered
// twice, the one in the earliest part), writes results/<job>/report.html
// (package report: the broken URLs, up to its cap, and the summary's
// tables and timeline) and results/<job>/summary.json, and moves the job
// to done. It is safe to run again if it was interrupted
// (the files are overwritten with the same content). It returns an error
// (wrapped) when S3 or the job table fails, or when the job is not in
// summarizing.
func (d *Deps) Summarize(ctx context.Context, id string) error {
	job, err := d.Jobs.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("summarize %s: %w", id, err)
	}
	if job.State != jobs.Summarizing {
		return fmt.Errorf("summarize %s: job is %s, not %s: %w", id, job.State, jobs.Summarizing, jobs.ErrConflict)
	}
	keys, err := d.Objects.List(ctx, partsPrefix(id))
	if err != nil {
		return fmt.Errorf("summarize %s: listing parts: %w", id, err)
	}
	slices.Sort(keys)
	dir, err := os.MkdirTemp("", "urlcheck-summary-")
	if err != nil {
		return fmt.Errorf("summarize %s: %w", id, err)
	}
	defer os.RemoveAll(dir)
	w, err := results.Create(dir)
	if err != nil {
		return fmt.Errorf("summarize %s: %w", id, err)
	}
	defer w.Close()
	started := job.Created
	tally := results.NewTally(started)
	seen := map[int]bool{}
	dups := 0
	var broken []results.Result // what the report lists
	for _, k := range keys {
		if err := d.readPart(ctx, k, func(rec record) error {
			switch {
			case rec.Result != nil:
				if seen[rec.Result.Line] {
					dups++
					return nil
				}
				seen[rec.Result.Line] = true
				tally.Add(*rec.Result)
				if results.Broken(rec.Result.Class) && len(broken) < report.DefaultMaxBroken {
					broken = append(broken, *rec.Result)
				}
				return w.Write(*rec.Result)
			case rec.Request != nil:
				q := rec.Request
				tally.RequestAt(q.Domain, q.Status, q.Throttled, time.UnixMilli(q.At))
			case rec.Retries > 0:
				for range rec.Retries {
					tally.Retry()
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("summarize %s: %w", id, err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("summarize %s: %w", id, err)
	}
	if missing := job.Lines - len(seen); missing != 0 {
		d.log().Error("summarize: lines without a result", "job", id, "lines", job.Lines, "results", len(seen))
	}
	sum := tally.Summary(id, d.clock().Now(), d.learnedRates(ctx, tally))
	for _, name := range []string{results.JSONLFile, results.CSVFile} {
		if err := d.putFile(ctx, filepath.Join(dir, name), resultKey(id, name)); err != nil {
			return fmt.Errorf("summarize %s: %w", id, err)
		}
	}
	var page bytes.Buffer
	if err := report.Write(&page, report.Input{Summary: sum, Results: broken}); err != nil {
		return fmt.Errorf("summarize %s: %w", id, err)
	}
	if err := d.Objects.Put(ctx, resultKey(id, report.FileName), bytes.NewReader(page.Bytes()), "text/html; charset=utf-8"); err != nil {
		return fmt.Errorf("summarize %s: %w", id, err)
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return fmt.Errorf("summarize %s: encoding the summary: %w", id, err)
	}
	if err := d.Objects.Put(ctx, resultKey(id, results.SummaryFile), bytes.NewReader(append(b, '\n')), "application/json"); err != nil {
		return fmt.Errorf("summarize %s: %w", id, err)
	}
	if _, err := d.Jobs.Transition(ctx, id, jobs.Summarizing, jobs.Done); err != nil {
		return fmt.Errorf("summarize %s: summarizing -> done: %w", id, err)
	}
	d.log().Info("job done", "job", id, "lines", len(seen), "duplicates", dups, "parts", len(keys),
		"requests", sum.Requests, "throttled", sum.Throttled)
	return nil
}

func (d *Deps) readPart(ctx context.Context, key string, fn func(record) error) error {
	body, err := d.Objects.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("reading part: %w", err)
	}
	defer body.Close()
	if err := decodePart(body, fn); err != nil {
		return fmt.Errorf("part %s: %w", key, err)
	}
	return nil
}

func (d *Deps) putFile(ctx context.Context, path, key string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	ct := "application/x-ndjson"
	if filepath.Ext(path) == ".csv" {
		ct = "text/csv"
	}
	return d.Objects.Put(ctx, key, f, ct)
}

// learnedRates reads the learned rates of the busiest domains of the tally.
func (d *Deps) learnedRates(ctx context.Context, tally *results.Tally) func(string) float64 {
	d.init()
	s := tally.Summary("", time.Time{}, nil)
	rates := map[string]float64{}
	for i, ds := range s.Domains {
		if i == learnedLookups {
			break
		}
		if l, err := d.checker.lim.Learned(ctx, ds.Domain); err == nil {
			rates[ds.Domain] = l.Rate
		}
	}
	return func(domain string) float64 { return rates[domain] }
}
