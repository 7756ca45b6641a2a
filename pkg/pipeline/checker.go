package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/urlcheck/urlcheck/pkg/bucket"
	"github.com/urlcheck/urlcheck/pkg/check"
	"github.com/urlcheck/urlcheck/pkg/groups"
	"github.com/urlcheck/urlcheck/pkg/jobs"
	"github.com/urlcheck/urlcheck/pkg/queue"
	"github.com/urlcheck/urlcheck/pkg/queue/sqsqueue"
	"github.com/urlcheck/urlcheck/pkg/results"
	"github.com/urlcheck/urlcheck/pkg/schedule"
)

// checkerState is built once per process (a Lambda execution environment
// serves many invocations): the limiter over the domains table and the
// HTTP checker with its connection pool and NXDOMAIN cache.
type checkerState struct {
	lim  *bucket.Limiter
	chk  schedule.Checker
	seen *seenCache
}

// stateCache remembers job states for a few seconds, so that a batch costs
// one job read per job, not per message, and a cancel takes effect within
// stateTTL.
type stateCache struct {
	mu sync.Mutex
	m  map[string]cachedState
}

type cachedState struct {
	state jobs.State
	at    time.Time
}

const stateTTL = 5 * time.Second

// seenCache remembers, per job and progress shard, the lines counted as of
// this process's last count (jobs.Store.RecordSeen returns them with every
// write). A record whose lines are all counted is dropped unworked, and
// counted lines are taken out of a record before it is worked: this ends
// the duplicate chains that at-least-once delivery and re-sent remainders
// would otherwise keep alive (a message delivered twice would have both
// copies re-send their rest, and so on). Counted lines have their results
// stored, so skipping them loses nothing.
type seenCache struct {
	mu sync.Mutex
	m  map[string]map[int]map[int]bool // job -> shard -> line -> counted
}

const seenJobs = 64 // jobs remembered before the cache starts over

func (c *seenCache) add(job string, shard int, lines []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || (c.m[job] == nil && len(c.m) >= seenJobs) {
		c.m = map[string]map[int]map[int]bool{}
	}
	if c.m[job] == nil {
		c.m[job] = map[int]map[int]bool{}
	}
	set := c.m[job][shard]
	if set == nil {
		set = make(map[int]bool, len(lines))
		c.m[job][shard] = set
	}
	for _, l := range lines {
		set[l] = true
	}
}

// unseen returns g's items whose lines are not all counted yet.
func (c *seenCache) unseen(g groups.Group) []groups.Item {
	c.mu.Lock()
	defer c.mu.Unlock()
	set := c.m[g.Job][g.Shard]
	if len(set) == 0 {
		return g.Items
	}
	var out []groups.Item
	for _, it := range g.Items {
		for _, l := range it.Lines {
			if !set[l] {
				out = append(out, it)
				break
			}
		}
	}
	return out
}

var initMu sync.Mutex

func (d *Deps) init() {
	initMu.Lock()
	defer initMu.Unlock()
	if d.checker != nil {
		return
	}
	limits := d.Limits
	if limits.LeaseTTL <= 0 {
		// A lease outlives its requests only when its holder died (a killed
		// invocation, or a grant whose answer was lost and retried): let it
		// expire soon after the slowest request it can cover, so the
		// domain's slots come back within a minute instead of the local
		// default of two.
		total := d.Check.TotalTimeout
		if total <= 0 {
			total = 30 * time.Second // check.Config's default
		}
		limits.LeaseTTL = limits.Horizon + total + 5*time.Second
		if limits.Horizon <= 0 {
			limits.LeaseTTL += time.Second
		}
	}
	lim := bucket.NewLimiter(d.Rates, limits, d.clock(), d.owner())
	chk := d.Checker
	if chk == nil {
		cfg := d.Check
		if cfg.Clock == nil {
			cfg.Clock = d.clock()
		}
		if cfg.BeforeFollowUp == nil {
			cfg.BeforeFollowUp = schedule.FollowUpPacer(lim, d.Keyer, d.clock())
		}
		chk = check.New(cfg)
	}
	d.checker = &checkerState{lim: lim, chk: chk, seen: &seenCache{}}
	d.jobCache = &stateCache{m: map[string]cachedState{}}
}

