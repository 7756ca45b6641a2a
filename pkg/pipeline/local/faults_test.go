package local_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/urlcheck/urlcheck/pkg/awscalls"
	"github.com/urlcheck/urlcheck/pkg/awsfault"
	"github.com/urlcheck/urlcheck/pkg/backoff"
	"github.com/urlcheck/urlcheck/pkg/clock"
	"github.com/urlcheck/urlcheck/pkg/eventsource"
	"github.com/urlcheck/urlcheck/pkg/pipeline"
	"github.com/urlcheck/urlcheck/pkg/pipeline/local"
	"github.com/urlcheck/urlcheck/pkg/simrun"
	"github.com/urlcheck/urlcheck/pkg/simweb"
)

// chaos wraps the checker the way a hostile Lambda service would behave:
// some invocations (5 %) are killed after checking (results stored, nothing
// deleted: every record comes back), some (3 %) are killed midway (the
// context is cancelled), and some batches (5 %) are delivered to two
// invocations at once.
type chaos struct {
	mu                                 sync.Mutex
	rng                                *rand.Rand
	killedAfter, killedMid, duplicated atomic.Int64
}

var errKilled = errors.New("invocation killed (injected)")

func (c *chaos) draw() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rng.Float64()
}

func (c *chaos) wrap(h eventsource.SQSHandler) eventsource.SQSHandler {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		switch r := c.draw(); {
		case r < 0.05:
			c.killedAfter.Add(1)
			_, _ = h(ctx, ev)
			return events.SQSEventResponse{}, errKilled
		case r < 0.08:
			c.killedMid.Add(1)
			kctx, cancel := context.WithTimeout(ctx, time.Duration(c.draw()*float64(2*time.Second)))
			defer cancel()
			_, _ = h(kctx, ev)
			return events.SQSEventResponse{}, errKilled
		case r < 0.13:
			c.duplicated.Add(1)
			var wg sync.WaitGroup
			resps := make([]events.SQSEventResponse, 2)
			for i := range resps {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resps[i], _ = h(ctx, ev)
				}()
			}
			wg.Wait()
			// A record is done only if both invocations say so.
			failed := map[string]bool{}
			var out events.SQSEventResponse
			for _, r := range resps {
				for _, f := range r.BatchItemFailures {
					if !failed[f.ItemIdentifier] {
						failed[f.ItemIdentifier] = true
						out.BatchItemFailures = append(out.BatchItemFailures, f)
					}
				}
			}
			return out, nil
		}
		return h(ctx, ev)
	}
}

