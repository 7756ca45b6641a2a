package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/urlcheck/urlcheck/pkg/eventsource"
	"github.com/urlcheck/urlcheck/pkg/pipeline"
	"github.com/urlcheck/urlcheck/pkg/pipeline/local"
	"github.com/urlcheck/urlcheck/pkg/queue/sqsqueue"
)

const ingestName = "serverless ingest"

// ingestMillion measures the ingest function's work on a 1,000,000-URL list
// (100,000 domains): streaming it from S3, splitting it by registrable
// domain and sending its groups with SendMessageBatch, against the local
// servers. Lambda allows 900 s and 10,240 MB; the template gives ingest
// 900 s and 1,769 MB.
func ingestMillion(ctx context.Context) ([]row, error) {
	ddbEP, sqsEP := os.Getenv(pipeline.EnvDDBEndpoint), os.Getenv(pipeline.EnvSQSEndpoint)
	vgw := os.Getenv("URLCHECK_VERSITYGW_BIN")
	scenario := "1,000,000 URLs / 100,000 domains (serverless ingest)"
	if ddbEP == "" || sqsEP == "" || vgw == "" {
		return []row{{scenario, "ingest: S3 -> split -> SQS", "≤ 900 s, ≤ 1,769 MB", "skipped (no local AWS servers)", ""}}, nil
	}
	p, err := local.Start(ctx, local.Options{DDBEndpoint: ddbEP, SQSEndpoint: sqsEP, VersityGW: vgw,
		Suffix: fmt.Sprintf("-ingest-%d", time.Now().UnixNano()%1e9),
		// The webhook must not start a second ingest of the same object.
		WrapIngest: func(eventsource.S3Handler) eventsource.S3Handler {
			return func(context.Context, events.S3Event) error { return nil }
		},
		// Nothing may check the million URLs: the checker drops every record.
		WrapChecker: func(eventsource.SQSHandler) eventsource.SQSHandler {
			return func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
				return events.SQSEventResponse{}, nil
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	defer p.Close()
	var b strings.Builder
	for i := range 1_000_000 {
		fmt.Fprintf(&b, "https://www.site%d.example.com/path/%d?q=%d\n", i%100_000, i, i%7)
	}
	list := b.String()
	key := pipeline.JobKeyPrefix + "bench-ingest-million.txt"
	if err := p.Deps.Objects.Put(ctx, key, strings.NewReader(list), "text/plain"); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	b.Reset()
	list = ""
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}
	}()
	start := time.Now()
	err = p.Deps.IngestObject(ctx, key, "", int64(0))
	el := time.Since(start)
	close(stop)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	j, err := p.Deps.Jobs.Get(ctx, "bench-ingest-million")
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	mb := float64(peak.Load()-min(peak.Load(), base.HeapInuse)) / (1 << 20)
	msgs := (j.Sent + sqsqueue.MaxSendBatch - 1) / sqsqueue.MaxSendBatch
	return []row{{scenario, "ingest: S3 -> split -> SQS", "≤ 900 s, ≤ 1,769 MB",
		fmt.Sprintf("%.1f s, %.0f MB heap (%d lines, %d groups in %d SendMessageBatch requests, %d shards, state %s)",
			el.Seconds(), mb, j.Lines, j.Sent, msgs, j.Shards, j.State), verdict(el <= 900*time.Second && mb <= 1769)}}, nil
}
