// Package schedule runs a job's domain groups through the queue, the
// per-domain limiter and the checker, and hands out one result per input line.
//
// It is parallel across registrable domains and gated within one: a worker
// receives a group, asks the limiter for the tokens released within a short
// horizon and for concurrency slots, checks that many URLs paced at the
// domain's rate, and sends the rest back to the queue with a delay equal to
// the domain's wait. A worker never waits on a slow domain: with nothing
// granted it hides the message for the wait (visibility-timeout backoff) and
// takes another. Throttles (429/503) feed the learned rate and the URL is
// retried after Retry-After or full-jitter backoff; timeouts and resets are
// retried a bounded number of times under a retry budget; other failures are
// final.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/urlcheck/urlcheck/pkg/backoff"
	"github.com/urlcheck/urlcheck/pkg/bucket"
	"github.com/urlcheck/urlcheck/pkg/check"
	"github.com/urlcheck/urlcheck/pkg/clock"
	"github.com/urlcheck/urlcheck/pkg/groups"
	"github.com/urlcheck/urlcheck/pkg/queue"
	"github.com/urlcheck/urlcheck/pkg/results"
	"github.com/urlcheck/urlcheck/pkg/urlnorm"
)

// Checker checks one URL (one attempt, redirects followed). *check.Checker
// implements it.
type Checker interface {
	Check(ctx context.Context, rawURL string) check.Outcome
}

// Knower is implemented by checkers that can settle some URLs without
// sending anything (for *check.Checker: hosts already known not to resolve).
// Such URLs are finished without taking a token from their domain.
type Knower interface {
	Known(rawURL string) (check.Outcome, bool)
}

// Recorder counts the requests a check sent and the retries scheduled.
// *results.Tally implements it; the serverless checker records raw request
// events instead, to merge them across invocations.
type Recorder interface {
	// Request counts one HTTP request to domain that got status (0 when no
	// response), throttled when it was 429 or 503.
	Request(domain string, status int, throttled bool)
	// Retry counts one retry scheduled.
	Retry()
}

// Config tunes the scheduler. Durations are in the injected clock's time.
type Config struct {
	Concurrency int // global cap on requests in flight across all domains; default 64
	// Workers is how many groups are worked on at once. A worker spends
	// most of a grant waiting for its paced send times, so there are many
	// more workers than requests in flight; default max(256, 4×Concurrency).
	Workers      int
	Visibility   time.Duration   // how long a received group stays hidden while a worker holds it; default 5m
	MaxThrottles int             // a URL answered 429 this many times is reported rate_limited; default 20
	Backoff      backoff.Policy  // Retry-After clamp, full-jitter backoff and attempt cap for transient failures
	RetryBudget  *backoff.Budget // caps retries of timeouts/resets across the job; nil = 20 % of first attempts + 10
	Clock        clock.Clock     // nil = clock.Real{}
	Rand         func() float64  // jitter source in [0,1); nil = math/rand/v2
	// StragglerWait: once a grant's requests are all sent, the worker waits
	// this long for the slowest before it settles the rest and requeues the
	// group's other URLs; default 1s.
	StragglerWait time.Duration
	// TimeoutGrace: a request that timed out keeps its concurrency slot this
	// much longer, as the host may not yet have noticed we left; default 1s.
	TimeoutGrace time.Duration
	// Keyer maps hosts to registrable domains, for charging redirect hops to
	// the domain they went to; nil keys by eTLD+1 with no overrides.
	Keyer *urlnorm.Keyer
	// CriticalShare: a domain may probe for a higher rate only while its
	// remaining work (URLs / rate) is at least this share of the busiest
	// domain's; default 0.5. Domains off the critical path keep their rate and
	// so spend no requests on finding a limit the job does not need.
	CriticalShare float64
}

