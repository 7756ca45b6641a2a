package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/urlcheck/urlcheck/pkg/awscalls"
	"github.com/urlcheck/urlcheck/pkg/bucket/dynamostore"
	"github.com/urlcheck/urlcheck/pkg/check"
	"github.com/urlcheck/urlcheck/pkg/clock"
	"github.com/urlcheck/urlcheck/pkg/eventsource"
	"github.com/urlcheck/urlcheck/pkg/jobs"
	"github.com/urlcheck/urlcheck/pkg/pipeline"
	"github.com/urlcheck/urlcheck/pkg/pipeline/local"
	"github.com/urlcheck/urlcheck/pkg/queue/sqsqueue"
	"github.com/urlcheck/urlcheck/pkg/simrun"
	"github.com/urlcheck/urlcheck/pkg/simweb"
)

// serverlessName is the scenario name of the serverless rows (-only
// serverless selects them).
const serverlessName = "serverless: 5k URLs / 120 domains, one job (local pipeline)"

// serverlessCleanName names the same job over a web without faulty URLs
// (no redirects, loops, hangs or fallbacks): the pipeline's base cost.
const serverlessCleanName = "serverless: 5k URLs / 120 domains, no faults"

// Lambda memory sizes of template.yaml, in GB as Lambda bills them
// (MemorySize MB ÷ 1024).
const (
	checkerGB = 1024.0 / 1024
	ingestGB  = 1769.0 / 1024
	apiGB     = 512.0 / 1024
)

// serverlessURLs is the size of the job; costs are scaled to costURLs.
const (
	serverlessURLs = 5000
	costURLs       = 75000
)

// serverlessFigures are the figures of the serverless rows with their
// targets ("—": none), in table order.
var serverlessFigures = [][2]string{
	{"DynamoDB writes / URL", "≤ 0.3"},
	{"DynamoDB reads / URL", "—"},
	{"SQS requests / URL", "≤ 0.1"},
	{"S3 PUTs / URL", "≤ 0.02"},
	{"S3 GETs / URL", "—"},
	{"wasted receives / URL", "—"},
	{"$ per 75,000 URLs (on-demand us-east-1)", "—"},
	{"makespan, 429/503 share (context)", "—"},
}

// skippedServerless returns the serverless rows reading "skipped (no local
// AWS servers)", for runs without URLCHECK_DDB_ENDPOINT.
func skippedServerless(name string) []row {
	var rs []row
	for _, f := range serverlessFigures {
		rs = append(rs, row{name, f[0], f[1], "skipped (no local AWS servers)", ""})
	}
	return rs
}

// wasteCounter counts the records handed to the checker that checked
// nothing: those reported in BatchItemFailures (hidden again because their
// domain had no tokens, or failed) and those recycled, that is re-sent
// unchanged as new messages (a hide after DefaultRecycleAfter receives).
type wasteCounter struct {
	records, failures, recycled atomic.Int64
	invocations                 atomic.Int64
	active                      atomic.Int64 // invocations running
	busyNanos                   atomic.Int64 // summed wall time of the invocations

	mu       sync.Mutex
	inFlight map[string]int // bodies of the records being handled
}

// wrap is the local.Options.WrapChecker: it times each invocation and
// counts its records and reported failures.
func (w *wasteCounter) wrap(h eventsource.SQSHandler) eventsource.SQSHandler {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		w.active.Add(1)
		defer w.active.Add(-1)
		w.mu.Lock()
		for _, r := range ev.Records {
			w.inFlight[r.Body]++
		}
		w.mu.Unlock()
		start := time.Now()
		resp, err := h(ctx, ev)
		w.busyNanos.Add(int64(time.Since(start)))
		w.mu.Lock()
		for _, r := range ev.Records {
			if w.inFlight[r.Body]--; w.inFlight[r.Body] <= 0 {
				delete(w.inFlight, r.Body)
			}
		}
		w.mu.Unlock()
		w.invocations.Add(1)
		w.records.Add(int64(len(ev.Records)))
		if err != nil {
			w.failures.Add(int64(len(ev.Records)))
		} else {
			w.failures.Add(int64(len(resp.BatchItemFailures)))
		}
		return resp, err
	}
}

