// Package local runs urlcheck's serverless pipeline on one machine, with
// the same handlers as on AWS, against AWS-compatible servers: DynamoDB
// Local and fauxqs (started by infra/local/emu.sh) and a versitygw S3
// server that this package starts itself, so that its event webhook points
// at the ingest handler. It stands in for the Lambda service: an HTTP
// server in front of the API handler (API Gateway, payload 2.0), the S3
// webhook invoking ingest asynchronously with retries, and an SQS poller
// invoking the checker with batch size, batching window, maximum
// concurrency and partial batch responses as Lambda's event source mapping
// does (package eventsource).
package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/urlcheck/urlcheck/pkg/bucket/dynamostore"
	"github.com/urlcheck/urlcheck/pkg/eventsource"
	"github.com/urlcheck/urlcheck/pkg/jobs"
	"github.com/urlcheck/urlcheck/pkg/pipeline"
	"github.com/urlcheck/urlcheck/pkg/queue/sqsqueue"
	"github.com/urlcheck/urlcheck/pkg/results/s3store"
)

// Options configure Start. DDBEndpoint, SQSEndpoint and VersityGW are
// required; the rest have defaults matching template.yaml where it sets
// them.
type Options struct {
	DDBEndpoint string // e.g. http://127.0.0.1:8000
	SQSEndpoint string // e.g. http://127.0.0.1:9324
	VersityGW   string // path of the versitygw binary
	// DataDir is versitygw's posix root (created); "" = a temporary
	// directory removed by Close.
	DataDir string
	// APIAddr is where the API listens; "" = 127.0.0.1 and a free port.
	APIAddr string
	// Suffix is appended to every resource name (tables, queues, bucket),
	// so that tests can run side by side on the same servers.
	Suffix string
	// MaxReceiveCount is the redrive policy's (template: 10).
	MaxReceiveCount int
	// QueueVisibility is the queue's VisibilityTimeout; default 30 s (the
	// template's 720 s suits Lambda's timeout, not a test's patience).
	QueueVisibility time.Duration
	// BatchSize, BatchWindow and MaxConcurrency are the event source
	// mapping's (template: 100, 1 s, 20). A negative BatchWindow means none
	// (BatchSize at most 10 then, as in Lambda).
	BatchSize      int
	BatchWindow    time.Duration
	MaxConcurrency int
	// LoadOptions go to every AWS client (SDK middleware: counters, faults).
	LoadOptions []func(*config.LoadOptions) error
	// Configure, when set, adjusts the Deps before anything runs (tests
	// point the checker at a simulated web here).
	Configure func(*pipeline.Deps)
	// WrapIngest, when set, wraps the ingest handler the S3 webhook calls.
	WrapIngest func(eventsource.S3Handler) eventsource.S3Handler
	// WrapChecker, when set, wraps the checker handler (tests inject
	// crashes and duplicate deliveries).
	WrapChecker func(eventsource.SQSHandler) eventsource.SQSHandler
	Logger      *slog.Logger
}