func (c Config) withDefaults() Config {
	if c.Concurrency <= 0 {
		c.Concurrency = 64
	}
	if c.Workers <= 0 {
		c.Workers = max(256, 4*c.Concurrency)
	}
	if c.Visibility <= 0 {
		c.Visibility = 5 * time.Minute
	}
	if c.MaxThrottles <= 0 {
		c.MaxThrottles = 20
	}
	if c.Backoff.MaxAttempts <= 0 {
		// A hung URL costs a whole timeout per attempt, and a job can end no
		// sooner than its slowest URL's attempts: try it at most twice.
		c.Backoff.MaxAttempts = 2
	}
	if c.Backoff.MaxRetryAfter <= 0 {
		c.Backoff.MaxRetryAfter = backoff.DefaultMaxRetryAfter
	}
	if c.RetryBudget == nil {
		c.RetryBudget = backoff.NewBudget(0.2, 10)
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	if c.TimeoutGrace <= 0 {
		c.TimeoutGrace = time.Second
	}
	if c.StragglerWait <= 0 {
		c.StragglerWait = time.Second
	}
	if c.CriticalShare <= 0 {
		c.CriticalShare = 0.5
	}
	return c
}

// Scheduler drains one job's groups from a queue.
type Scheduler struct {
	q     queue.Queue
	lim   *bucket.Limiter
	chk   Checker
	emit  func(results.Result)
	tally Recorder
	cfg   Config
	sem   chan struct{}

	total   int
	done    atomic.Int64 // unique URLs with a final result
	wasted  atomic.Int64 // receives that granted nothing
	recvs   atomic.Int64
	mu      sync.Mutex
	domains map[string]*domainState
	crit    atomic.Value // float64: busiest domain's remaining seconds
	critAt  atomic.Int64 // wall nanos of the last computation
}

type domainState struct {
	remaining int
	rate      float64
	waiting   bool // last grant was refused (paused or at its limit)
}

// Progress is a snapshot for the live progress line.
type Progress struct {
	Done, Total int // unique URLs with a final result / in the job
	Waiting     int // domains whose last ask was refused: waiting on their limit or a Retry-After
	Receives    int // queue receives so far
	Wasted      int // receives that checked nothing
	Visible     int // groups ready on the queue (-1 when the queue cannot say)
	Hidden      int // groups delayed or being worked on (-1 when unknown)
}

// New returns a Scheduler for a job of total unique URLs whose groups are
// (or will be) in q; domains maps each registrable domain to its number of
// unique URLs. emit is called once per input line, from many goroutines.
func New(q queue.Queue, lim *bucket.Limiter, chk Checker, tally Recorder, emit func(results.Result), domains map[string]int, cfg Config) *Scheduler {
	cfg = cfg.withDefaults()
	s := &Scheduler{q: q, lim: lim, chk: chk, emit: emit, tally: tally, cfg: cfg,
		sem: make(chan struct{}, cfg.Concurrency), domains: map[string]*domainState{}}
	start := lim.Config().Rate.Start
	for d, n := range domains {
		s.domains[d] = &domainState{remaining: n, rate: start}
		s.total += n
	}
	s.crit.Store(0.0)
	return s
}

// Progress returns the current progress.
func (s *Scheduler) Progress() Progress {
	s.mu.Lock()
	waiting := 0
	for _, d := range s.domains {
		if d.waiting && d.remaining > 0 {
			waiting++
		}
	}
	s.mu.Unlock()
	p := Progress{Done: int(s.done.Load()), Total: s.total, Waiting: waiting, Receives: int(s.recvs.Load()),
		Wasted: int(s.wasted.Load()), Visible: -1, Hidden: -1}
	if l, ok := s.q.(interface{ Len() (int, int) }); ok {
		p.Visible, p.Hidden = l.Len()
	}
	return p
}

// Run works until every unique URL has a final result, then returns nil; or
// until ctx is done (ctx.Err()), or a queue or store error that retrying
// cannot mend (wrapped).
func (s *Scheduler) Run(ctx context.Context) error {
	if s.total == 0 {
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for range s.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.worker(ctx, cancel)
		}()
	}
	wg.Wait()
	if s.done.Load() >= int64(s.total) {
		return nil
	}
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return ctx.Err()
}

var errFinished = errors.New("job finished")