// onCall is a Counter hook: an SQS send whose body is that of a record
// being handled is a recycle.
func (w *wasteCounter) onCall(c awscalls.Call) {
	var bodies []string
	switch in := c.Input.(type) {
	case *sqs.SendMessageBatchInput:
		for _, e := range in.Entries {
			bodies = append(bodies, aws.ToString(e.MessageBody))
		}
	case *sqs.SendMessageInput:
		bodies = append(bodies, aws.ToString(in.MessageBody))
	default:
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range bodies {
		if w.inFlight[b] > 0 {
			w.recycled.Add(1)
		}
	}
}

// serverless runs one 5,000-URL job through the local serverless pipeline
// (POST /jobs, S3 event, ingest, SQS, checker) against a simulated web on
// the wall clock, counting every AWS call with an awscalls.Counter, and
// returns its rows and one line per AWS operation ("DynamoDB.UpdateItem
// 1234"). Without URLCHECK_DDB_ENDPOINT it returns skipped rows. Errors name
// the step that failed.
func serverless(ctx context.Context, name string, faults bool) ([]row, []string, error) {
	ddbEP, sqsEP := os.Getenv(pipeline.EnvDDBEndpoint), os.Getenv(pipeline.EnvSQSEndpoint)
	vgw := os.Getenv("URLCHECK_VERSITYGW_BIN")
	if ddbEP == "" || sqsEP == "" || vgw == "" {
		return skippedServerless(name), nil, nil
	}
	sc := simweb.Scenario{Seed: 7, Domains: 120, Big: []int{900}, URLs: serverlessURLs, RateMin: 5, RateMax: 25, BigRate: 40,
		HTTPS: 0.3, Modes: simweb.AllModes()}
	if faults {
		sc.Faults = simweb.MixedFaults()
	}
	web, urls, _, err := simrun.Start(sc, clock.Real{})
	if err != nil {
		return nil, nil, fmt.Errorf("serverless: simulated web: %w", err)
	}
	defer web.Close()

	counter := awscalls.NewCounter()
	waste := &wasteCounter{inFlight: map[string]int{}}
	counter.OnCall(waste.onCall)
	suffix := fmt.Sprintf("-bench-%d", time.Now().UnixNano()%1e9)
	o := local.Options{DDBEndpoint: ddbEP, SQSEndpoint: sqsEP, VersityGW: vgw, Suffix: suffix,
		LoadOptions: []func(*config.LoadOptions) error{config.WithAPIOptions(counter.APIOptions())},
		Configure: func(d *pipeline.Deps) {
			d.Check = check.Config{AllowPrivate: true, Resolver: web.Resolver, Dial: web.Dial, RootCAs: web.CertPool(),
				ConnectTimeout: 5 * time.Second, TLSTimeout: 5 * time.Second, HeaderTimeout: 5 * time.Second, TotalTimeout: 10 * time.Second}
		},
		WrapChecker: waste.wrap,
	}
	p, err := local.Start(ctx, o)
	if err != nil {
		return nil, nil, fmt.Errorf("serverless: starting the local pipeline: %w", err)
	}
	// Uncounted clients: the status polling and the clean-up are not job
	// cost.
	ddb, err := dynamostore.NewClient(ctx, ddbEP, "us-east-1")
	if err != nil {
		p.Close()
		return nil, nil, fmt.Errorf("serverless: %w", err)
	}
	sq, err := sqsqueue.NewClient(ctx, sqsEP, "us-east-1")
	if err != nil {
		p.Close()
		return nil, nil, fmt.Errorf("serverless: %w", err)
	}
	jobsTable, domainsTable := pipeline.DefaultJobsTable+suffix, pipeline.DefaultDomainsTable+suffix
	defer func() {
		_ = p.Close()
		cctx := context.WithoutCancel(ctx)
		for _, t := range []string{jobsTable, domainsTable} {
			_, _ = ddb.DeleteTable(cctx, &dynamodb.DeleteTableInput{TableName: aws.String(t)})
		}
		for _, q := range []string{p.QueueURL, p.DLQURL} {
			_, _ = sq.DeleteQueue(cctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(q)})
		}
	}()
	status := jobs.New(ddb, jobsTable, nil)

	base := counter.Snapshot()
	basePoll := p.Poller.Stats()
	baseHook := p.Webhook.Stats()
	list := []byte(strings.Join(urls, "\n"))
	apiStart := time.Now()
	id, err := p.Submit(ctx, list, "text/plain")
	apiDur := time.Since(apiStart)
	if err != nil {
		return nil, nil, fmt.Errorf("serverless: %w", err)
	}
	job, err := waitJob(ctx, status, id, 5*time.Minute)
	if err != nil {
		return nil, nil, fmt.Errorf("serverless: %w", err)
	}
	// The invocation that completes the job summarizes it and returns
	// after the job turned done: wait for it and for the poller to delete
	// its batch (every delivered record deleted or reported failed).
	settle(ctx, func() bool {
		st := p.Poller.Stats()
		handled := st.Deleted + st.Failed + st.DeleteErrors - basePoll.Deleted - basePoll.Failed - basePoll.DeleteErrors
		return waste.active.Load() == 0 && handled >= waste.records.Load()
	}, 10*time.Second)
	t := counter.Snapshot().Sub(base)
	poll := p.Poller.Stats()
	hook := p.Webhook.Stats()
	if job.State != jobs.Done {
		return nil, nil, fmt.Errorf("serverless: job %s ended %s: %s", id, job.State, job.Error)
	}

	n := float64(len(urls))
	per := func(v float64) float64 { return v / n }
	var rs []row
	add := func(i int, value, verdictText string) {
		rs = append(rs, row{name, serverlessFigures[i][0], serverlessFigures[i][1], value, verdictText})
	}
	writes := per(float64(t.DynamoDBWrites()))
	add(0, fmt.Sprintf("%.3f (%d writes; %.0f write units = %.3f/URL)", writes, t.DynamoDBWrites(), t.WriteUnits, per(t.WriteUnits)),
		verdict(writes <= 0.3))
	add(1, fmt.Sprintf("%.3f (%d reads; %.1f read units = %.3f/URL)", per(float64(t.DynamoDBReads())), t.DynamoDBReads(), t.ReadUnits, per(t.ReadUnits)), "")

	op := func(names ...string) int {
		s := 0
		for _, nm := range names {
			s += t.Calls[nm]
		}
		return s
	}
	sends := op("SQS.SendMessage", "SQS.SendMessageBatch")
	receives := op("SQS.ReceiveMessage")
	empty := poll.EmptyReceives - basePoll.EmptyReceives
	deletes := op("SQS.DeleteMessage", "SQS.DeleteMessageBatch")
	vis := op("SQS.ChangeMessageVisibility", "SQS.ChangeMessageVisibilityBatch")
	other := t.SQSRequests() - sends - receives - deletes - vis - t.SQSExtraChunks
	sqsPer := per(float64(t.SQSRequests()))
	sqsText := fmt.Sprintf("%.3f (%d requests: %d sends, %d receives (%d empty), %d deletes, %d visibility changes",
		sqsPer, t.SQSRequests(), sends, receives, empty, deletes, vis)
	if t.SQSExtraChunks > 0 {
		sqsText += fmt.Sprintf(", %d extra 64 KiB chunks", t.SQSExtraChunks)
	}
	if other != 0 {
		sqsText += fmt.Sprintf(", %d other", other)
	}
	add(2, sqsText+")", verdict(sqsPer <= 0.1))
	s3Per := per(float64(t.S3Puts()))
	add(3, fmt.Sprintf("%.4f (%d PUT-tier requests: %d PutObject, %d LIST)", s3Per, t.S3Puts(), op("S3.PutObject"), t.S3Lists()),
		verdict(s3Per <= 0.02))
	add(4, fmt.Sprintf("%.4f (%d GET-tier requests)", per(float64(t.S3Gets())), t.S3Gets()), "")

	wasted := waste.failures.Load() + waste.recycled.Load()
	add(5, fmt.Sprintf("%.3f (%d of %d records delivered to the checker checked nothing: %d reported in BatchItemFailures, i.e. hidden again for lack of tokens or failed, + %d re-sent unchanged (recycled); %d checker invocations)",
		per(float64(wasted)), wasted, waste.records.Load(), waste.failures.Load(), waste.recycled.Load(), waste.invocations.Load()), "")

	// Lambda: the checker measured per invocation; ingest estimated as the
	// job's splitting → running time (which also holds the S3 PUT and the
	// event delivery); the API as the POST's round trip.
	checkerS := time.Duration(waste.busyNanos.Load()).Seconds()
	ingestS := job.Started.Sub(job.Created).Seconds()
	apiS := apiDur.Seconds()
	gbs := checkerS*checkerGB + ingestS*ingestGB + apiS*apiGB
	// Ingest invocations: the local webhook delivers every ObjectCreated
	// event (result parts included) and Ingest ignores keys outside inbox/;
	// on AWS the template's prefix filter (inbox/) lets only the list's PUT
	// invoke it, so count that one plus any retries.
	ingestInv := 1 + int(hook.Errors-baseHook.Errors)
	invocations := int(poll.Invocations-basePoll.Invocations) + ingestInv + 1
	scale := float64(costURLs) / n
	cost := awscalls.USEast1.Cost(t, gbs, invocations, 1).Scale(scale)
	add(6, fmt.Sprintf("$%.4f (DynamoDB $%.4f, SQS $%.4f, S3 $%.4f, Lambda $%.4f, API $%.6f; from %d URLs ×%.0f; Lambda %.1f GB-s in %d invocations: checker %.1f s × 1 GB, ingest ≈ %.1f s × 1.73 GB, API %.2f s × 0.5 GB)",
		cost.Total, cost.DynamoDB, cost.SQS, cost.S3, cost.Lambda, cost.API, len(urls), scale,
		gbs, invocations, checkerS, ingestS, apiS), "")

	var req, thr int
	for _, st := range web.Stats() {
		req += st.Requests
		thr += st.Throttled
	}
	makespan := job.Finished.Sub(job.Created).Seconds()
	lb, lbDomain := simrun.LowerBound(urls, web.Stats())
	add(7, fmt.Sprintf("%.1f s (lower bound %.1f s on %s, ratio %.2f); %.2f %% of %d requests answered 429/503",
		makespan, lb, lbDomain, makespan/max(lb, 1e-9), 100*float64(thr)/float64(max(req, 1)), req), "")

	var ops []string
	keys := make([]string, 0, len(t.Calls))
	for k := range t.Calls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		line := fmt.Sprintf("%s %d", k, t.Calls[k])
		if e := t.Errors[k]; e > 0 {
			line += fmt.Sprintf(" (%d errors)", e)
		}
		if a := t.Attempts[k]; a > t.Calls[k] {
			line += fmt.Sprintf(" (%d attempts)", a)
		}
		ops = append(ops, line)
	}
	return rs, ops, nil
}

// settle polls done every 50 ms until it returns true, ctx ends or limit
// has passed.
func settle(ctx context.Context, done func() bool, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for !done() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitJob polls job id's meta item every 2 s, through a store whose client
// is not counted, until the job is in a final state; it reports progress on
// stderr every 10 s. It returns an error after limit.
func waitJob(ctx context.Context, s *jobs.Store, id string, limit time.Duration) (jobs.Job, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	lastLog := time.Now()
	for {
		j, err := s.Get(ctx, id)
		if err == nil && j.State.Final() {
			return j, nil
		}
		if time.Since(lastLog) >= 10*time.Second {
			lastLog = time.Now()
			if pr, err := s.Progress(ctx, id); err == nil {
				fmt.Fprintf(os.Stderr, "serverless: job %s %s, %d/%d\n", id, pr.Job.State, pr.Done, pr.Total)
			}
		}
		select {
		case <-ctx.Done():
			return j, fmt.Errorf("job %s not final after %s (state %s): %w", id, limit, j.State, ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}