// jobState returns job's state, from the cache when fresh.
func (d *Deps) jobState(ctx context.Context, id string) (jobs.State, error) {
	now := d.clock().Now()
	c := d.jobCache
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < stateTTL {
		return e.state, nil
	}
	j, err := d.Jobs.Get(ctx, id)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.m[id] = cachedState{state: j.State, at: now}
	c.mu.Unlock()
	return j.State, nil
}

// msgKey carries the SQS message ID through schedule.Scheduler.Handle to
// the batch queue, so that what a message sends is known to be its own.
type msgKey struct{}

// outcome is what happened to one record of the batch.
type outcome struct {
	rec     *events.SQSMessage
	group   groups.Group
	err     error         // failed: the message stays for redelivery
	deleted bool          // done with: Lambda deletes it
	hide    time.Duration // hide for this long (ChangeVisibility)
	hidden  bool
	sendErr error  // a re-send failed (set by the batcher)
	body    []byte // the record's body less its counted lines; nil = unchanged
	part    part
}

// batchQueue is the queue.Queue a Scheduler sees inside an invocation. It
// records what each message asked for: re-sends and visibility changes go
// out at once through a batcher (SendMessageBatch and
// ChangeMessageVisibilityBatch of up to 10 entries), so that a domain's
// next round does not wait for the slowest check of the batch; deletes are
// left to Lambda (the record is simply not reported as a failure). A
// message is never acknowledged before its re-sends are on the queue, so an
// early re-send can at worst duplicate URLs of a message that later fails,
// and duplicates are counted once.
type batchQueue struct {
	mu      sync.Mutex
	outs    map[string]*outcome // by message ID
	rcpt    map[string]string   // receipt -> message ID
	out     *batcher
	recycle int // receive count from which a hide becomes a re-send
}

func (q *batchQueue) byCtx(ctx context.Context) *outcome {
	id, _ := ctx.Value(msgKey{}).(string)
	return q.outs[id]
}

func (q *batchQueue) Send(ctx context.Context, body []byte, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	o := q.byCtx(ctx)
	if o == nil {
		return errors.New("batch queue: send outside a message")
	}
	q.out.send(o, sqsqueue.Outgoing{Body: append([]byte(nil), body...), Delay: max(delay, 0)})
	return nil
}

func (q *batchQueue) Receive(context.Context, int, time.Duration, time.Duration) ([]queue.Message, error) {
	return nil, errors.New("batch queue: Receive is not supported inside an invocation")
}

func (q *batchQueue) Delete(ctx context.Context, receipt string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	o := q.outs[q.rcpt[receipt]]
	if o == nil {
		return fmt.Errorf("batch queue: delete: %w", queue.ErrReceiptInvalid)
	}
	o.deleted = true
	return nil
}

func (q *batchQueue) ChangeVisibility(ctx context.Context, receipt string, timeout time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	o := q.outs[q.rcpt[receipt]]
	if o == nil {
		return fmt.Errorf("batch queue: change visibility: %w", queue.ErrReceiptInvalid)
	}
	timeout = max(timeout, 0)
	if receiveCount(o.rec) >= q.recycle {
		// Recycle: the same body as a new message (receive count 0), so
		// that waiting on a domain never counts toward maxReceiveCount.
		o.deleted = true
		q.out.send(o, sqsqueue.Outgoing{Body: []byte(o.rec.Body), Delay: timeout})
		return nil
	}
	o.hidden, o.hide = true, timeout
	q.out.hide(o, sqsqueue.Visibility{Receipt: receipt, Timeout: timeout})
	return nil
}

// partRecorder is the schedule.Recorder of one message: it keeps raw
// request events for the part.
type partRecorder struct {
	mu  sync.Mutex
	p   *part
	now func() time.Time
}

func (r *partRecorder) Request(domain string, status int, throttled bool) {
	r.mu.Lock()
	r.p.requests = append(r.p.requests, request{Domain: domain, Status: status, Throttled: throttled, At: r.now().UnixMilli()})
	r.mu.Unlock()
}

func (r *partRecorder) Retry() {
	r.mu.Lock()
	r.p.retries++
	r.mu.Unlock()
}