func (s *Scheduler) worker(ctx context.Context, cancel context.CancelCauseFunc) {
	for ctx.Err() == nil {
		msgs, err := s.q.Receive(ctx, 1, s.cfg.Visibility, time.Second)
		if err != nil {
			if ctx.Err() == nil {
				cancel(fmt.Errorf("receiving from the queue: %w", err))
			}
			return
		}
		for _, m := range msgs {
			if err := s.Handle(ctx, m); err != nil && ctx.Err() == nil {
				cancel(err)
				return
			}
			if s.done.Load() >= int64(s.total) {
				cancel(errFinished)
				return
			}
		}
	}
}

// attempt is one URL of a grant.
type attempt struct {
	item  groups.Item
	out   check.Outcome // valid once done is true
	ran   bool
	done  atomic.Bool
	start time.Time
}

// batch is a grant being worked on.
type batch struct {
	atts []attempt
	wait func() // blocks until every launched attempt is done
	// late counts sends that went out well after their token's release
	// because slots (concurrency) or the global cap were the bottleneck.
	late, sent int
}

// Handle works on one received message (a group): it checks the URLs its
// domain's bucket grants now, settles the grant, emits final results, sends
// the group's other URLs back to the queue (delayed by the bucket's wait or
// the retry backoff) and deletes the message; when nothing is granted it only
// hides the message for the bucket's wait (ChangeVisibility). Run calls it
// for each message it receives; the serverless checker calls it for each
// record of an SQS batch, with a queue that defers the SQS calls.
// It returns an error (wrapped) when the limiter's store or the queue fails,
// or when the message does not decode (the message is then deleted); the
// message then stays on the queue to be redelivered.
func (s *Scheduler) Handle(ctx context.Context, m queue.Message) error {
	s.recvs.Add(1)
	g, err := groups.Decode(m.Body)
	if err != nil {
		// A message we cannot read would be redelivered forever: drop it
		// loudly. Nothing of ours produces one.
		_ = s.q.Delete(ctx, m.Receipt)
		return fmt.Errorf("message %s: %w", m.ID, err)
	}
	settled := false // some items were finished without a request
	if k, ok := s.chk.(Knower); ok {
		kept := g.Items[:0]
		for _, it := range g.Items {
			if o, known := k.Known(it.URL); known {
				settled = true
				it.Tries++
				s.finish(g.Domain, it, o)
				continue
			}
			kept = append(kept, it)
		}
		g.Items = kept
		if len(g.Items) == 0 {
			return s.delete(ctx, m, g.Domain)
		}
	}
	grant, err := s.lim.Acquire(ctx, g.Domain, len(g.Items))
	if err != nil {
		return fmt.Errorf("acquiring tokens for %s: %w", g.Domain, err)
	}
	if grant.N == 0 {
		s.wasted.Add(1)
		s.setWaiting(g.Domain, true)
		if settled {
			// The message still lists the finished items: replace it.
			if err := s.requeue(ctx, g, g.Items, grant.Wait); err != nil {
				return err
			}
			return s.delete(ctx, m, g.Domain)
		}
		err := s.q.ChangeVisibility(ctx, m.Receipt, s.jitter(grant.Wait))
		if err != nil && !errors.Is(err, queue.ErrReceiptInvalid) {
			return fmt.Errorf("hiding a group of %s: %w", g.Domain, err)
		}
		return nil
	}
	s.setWaiting(g.Domain, false)
	b := s.run(ctx, grant, g.Items[:grant.N])
	if ctx.Err() != nil {
		return nil // the message reappears after its visibility timeout
	}
	// Settle what has finished; stragglers (a hung host) keep their slots,
	// but the rest of the group goes back to the queue now, so one slow
	// response never holds up the domain's other URLs.
	var rest, stragglers []*attempt
	var done []*attempt
	for i := range b.atts {
		a := &b.atts[i]
		switch {
		case !a.ran:
			rest = append(rest, a)
		case a.done.Load():
			done = append(done, a)
		default:
			stragglers = append(stragglers, a)
		}
	}
	grant.Keep = len(stragglers)
	// Like TCP's congestion-window validation (RFC 7661): the rate may only
	// grow while it is what holds the domain back, that is when the group
	// wanted more than was granted and the sends kept to their tokens.
	rateBound := grant.N < len(g.Items) && b.late*2 <= b.sent
	if err := s.settle(ctx, g, grant, done, rateBound); err != nil {
		return err
	}
	items := make([]groups.Item, 0, len(rest)+len(g.Items)-grant.N)
	for _, a := range rest {
		items = append(items, a.item)
	}
	items = append(items, g.Items[grant.N:]...)
	if len(items) > 0 {
		// The next token after this grant, less the time the grant took.
		next := grant.Wait - s.cfg.Clock.Now().Sub(grant.At)
		if err := s.requeue(ctx, g, items, next); err != nil {
			return err
		}
	}
	if len(stragglers) > 0 {
		b.wait()
		if ctx.Err() != nil {
			return nil
		}
		grant.Keep = 0
		if err := s.settle(ctx, g, grant, stragglers, false); err != nil {
			return err
		}
	}
	return s.delete(ctx, m, g.Domain)
}