// Pipeline is a running local pipeline.
type Pipeline struct {
	Deps       *pipeline.Deps
	APIURL     string // http://127.0.0.1:PORT
	S3Endpoint string // the versitygw this pipeline started
	QueueURL   string
	DLQURL     string
	SQS        *sqs.Client
	Poller     *eventsource.SQSPoller
	Webhook    *eventsource.S3Webhook

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	api     *http.Server
	hook    *http.Server
	vgw     *exec.Cmd
	tmp     string
	pollErr error
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Start creates the resources and starts everything; Close stops it. It
// returns an error naming the step that failed.
func Start(ctx context.Context, o Options) (_ *Pipeline, err error) {
	if o.DDBEndpoint == "" || o.SQSEndpoint == "" || o.VersityGW == "" {
		return nil, errors.New("local: DDBEndpoint, SQSEndpoint and VersityGW are required")
	}
	if o.MaxReceiveCount <= 0 {
		o.MaxReceiveCount = 10
	}
	if o.QueueVisibility <= 0 {
		o.QueueVisibility = 30 * time.Second
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 100
	}
	switch {
	case o.BatchWindow < 0:
		o.BatchWindow = 0
	case o.BatchWindow == 0:
		o.BatchWindow = time.Second
	}
	if o.MaxConcurrency <= 0 {
		o.MaxConcurrency = 20
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pipeline{}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	region := "us-east-1"
	ddb, err := dynamostore.NewClient(ctx, o.DDBEndpoint, region, o.LoadOptions...)
	if err != nil {
		return nil, err
	}
	sq, err := sqsqueue.NewClient(ctx, o.SQSEndpoint, region, o.LoadOptions...)
	if err != nil {
		return nil, err
	}
	p.SQS = sq
	names := struct{ jobs, domains, queue, dlq, bucket string }{
		pipeline.DefaultJobsTable + o.Suffix, pipeline.DefaultDomainsTable + o.Suffix,
		pipeline.DefaultQueue + o.Suffix, pipeline.DefaultDeadLetter + o.Suffix, pipeline.DefaultBucket + o.Suffix,
	}
	if err := jobs.CreateTable(ctx, ddb, names.jobs); err != nil {
		return nil, fmt.Errorf("local: jobs table: %w", err)
	}
	if err := dynamostore.CreateTable(ctx, ddb, names.domains); err != nil {
		return nil, fmt.Errorf("local: domains table: %w", err)
	}
	if p.DLQURL, err = sqsqueue.CreateQueue(ctx, sq, names.dlq, nil); err != nil {
		return nil, fmt.Errorf("local: dead-letter queue: %w", err)
	}
	dlqARN, err := sqsqueue.QueueARN(ctx, sq, p.DLQURL)
	if err != nil {
		return nil, fmt.Errorf("local: dead-letter queue: %w", err)
	}
	if p.QueueURL, err = sqsqueue.CreateQueue(ctx, sq, names.queue, map[string]string{
		"VisibilityTimeout": strconv.Itoa(int(o.QueueVisibility / time.Second)),
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, dlqARN, o.MaxReceiveCount),
	}); err != nil {
		return nil, fmt.Errorf("local: groups queue: %w", err)
	}

	// The webhook must answer before versitygw starts (it sends a test
	// event and exits if nobody answers).
	p.Webhook = &eventsource.S3Webhook{Logger: log}
	hookAddr, err := freeAddr()
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	hl, err := net.Listen("tcp", hookAddr)
	if err != nil {
		return nil, fmt.Errorf("local: webhook: %w", err)
	}
	p.hook = &http.Server{Handler: p.Webhook, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.hook.Serve(hl) }()

	s3Addr, err := freeAddr()
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	dir := o.DataDir
	if dir == "" {
		if p.tmp, err = os.MkdirTemp("", "urlcheck-s3-"); err != nil {
			return nil, fmt.Errorf("local: %w", err)
		}
		dir = p.tmp
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	p.vgw = exec.Command(o.VersityGW, "--access", "test", "--secret", "test", "--port", s3Addr,
		"--event-webhook-url", "http://"+hookAddr+"/", "--quiet", "posix", dir)
	p.vgw.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
	logf, err := os.Create(filepath.Join(os.TempDir(), "urlcheck-versitygw-"+filepath.Base(dir)+".log"))
	if err == nil {
		p.vgw.Stdout, p.vgw.Stderr = logf, logf
	}
	if err := p.vgw.Start(); err != nil {
		return nil, fmt.Errorf("local: starting versitygw: %w", err)
	}
	if err := waitTCP(ctx, s3Addr, 15*time.Second); err != nil {
		return nil, fmt.Errorf("local: versitygw did not start: %w", err)
	}
	p.S3Endpoint = "http://" + s3Addr
	s3c, err := s3store.NewClient(ctx, p.S3Endpoint, region, o.LoadOptions...)
	if err != nil {
		return nil, err
	}
	if err := s3store.CreateBucket(ctx, s3c, names.bucket); err != nil {
		return nil, fmt.Errorf("local: bucket: %w", err)
	}

	d := &pipeline.Deps{
		Jobs:    jobs.New(ddb, names.jobs, nil),
		Rates:   dynamostore.New(ddb, names.domains),
		Queue:   sqsqueue.New(sq, p.QueueURL),
		Objects: s3store.New(s3c, names.bucket),
		Logger:  log,
	}
	if o.Configure != nil {
		o.Configure(d)
	}
	p.Deps = d
	var ingest eventsource.S3Handler = d.Ingest
	if o.WrapIngest != nil {
		ingest = o.WrapIngest(ingest)
	}
	p.Webhook.Handler = ingest

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel = cancel
	var checker eventsource.SQSHandler = d.HandleSQS
	if o.WrapChecker != nil {
		checker = o.WrapChecker(checker)
	}
	qarn, _ := sqsqueue.QueueARN(ctx, sq, p.QueueURL)
	// Lambda's pollers long-poll for up to 20 s: an idle queue costs one
	// receive per 20 s, not per second.
	p.Poller = &eventsource.SQSPoller{Client: sq, QueueURL: p.QueueURL, QueueARN: qarn, BatchSize: o.BatchSize,
		BatchWindow: o.BatchWindow, MaxConcurrency: o.MaxConcurrency, WaitTime: 20 * time.Second, Handler: checker, Logger: log}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.pollErr = p.Poller.Run(runCtx)
	}()

	apiAddr := o.APIAddr
	if apiAddr == "" {
		apiAddr = "127.0.0.1:0"
	}
	al, err := net.Listen("tcp", apiAddr)
	if err != nil {
		return nil, fmt.Errorf("local: API: %w", err)
	}
	p.api = &http.Server{Handler: eventsource.HTTP(d.HandleAPI, pipeline.Routes), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.api.Serve(al) }()
	p.APIURL = "http://" + al.Addr().String()
	return p, nil
}

func waitTCP(ctx context.Context, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close stops the API, the poller (waiting for running invocations), the
// webhook and versitygw, and removes the temporary data directory. It
// returns the poller's error, if any.
func (p *Pipeline) Close() error {
	if p.api != nil {
		_ = p.api.Close()
	}
	if p.cancel != nil {
		p.cancel()
	}
	p.wg.Wait()
	if p.Webhook != nil {
		p.Webhook.Wait()
	}
	if p.vgw != nil && p.vgw.Process != nil {
		_ = p.vgw.Process.Kill()
		_ = p.vgw.Wait()
	}
	if p.hook != nil {
		_ = p.hook.Close()
	}
	if p.tmp != "" {
		_ = os.RemoveAll(p.tmp)
	}
	return p.pollErr
}
