// Package job runs one urlcheck job on one machine, end to end: it reads the
// list, splits it into registrable-domain groups, puts them on an in-memory
// queue with SQS semantics, drains the queue with the scheduler against an
// in-memory limiter store, and writes results.jsonl, results.csv and
// summary.json. The serverless pipeline wires the same packages to SQS,
// DynamoDB and S3 instead.
package job

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/urlcheck/urlcheck/pkg/bucket"
	"github.com/urlcheck/urlcheck/pkg/check"
	"github.com/urlcheck/urlcheck/pkg/clock"
	"github.com/urlcheck/urlcheck/pkg/groups"
	"github.com/urlcheck/urlcheck/pkg/queue"
	"github.com/urlcheck/urlcheck/pkg/results"
	"github.com/urlcheck/urlcheck/pkg/schedule"
	"github.com/urlcheck/urlcheck/pkg/urllist"
)

// Options configure a job. Only Input is required.
type Options struct {
	Input io.Reader       // the URL list
	List  urllist.Options // format, file name for sniffing, keyer, limits
	ID    string          // job id; default a UTC timestamp like 20260102-150405
	Out   string          // results go to Out/<ID>/; default "out"

	GroupSize int              // URLs per group (queue message); default 50
	Limits    bucket.Config    // per-domain rate, burst, concurrency cap, AIMD
	Schedule  schedule.Config  // global concurrency, retries; its Clock is used throughout
	Store     bucket.Store     // limiter state; default a fresh bucket.MemStore
	Check     check.Config     // used to build the checker when Checker is nil
	Checker   schedule.Checker // default check.New(Check)

	// Progress, when set, is called about every ProgressEvery (wall time)
	// while the job runs, and once at the end.
	Progress      func(p schedule.Progress, done, broken int)
	ProgressEvery time.Duration
}

// Report is what a finished job produced.
type Report struct {
	Dir     string          // directory holding the result files
	Summary results.Summary // also written as summary.json
}

// Run runs a job to the end. One bad line never fails it: it becomes an
// "invalid" result. Errors are for an unreadable list (wrapped, naming the
// line where known), the output directory, or ctx.
func Run(ctx context.Context, o Options) (Report, error) {
	clk := o.Schedule.Clock
	if clk == nil {
		clk = clock.Real{}
		o.Schedule.Clock = clk
	}
	started := clk.Now()
	if o.ID == "" {
		o.ID = started.UTC().Format("20060102-150405")
	}
	if o.Out == "" {
		o.Out = "out"
	}
	dir := filepath.Join(o.Out, o.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Report{}, fmt.Errorf("creating the output directory: %w", err)
	}
	w, err := results.Create(dir)
	if err != nil {
		return Report{}, err
	}
	defer w.Close()
	tally := results.NewTally(started, results.WithClock(clk))
	var (
		wmu  sync.Mutex
		werr error
	)
	emit := func(r results.Result) {
		tally.Add(r)
		if err := w.Write(r); err != nil {
			// A full disk must not pass silently, but it cannot stop workers
			// mid-check either: remember the first error.
			wmu.Lock()
			if werr == nil {
				werr = err
			}
			wmu.Unlock()
		}
	}

	sp := groups.NewSplitter(o.GroupSize)
	err = urllist.Read(o.Input, o.List, func(e urllist.Entry) error {
		if e.Err != "" {
			emit(results.Result{Line: e.Line, URL: e.Raw, Domain: e.Domain, Class: string(check.ClassInvalid), Error: e.Err, CheckedAt: clk.Now()})
			return nil
		}
		sp.Add(e.Domain, e.URL, e.Line)
		return nil
	})
	if err != nil {
		return Report{}, fmt.Errorf("reading the list: %w", err)
	}
	domains := sp.Domains()
	for d, n := range domains {
		tally.SetDomain(d, n)
	}

	q := queue.NewMem(queue.MemOptions{Clock: clk})
	for _, g := range sp.Groups(o.ID) {
		body, err := groups.Encode(g)
		if err != nil {
			return Report{}, fmt.Errorf("encoding the group of %s: %w", g.Domain, err)
		}
		if err := q.Send(ctx, body, 0); err != nil {
			return Report{}, fmt.Errorf("queueing the group of %s: %w", g.Domain, err)
		}
	}
	store := o.Store
	if store == nil {
		store = bucket.NewMemStore()
	}
	lim := bucket.NewLimiter(store, o.Limits, clk, "local")
	if o.Schedule.Keyer == nil {
		o.Schedule.Keyer = o.List.Keyer
	}
	chk := o.Checker
	if chk == nil {
		if o.Check.Clock == nil {
			o.Check.Clock = clk
		}
		if o.Check.BeforeFollowUp == nil {
			o.Check.BeforeFollowUp = schedule.FollowUpPacer(lim, o.Schedule.Keyer, clk)
		}
		c := check.New(o.Check)
		defer c.Close()
		chk = c
	}
	sch := schedule.New(q, lim, chk, tally, emit, domains, o.Schedule)

	stopProgress := o.startProgress(sch, tally)
	runErr := sch.Run(ctx)
	stopProgress()
	if runErr != nil {
		return Report{}, fmt.Errorf("job %s: %w", o.ID, runErr)
	}
	if err := w.Close(); err != nil {
		return Report{}, fmt.Errorf("writing results: %w", err)
	}
	if err := werr; err != nil {
		return Report{}, fmt.Errorf("writing results: %w", err)
	}
	sum := tally.Summary(o.ID, clk.Now(), func(d string) float64 {
		l, err := lim.Learned(context.WithoutCancel(ctx), d)
		if err != nil {
			return 0
		}
		return l.Rate
	})
	if err := results.WriteSummary(dir, sum); err != nil {
		return Report{}, err
	}
	return Report{Dir: dir, Summary: sum}, nil
}

func (o Options) startProgress(sch *schedule.Scheduler, tally *results.Tally) (stop func()) {
	if o.Progress == nil {
		return func() {}
	}
	every := o.ProgressEvery
	if every <= 0 {
		every = time.Second
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	report := func() {
		done, broken := tally.Done()
		o.Progress(sch.Progress(), done, broken)
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				report()
				return
			case <-t.C:
				report()
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
	}
}