// settle accounts for finished attempts of one grant: results, retries,
// and the feedback to the learned rates of this domain and of any domain
// that redirects led to. It releases the grant's slots but grant.Keep.
// rateBound says the rate, not concurrency, limited this grant: only then
// may the learned rate grow.
func (s *Scheduler) settle(ctx context.Context, g groups.Group, grant bucket.Grant, atts []*attempt, rateBound bool) error {
	fb := bucket.Feedback{Backlogged: rateBound && s.backlogged(g.Domain)}
	var lat []time.Duration
	var retried []groups.Item
	var retryDelay time.Duration
	elsewhere := map[string]*bucket.Feedback{} // answers from domains that redirects led to
	other := func(d string) *bucket.Feedback {
		if elsewhere[d] == nil {
			elsewhere[d] = &bucket.Feedback{}
		}
		return elsewhere[d]
	}
	for _, a := range atts {
		o := a.out
		throttled := o.Status == 429 || o.Status == 503
		target := &fb // the feedback of the domain whose answer this was
		if o.FinalURL != "" {
			if d := s.key(o.FinalURL, g.Domain); d != g.Domain {
				target = other(d)
				fb.OK++ // this domain answered with a redirect
			}
		}
		switch {
		case throttled:
			target.Throttled++
			if ra, ok := backoff.ParseRetryAfter(o.RetryAfter, a.start, s.cfg.Backoff.MaxRetryAfter); ok {
				target.RetryAfter = max(target.RetryAfter, ra)
			}
		case o.Class == check.ClassTimeout:
			target.Timeouts++
		default:
			target.OK++
			if o.Status > 0 && target == &fb {
				lat = append(lat, o.Latency)
			}
		}
		it := a.item
		it.Tries++
		if it.Tries == 1 {
			s.cfg.RetryBudget.First()
		}
		s.countRequests(g.Domain, o)
		if retry, wait := s.retry(&it, o, a.start); retry {
			retried = append(retried, it)
			retryDelay = max(retryDelay, wait)
			s.tally.Retry()
			continue
		}
		s.finish(g.Domain, it, o)
	}
	fb.P95 = p95(lat)
	learned, err := s.lim.Settle(ctx, grant, fb)
	if err != nil {
		return fmt.Errorf("settling %s: %w", g.Domain, err)
	}
	s.setRate(g.Domain, learned.Rate)
	for d, f := range elsewhere {
		if f.Throttled == 0 && f.Timeouts == 0 {
			// Only congestion signals are worth a write to a domain this
			// grant does not hold: successes there only feed its probing.
			continue
		}
		if _, err := s.lim.Settle(ctx, bucket.Grant{Domain: d}, *f); err != nil {
			return fmt.Errorf("feeding back %s's answer to a redirect: %w", d, err)
		}
	}
	if len(retried) > 0 {
		// Retries wait for their own backoff (or Retry-After, which also
		// paused the domain in the limiter); the rest of the group does not.
		if err := s.requeue(ctx, g, retried, retryDelay); err != nil {
			return err
		}
	}
	return nil
}

// requeue sends items of g back to the queue, visible after delay plus jitter.
func (s *Scheduler) requeue(ctx context.Context, g groups.Group, items []groups.Item, delay time.Duration) error {
	g.Items = items
	body, err := groups.Encode(g)
	if err != nil {
		return fmt.Errorf("re-encoding %s: %w", g.Domain, err)
	}
	if err := s.q.Send(ctx, body, s.jitter(delay)); err != nil {
		return fmt.Errorf("requeueing %d URLs of %s: %w", len(items), g.Domain, err)
	}
	return nil
}