// HandleSQS is the checker: the handler of the SQS event source. Each
// record is one domain group (package groups). For each it takes what the
// domain's token bucket grants now (one conditional write to the domains
// table), checks those URLs paced within the grant (at most the limiter's
// horizon, about a second), settles the grant and the learned rate, and
// hands back the rest: re-sent with a delay equal to the bucket's wait or
// the retry backoff (Retry-After when the host sent one), or, when nothing
// was granted, hidden for that wait with ChangeMessageVisibility. No
// invocation waits for a domain beyond the grant it holds.
//
// Per job and invocation, the results go to S3 as one part object, then
// the lines are counted in the job's progress shards (idempotently); the
// invocation whose count completes the job summarizes it. Only then are the
// re-sends and visibility changes made, in batches, and the records that
// must stay on the queue (failed, or hidden) are reported in the partial
// batch response; Lambda deletes the others.
//
// A record that does not decode, or whose handling fails or panics, is
// reported as a failure and hidden for a short backoff; after the queue's
// maxReceiveCount it goes to the dead-letter queue. Throttling alone never
// sends a message there: a message to be hidden again after RecycleAfter
// receives is re-sent as a fresh message instead. Records of jobs that are
// cancelled, finished or unknown are dropped. The error return is always
// nil: failures are per record.
func (d *Deps) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	d.init()
	q := &batchQueue{outs: map[string]*outcome{}, rcpt: map[string]string{}, recycle: d.recycleAfter(),
		out: newBatcher(ctx, d)}
	byJob := map[string][]*outcome{}
	var all []*outcome
	for i := range ev.Records {
		rec := &ev.Records[i]
		o := &outcome{rec: rec}
		all = append(all, o)
		q.outs[rec.MessageId] = o
		q.rcpt[rec.ReceiptHandle] = rec.MessageId
		g, err := groups.Decode([]byte(rec.Body))
		if err != nil {
			o.err = fmt.Errorf("message %s: %w", rec.MessageId, err)
			continue
		}
		if items := d.checker.seen.unseen(g); len(items) < len(g.Items) {
			if len(items) == 0 {
				o.deleted = true // a duplicate: all of it is counted
				continue
			}
			g.Items = items
			if o.body, err = groups.Encode(g); err != nil {
				o.err = fmt.Errorf("message %s: %w", rec.MessageId, err)
				continue
			}
		}
		o.group = g
		byJob[g.Job] = append(byJob[g.Job], o)
	}
	start := d.clock().Now()
	var wg sync.WaitGroup
	for job, outs := range byJob {
		state, err := d.jobState(ctx, job)
		switch {
		case errors.Is(err, jobs.ErrNotFound):
			d.log().Warn("checker: dropping messages of an unknown job", "job", job, "messages", len(outs))
			for _, o := range outs {
				o.deleted = true
			}
			continue
		case err != nil:
			for _, o := range outs {
				o.err = fmt.Errorf("reading job %s: %w", job, err)
			}
			continue
		case state != jobs.Splitting && state != jobs.Running:
			for _, o := range outs {
				o.deleted = true // cancelled or finished: drop
			}
			continue
		}
		byDomain := map[string][]*outcome{}
		for _, o := range outs {
			byDomain[o.group.Domain] = append(byDomain[o.group.Domain], o)
		}
		for _, same := range byDomain {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d.handleDomain(ctx, q, same, start)
			}()
		}
	}
	wg.Wait()
	q.out.close()
	for _, o := range all {
		if o.err == nil && o.sendErr != nil {
			o.err = o.sendErr
		}
	}
	for job, outs := range byJob {
		d.commitJob(ctx, job, outs)
	}
	d.backoffFailed(ctx, all)
	var resp events.SQSEventResponse
	for _, o := range all {
		if o.err != nil || o.hidden || !o.deleted {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: o.rec.MessageId})
		}
		if o.err != nil {
			d.log().Warn("checker: message failed", "message", o.rec.MessageId, "receives", receiveCount(o.rec), "err", o.err)
		}
	}
	return resp, nil
}

// sameDomainBudget is how long an invocation keeps working through the
// records of one domain, one after the other, before it hands the rest back.
const sameDomainBudget = 20 * time.Second