// TestFaults runs a job while 5 % of the DynamoDB, SQS and S3 requests fail
// (half of them after the server applied the request: a lost response the
// SDK retries), checker invocations are killed after checking or midway,
// and batches are delivered twice. No line may be lost or counted twice,
// and the summary is written exactly once.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run with injected faults")
	}
	o := servers(t)
	sc := simweb.Scenario{Seed: 11, Domains: 60, Big: []int{300}, URLs: 1500, RateMin: 5, RateMax: 25, BigRate: 40,
		Faults: simweb.MixedFaults(), HTTPS: 0.3, Modes: simweb.AllModes()}
	w, urls, conf := web(t, sc)
	_ = w
	_, _, truth, _ := simrun.Start(sc, clock.Real{})
	faults := &awsfault.Injector{Rate: 0, AfterShare: 0.5, PerAttempt: true, Seed: 3}
	counter := awscalls.NewCounter()
	var summaryPuts atomic.Int64
	counter.OnCall(func(c awscalls.Call) {
		if in, ok := c.Input.(*s3.PutObjectInput); ok && c.Err == nil && strings.HasSuffix(aws.ToString(in.Key), "/summary.json") {
			summaryPuts.Add(1)
		}
	})
	ch := &chaos{rng: rand.New(rand.NewPCG(5, 6))}
	o.LoadOptions = []func(*config.LoadOptions) error{config.WithAPIOptions(append(counter.APIOptions(), faults.APIOptions()...))}
	o.WrapChecker = ch.wrap
	// Killed invocations' records come back after the visibility timeout,
	// which must exceed an invocation's duration (the template has 6x the
	// function timeout), or records are redelivered while being worked on.
	o.QueueVisibility = 30 * time.Second
	o.Configure = func(d *pipeline.Deps) {
		conf(d)
		d.StuckAfter = 30 * time.Second
	}
	ctx := context.Background()
	p, err := local.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	faults.SetRate(0.05)
	lines := append(append([]string{}, urls...), "not a url")
	var id string
	for attempt := 0; ; attempt++ { // a client retries a 503 (documented)
		id, err = p.Submit(ctx, []byte(strings.Join(lines, "\n")), "text/plain")
		if err == nil || attempt == 5 || !strings.Contains(err.Error(), "503") {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	defer cancel()
	st, err := p.Wait(wctx, id, time.Second)
	faults.SetRate(0)
	if err != nil || st.State != "done" {
		attrs, _ := p.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(p.QueueURL),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		var qa map[string]string
		if attrs != nil {
			qa = attrs.Attributes
		}
		t.Fatalf("job %s: %v %+v\nqueue %v\ndead-letter queue: %d messages; poller %+v", id, err, st, qa, dlqDepth(t, p), p.Poller.Stats())
	}
	rs, sum, err := p.Results(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for _, r := range rs {
		seen[r.Line]++
	}
	for line := 1; line <= len(lines); line++ {
		if seen[line] != 1 {
			t.Errorf("line %d has %d results, want 1", line, seen[line])
		}
	}
	if len(rs) != len(lines) || sum.Total != len(lines) {
		t.Errorf("%d results, summary total %d, want %d", len(rs), sum.Total, len(lines))
	}
	prog, err := p.Deps.Jobs.Progress(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if prog.Done != prog.Total || prog.Total != len(urls) {
		t.Errorf("progress counted %d of %d lines, want exactly %d: a line was lost or counted twice", prog.Done, prog.Total, len(urls))
	}
	if n := summaryPuts.Load(); n != 1 {
		t.Errorf("summary.json written %d times, want exactly once", n)
	}
	mismatches := 0
	for i, u := range urls {
		for _, r := range rs {
			if r.Line == i+1 && r.Class != truth[u] {
				mismatches++
			}
		}
	}
	injected := 0
	for _, n := range faults.Injected() {
		injected += n
	}
	t.Logf("faults: %d AWS requests failed (%v); invocations killed after checking %d, midway %d, delivered twice %d; %d lines classed unlike the truth; poller %+v",
		injected, faults.Injected(), ch.killedAfter.Load(), ch.killedMid.Load(), ch.duplicated.Load(), mismatches, p.Poller.Stats())
	if injected == 0 || ch.killedAfter.Load() == 0 || ch.duplicated.Load() == 0 {
		t.Errorf("the faults did not happen: the test proves nothing")
	}
}

// hammered is a simulated domain that refuses everything after its first
// request: 429 without Retry-After, for ever.
func hammered(t *testing.T) (*simweb.Web, []string) {
	t.Helper()
	w := simweb.New(clock.Real{})
	w.AddHost(simweb.Host{Name: "hammered.example"})
	w.AddHost(simweb.Host{Name: "fine.example"})
	w.SetLimit("hammered.example", simweb.Limit{Rate: 0.0001, Burst: 1, Mode: simweb.Throttle429None})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w, []string{"http://hammered.example/ok/first", "http://hammered.example/ok/second", "http://fine.example/ok/a"}
}

// TestThrottledNotDeadLettered: a URL answered 429 twenty times ends as
// rate_limited in the results, and nothing reaches the dead-letter queue,
// even though the queue dead-letters a message on its third receive.
func TestThrottledNotDeadLettered(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run of about half a minute")
	}
	o := servers(t)
	w, urls := hammered(t)
	o.MaxReceiveCount = 3
	o.BatchSize, o.BatchWindow = 10, -1
	o.Configure = func(d *pipeline.Deps) {
		d.Check.AllowPrivate, d.Check.Resolver, d.Check.Dial = true, w.Resolver, w.Dial
		d.Schedule.Backoff = backoff.Policy{Base: 100 * time.Millisecond, Cap: 500 * time.Millisecond}
		d.Limits.Rate.Min = 2 // a bucket cut to the floor refills within a second
		d.RecycleAfter = 2
	}
	ctx := context.Background()
	p, err := local.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id, err := p.Submit(ctx, []byte(strings.Join(urls, "\n")), "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	defer cancel()
	if st, err := p.Wait(wctx, id, time.Second); err != nil || st.State != "done" {
		t.Fatalf("job %s: %v %+v", id, err, st)
	}
	rs, _, err := p.Results(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		want := "ok"
		if r.Line == 2 {
			want = "rate_limited"
		}
		if r.Class != want {
			t.Errorf("line %d %s: %s after %d attempts, want %s", r.Line, r.URL, r.Class, r.Attempts, want)
		}
		if r.Line == 2 && r.Attempts < 20 {
			t.Errorf("line 2: given up after %d attempts, want 20 throttles", r.Attempts)
		}
	}
	if n := dlqDepth(t, p); n != 0 {
		t.Errorf("%d messages in the dead-letter queue, want 0", n)
	}
}

func dlqDepth(t *testing.T, p *local.Pipeline) int {
	t.Helper()
	out, err := p.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(p.DLQURL),
		MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Messages)
}

// TestPoisonDeadLettered: a message that crashes the checker every time it
// is delivered goes to the dead-letter queue after maxReceiveCount receives;
// the job's other URLs finish and the job is reported stuck.
func TestPoisonDeadLettered(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run")
	}
	o := servers(t)
	w, urls := hammered(t)
	urls = append(urls, "http://poison.example/ok/crash")
	o.MaxReceiveCount = 3
	o.QueueVisibility = time.Second
	o.BatchSize, o.BatchWindow = 1, -1
	var crashes atomic.Int64
	o.WrapChecker = func(h eventsource.SQSHandler) eventsource.SQSHandler {
		return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			for _, r := range ev.Records {
				if strings.Contains(r.Body, "poison.example") {
					crashes.Add(1)
					panic("checker crashed (injected)")
				}
			}
			return h(ctx, ev)
		}
	}
	o.Configure = func(d *pipeline.Deps) {
		d.Check.AllowPrivate, d.Check.Resolver, d.Check.Dial = true, w.Resolver, w.Dial
		d.StuckAfter = 3 * time.Second
	}
	ctx := context.Background()
	p, err := local.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id, err := p.Submit(ctx, []byte(strings.Join(urls[2:], "\n")), "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	var st pipeline.JobStatus
	for time.Now().Before(deadline) {
		if st, err = p.Deps.Status(ctx, id); err == nil && st.Stuck && crashes.Load() >= 3 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !st.Stuck || st.State != "running" || st.Done != 1 || st.Total != 2 {
		t.Fatalf("status %+v: want running, stuck, 1 of 2 lines done", st)
	}
	if n := dlqDepth(t, p); n != 1 {
		t.Errorf("%d messages in the dead-letter queue, want the poison message", n)
	}
	if n := crashes.Load(); n != 3 {
		t.Errorf("the poison message crashed the checker %d times, want maxReceiveCount = 3", n)
	}
	t.Logf("stuck: %s", st.StuckReason)
}