// delete removes a handled message. A stale receipt means the visibility
// timeout ran out and another worker holds the message now: not an error
// here, since results are emitted once per URL by whoever finishes it.
func (s *Scheduler) delete(ctx context.Context, m queue.Message, domain string) error {
	if err := s.q.Delete(ctx, m.Receipt); err != nil && !errors.Is(err, queue.ErrReceiptInvalid) {
		return fmt.Errorf("deleting a group of %s: %w", domain, err)
	}
	return nil
}

// run checks the granted items paced at the grant's offsets with at most
// grant.Slots in flight; it stops launching after the first throttle. It
// returns once everything launched is done, or StragglerWait after the last
// launch, whichever is first.
func (s *Scheduler) run(ctx context.Context, grant bucket.Grant, items []groups.Item) *batch {
	b := &batch{atts: make([]attempt, len(items))}
	slots := make(chan struct{}, grant.Slots)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for j, it := range items {
		b.atts[j].item = it
	}
	gap := time.Duration(float64(time.Second) / grant.Rate)
	var last time.Time
	for j := range items {
		// Send at the token's release, and never closer than 1/rate after
		// the previous send: a send that ran late must not bunch up with
		// the next one.
		at := grant.At.Add(grant.Offset(j))
		if j > 0 && last.Add(gap).After(at) {
			at = last.Add(gap)
		}
		if err := s.cfg.Clock.Sleep(ctx, at.Sub(s.cfg.Clock.Now())); err != nil {
			break
		}
		if stop.Load() {
			break
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil || stop.Load() {
			break
		}
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		a := &b.atts[j]
		a.ran = true
		a.start = s.cfg.Clock.Now()
		last = a.start
		b.sent++
		if a.start.Sub(at) > gap/2 {
			b.late++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.out = s.chk.Check(ctx, a.item.URL)
			if a.out.Status == 429 || a.out.Status == 503 {
				stop.Store(true)
			}
			if a.out.Class == check.ClassTimeout {
				// We gave up, but the host may still be working on the
				// request: keep its slot a little longer.
				_ = s.cfg.Clock.Sleep(ctx, s.cfg.TimeoutGrace)
			}
			a.done.Store(true)
			<-s.sem
			<-slots
		}()
	}
	all := make(chan struct{})
	go func() {
		wg.Wait()
		close(all)
	}()
	b.wait = func() { <-all }
	t := s.cfg.Clock.NewTimer(s.cfg.StragglerWait)
	defer t.Stop()
	select {
	case <-all:
	case <-t.C():
	case <-ctx.Done():
	}
	return b
}

// retry decides whether an item is tried again and after how long; it
// updates the item's counters.
func (s *Scheduler) retry(it *groups.Item, o check.Outcome, at time.Time) (bool, time.Duration) {
	p := s.cfg.Backoff
	switch {
	case o.Status == 429 || (o.Status == 503 && o.RetryAfter != ""):
		it.Throttles++
		if it.Throttles >= s.cfg.MaxThrottles {
			return false, 0
		}
		wait, _, _ := p.Next(it.Throttles, o.RetryAfter, at, s.cfg.Rand)
		return true, wait
	case o.Status == 503 || o.Class == check.ClassTimeout || o.Class == check.ClassReset:
		retries := it.Tries - it.Throttles
		wait, _, giveUp := p.Next(retries, o.RetryAfter, at, s.cfg.Rand)
		if giveUp || !s.cfg.RetryBudget.TryRetry() {
			return false, 0
		}
		return true, wait
	}
	return false, 0
}

func (s *Scheduler) finish(domain string, it groups.Item, o check.Outcome) {
	now := s.cfg.Clock.Now()
	var hops []string
	for _, h := range o.Redirects {
		hops = append(hops, fmt.Sprintf("%d %s", h.Status, h.URL))
	}
	for _, line := range it.Lines {
		s.emit(results.Result{
			Line: line, URL: it.URL, Domain: domain, Class: string(o.Class), Status: o.Status,
			FinalURL: o.FinalURL, Redirects: hops, LatencyMS: float64(o.Latency) / float64(time.Millisecond),
			Attempts: it.Tries, Error: o.Error, CheckedAt: now,
		})
	}
	s.mu.Lock()
	if d := s.domains[domain]; d != nil {
		d.remaining--
	}
	s.mu.Unlock()
	s.done.Add(1)
}

// FollowUpPacer returns a check.Config.BeforeFollowUp that pays for every
// redirect hop and HEAD->GET fallback with a token from the target's
// registrable domain (keyer nil: plain eTLD+1) and waits, on clk, until the
// token is released. A hop to another domain also holds one of that
// domain's concurrency slots until its response arrives, asking again after
// the limiter's wait while none is free. The check's own timeout bounds
// every wait.
func FollowUpPacer(lim *bucket.Limiter, keyer *urlnorm.Keyer, clk clock.Clock) func(ctx context.Context, origin, target *url.URL) (func(), error) {
	return func(ctx context.Context, origin, target *url.URL) (func(), error) {
		to := keyer.Key(strings.ToLower(target.Hostname()))
		if keyer.Key(strings.ToLower(origin.Hostname())) == to {
			// The check already holds a slot of this domain.
			wait, err := lim.Reserve(ctx, to)
			if err != nil {
				return nil, fmt.Errorf("reserving a token for %s: %w", target.Host, err)
			}
			return nil, clk.Sleep(ctx, wait)
		}
		for {
			g, err := lim.Acquire(ctx, to, 1)
			if err != nil {
				return nil, fmt.Errorf("acquiring a slot of %s: %w", to, err)
			}
			if g.N > 0 {
				release := func() { _, _ = lim.Settle(context.WithoutCancel(ctx), g, bucket.Feedback{}) }
				if err := clk.Sleep(ctx, g.Offset(0)); err != nil {
					release()
					return nil, err
				}
				return release, nil
			}
			if err := clk.Sleep(ctx, g.Wait); err != nil {
				return nil, err
			}
		}
	}
}

// key returns the registrable domain of rawURL, or fallback when it has no
// parsable host.
func (s *Scheduler) key(rawURL, fallback string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return fallback
	}
	return s.cfg.Keyer.Key(strings.ToLower(u.Hostname()))
}