// handleDomain works through the records of one domain one at a time: the
// domain's bucket grants each the tokens of about a second, so taking them
// in turn keeps the domain busy at its rate without the records racing for
// the same bucket item (every lost race is a billed conditional write).
// Once the bucket refuses one, the rest are hidden for the same wait
// without asking again; after sameDomainBudget they are handed back too.
func (d *Deps) handleDomain(ctx context.Context, q *batchQueue, outs []*outcome, start time.Time) {
	var refused *outcome
	for _, o := range outs {
		if refused != nil || d.clock().Now().Sub(start) > sameDomainBudget {
			wait := time.Second
			if refused != nil {
				wait = refused.hide
			}
			mctx := context.WithValue(ctx, msgKey{}, o.rec.MessageId)
			_ = q.ChangeVisibility(mctx, o.rec.ReceiptHandle, wait)
			continue
		}
		d.handleOne(ctx, q, o)
		if o.hidden && o.err == nil {
			refused = o
		}
	}
}

// handleOne runs one record through a Scheduler of its own, recovering a
// panic into the record's error.
func (d *Deps) handleOne(ctx context.Context, q *batchQueue, o *outcome) {
	defer func() {
		if p := recover(); p != nil {
			o.err = fmt.Errorf("panic handling message %s: %v\n%s", o.rec.MessageId, p, debug.Stack())
		}
	}()
	rec := &partRecorder{p: &o.part, now: d.clock().Now}
	var emu sync.Mutex
	emit := func(r results.Result) {
		emu.Lock()
		o.part.results = append(o.part.results, r)
		emu.Unlock()
	}
	sch := schedule.New(q, d.checker.lim, d.checker.chk, rec, emit, nil, d.Schedule)
	mctx := context.WithValue(ctx, msgKey{}, o.rec.MessageId)
	body := o.body
	if body == nil {
		body = []byte(o.rec.Body)
	}
	err := sch.Handle(mctx, queue.Message{ID: o.rec.MessageId, Body: body, Receipt: o.rec.ReceiptHandle,
		ReceiveCount: receiveCount(o.rec)})
	if err != nil {
		o.err = err
	}
}

// commitJob stores what the job's messages found: one part object, then the
// counts per shard. A failure fails every message of the job that produced
// something (they are redelivered and their lines counted once later).
func (d *Deps) commitJob(ctx context.Context, job string, outs []*outcome) {
	var p part
	byShard := map[int][]jobs.Counted{}
	var mine []*outcome
	for _, o := range outs {
		if o.err != nil || o.part.empty() {
			continue
		}
		mine = append(mine, o)
		p.add(&o.part)
		for _, r := range o.part.results {
			byShard[o.group.Shard] = append(byShard[o.group.Shard], jobs.Counted{Key: r.Line, Class: r.Class})
		}
	}
	if len(mine) == 0 {
		return
	}
	fail := func(err error) {
		for _, o := range mine {
			o.err = err
		}
	}
	if err := d.putPart(ctx, job, newPartKey(job, d.clock().Now()), &p); err != nil {
		fail(err)
		return
	}
	complete := false
	for shard, done := range byShard {
		if len(done) == 0 {
			continue
		}
		c, seen, err := d.Jobs.RecordSeen(ctx, job, shard, done)
		if err != nil {
			fail(fmt.Errorf("counting progress of job %s: %w", job, err))
			return
		}
		d.checker.seen.add(job, shard, seen)
		complete = complete || c
	}
	if complete {
		if err := d.finishJob(ctx, job); err != nil {
			// The counts are in; the summary can be redone by the status
			// check (stuck detection). The messages are done.
			d.log().Error("checker: summarizing failed", "job", job, "err", err)
		}
	}
}

// backoffFailed hides the failed records for a short, growing, jittered
// time, so that they are retried soon rather than after the queue's whole
// visibility timeout (and reach the dead-letter queue in minutes when they
// always fail).
func (d *Deps) backoffFailed(ctx context.Context, all []*outcome) {
	var vis []sqsqueue.Visibility
	for _, o := range all {
		if o.err == nil {
			continue
		}
		n := receiveCount(o.rec)
		back := time.Duration(min(60, 1<<min(n, 6))) * time.Second
		back = back/2 + time.Duration(rand.Int64N(int64(back/2)+1))
		vis = append(vis, sqsqueue.Visibility{Receipt: o.rec.ReceiptHandle, Timeout: back})
	}
	for _, err := range d.Queue.ChangeVisibilityEach(ctx, vis) {
		if err != nil && !errors.Is(err, queue.ErrReceiptInvalid) {
			d.log().Warn("checker: backing off a failed message", "err", err)
		}
	}
}

func receiveCount(rec *events.SQSMessage) int {
	n, _ := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	return n
}
