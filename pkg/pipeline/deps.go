package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/urlcheck/urlcheck/pkg/bucket"
	"github.com/urlcheck/urlcheck/pkg/bucket/dynamostore"
	"github.com/urlcheck/urlcheck/pkg/check"
	"github.com/urlcheck/urlcheck/pkg/clock"
	"github.com/urlcheck/urlcheck/pkg/jobs"
	"github.com/urlcheck/urlcheck/pkg/queue/sqsqueue"
	"github.com/urlcheck/urlcheck/pkg/results/s3store"
	"github.com/urlcheck/urlcheck/pkg/schedule"
	"github.com/urlcheck/urlcheck/pkg/urlnorm"
)

// Defaults of Deps' tunables.
const (
	// DefaultShardLines is how many input lines one progress shard counts
	// (package jobs). Each shard item holds the set of its counted lines, so
	// its size, and the write units of every update to it, grow with this.
	DefaultShardLines = 1000
	// DefaultStuckAfter is how long a running job may go without progress
	// before GET /jobs/{id} reports it stuck.
	DefaultStuckAfter = 10 * time.Minute
	// DefaultRecycleAfter: a message received this many times that is to be
	// hidden again (its domain has no tokens yet) is re-sent as a new
	// message instead, so that throttling alone never brings it to the
	// queue's maxReceiveCount and the dead-letter queue.
	DefaultRecycleAfter = 4
	// DefaultJobTTL is how long job items live in DynamoDB (TTL attribute).
	DefaultJobTTL = 30 * 24 * time.Hour
	// MaxBodyBytes is the largest list POST /jobs accepts inline (5 MiB);
	// larger lists go through POST /uploads.
	MaxBodyBytes = 5 << 20
	// MaxUploadBytes is the largest list the drop folder accepts (100 MiB).
	MaxUploadBytes = 100 << 20
)

// Deps are what the handlers work with: the AWS adapters, the clock and the
// tunables of checking and politeness. Build them with FromEnv (on AWS and
// in the local pipeline) or by hand in tests. A Deps is safe for concurrent
// use once built; do not change its fields afterwards.
type Deps struct {
	Jobs     *jobs.Store     // job states and progress (required)
	Rates    bucket.Store    // per-domain token buckets and learned rates (required)
	Queue    *sqsqueue.Queue // the queue of domain groups (required)
	Objects  *s3store.Store  // inbox/ uploads and results/ (required)
	Clock    clock.Clock     // nil = clock.Real{}
	Logger   *slog.Logger    // nil = slog.Default()
	Limits   bucket.Config   // politeness limits (zero = bucket defaults)
	Schedule schedule.Config // retry and throttle policy (zero = defaults)
	Check    check.Config    // how URLs are checked (zero = defaults)
	// Checker, when set, replaces the check.Checker built from Check.
	Checker schedule.Checker
	// Keyer maps hosts to registrable domains (nil: plain eTLD+1).
	Keyer *urlnorm.Keyer

	GroupSize    int           // URLs per group message; 0 = groups.DefaultMaxGroup
	ShardLines   int           // 0 = DefaultShardLines
	StuckAfter   time.Duration // 0 = DefaultStuckAfter
	RecycleAfter int           // 0 = DefaultRecycleAfter
	JobTTL       time.Duration // 0 = DefaultJobTTL
	APIKey       string        // required x-api-key value; "" = no key check
	// Owner names this process in concurrency-slot leases; "" = host name
	// and process ID.
	Owner string

	checker  *checkerState
	jobCache *stateCache
}

// FromEnv builds Deps from the environment variables of config.go (the
// template's wiring), creating the AWS clients with extra load options (SDK
// middleware, for instance). It returns an error naming the missing
// variable, or the client construction error.
func FromEnv(ctx context.Context, extra ...func(*config.LoadOptions) error) (*Deps, error) {
	need := func(name string) (string, error) {
		v := os.Getenv(name)
		if v == "" {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		return v, nil
	}
	var names [4]string
	for i, n := range []string{EnvJobsTable, EnvDomainsTable, EnvQueueURL, EnvBucket} {
		v, err := need(n)
		if err != nil {
			return nil, err
		}
		names[i] = v
	}
	region := os.Getenv("AWS_REGION")
	ddb, err := dynamostore.NewClient(ctx, os.Getenv(EnvDDBEndpoint), region, extra...)
	if err != nil {
		return nil, err
	}
	sq, err := sqsqueue.NewClient(ctx, os.Getenv(EnvSQSEndpoint), region, extra...)
	if err != nil {
		return nil, err
	}
	s3c, err := s3store.NewClient(ctx, os.Getenv(EnvS3Endpoint), region, extra...)
	if err != nil {
		return nil, err
	}
	var ttl time.Duration
	if v := os.Getenv(EnvJobTTLDays); v != "" {
		days, err := strconv.Atoi(v)
		if err != nil || days < 1 {
			return nil, fmt.Errorf("environment variable %s=%q: want a whole number of days >= 1", EnvJobTTLDays, v)
		}
		ttl = time.Duration(days) * 24 * time.Hour
	}
	return &Deps{
		JobTTL:  ttl,
		Jobs:    jobs.New(ddb, names[0], nil),
		Rates:   dynamostore.New(ddb, names[1]),
		Queue:   sqsqueue.New(sq, names[2]),
		Objects: s3store.New(s3c, names[3]),
		APIKey:  os.Getenv(EnvAPIKey),
	}, nil
}

func (d *Deps) clock() clock.Clock {
	if d.Clock == nil {
		return clock.Real{}
	}
	return d.Clock
}

func (d *Deps) log() *slog.Logger {
	if d.Logger == nil {
		return slog.Default()
	}
	return d.Logger
}

func (d *Deps) shardLines() int {
	if d.ShardLines <= 0 {
		return DefaultShardLines
	}
	return d.ShardLines
}

func (d *Deps) stuckAfter() time.Duration {
	if d.StuckAfter <= 0 {
		return DefaultStuckAfter
	}
	return d.StuckAfter
}

func (d *Deps) recycleAfter() int {
	if d.RecycleAfter <= 0 {
		return DefaultRecycleAfter
	}
	return d.RecycleAfter
}

func (d *Deps) jobTTL() time.Duration {
	if d.JobTTL <= 0 {
		return DefaultJobTTL
	}
	return d.JobTTL
}

func (d *Deps) owner() string {
	if d.Owner != "" {
		return d.Owner
	}
	h, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", h, os.Getpid())
}