// countRequests records every request one check sent: its redirect hops,
// then the final response (a HEAD answered before a GET fallback counts as
// a request with status 0, as its status is not reported).
func (s *Scheduler) countRequests(domain string, o check.Outcome) {
	for _, h := range o.Redirects {
		s.tally.Request(domain, h.Status, false)
	}
	for range max(0, o.Requests-len(o.Redirects)-1) {
		s.tally.Request(domain, 0, false)
	}
	s.tally.Request(domain, o.Status, o.Status == 429 || o.Status == 503)
}

func (s *Scheduler) setWaiting(domain string, w bool) {
	s.mu.Lock()
	if d := s.domains[domain]; d != nil {
		d.waiting = w
	}
	s.mu.Unlock()
}

func (s *Scheduler) setRate(domain string, r float64) {
	s.mu.Lock()
	if d := s.domains[domain]; d != nil {
		d.rate = r
	}
	s.mu.Unlock()
}

// backlogged reports whether domain's remaining work is on the critical
// path: at least CriticalShare of the busiest domain's remaining seconds.
func (s *Scheduler) backlogged(domain string) bool {
	now := time.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	if now-s.critAt.Load() > int64(20*time.Millisecond) {
		crit := 0.0
		for _, d := range s.domains {
			if d.remaining > 0 && d.rate > 0 {
				crit = max(crit, float64(d.remaining)/d.rate)
			}
		}
		s.crit.Store(crit)
		s.critAt.Store(now)
	}
	d := s.domains[domain]
	if d == nil || d.rate <= 0 {
		return true
	}
	mine := float64(d.remaining) / d.rate
	return mine > 1 && mine >= s.cfg.CriticalShare*s.crit.Load().(float64)
}

func (s *Scheduler) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	// Spread re-deliveries over +10 % so that groups of one domain do not
	// wake in lock step.
	return d + time.Duration(float64(d)*0.1*s.cfg.Rand())
}

func p95(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[(len(ds)*95+99)/100-1]
}
