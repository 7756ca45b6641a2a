package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/urlcheck/urlcheck/pkg/awsconfig"
	"github.com/urlcheck/urlcheck/pkg/bucket/dynamostore"
	"github.com/urlcheck/urlcheck/pkg/clock"
)

// DefaultTable is the table name the pipeline uses unless configured
// otherwise.
const DefaultTable = "urlcheck-jobs"

// State is the state of a job; see the package documentation for the
// transitions.
type State string

// The states of a job.
const (
	// Splitting: ingest is reading the list and enqueuing groups.
	Splitting State = "splitting"
	// Running: every group is enqueued; checkers are counting progress.
	Running State = "running"
	// Summarizing: every item is counted; the summary is being written.
	Summarizing State = "summarizing"
	// Done: the summary is written. Final.
	Done State = "done"
	// Cancelled: a user cancelled the job. Final.
	Cancelled State = "cancelled"
	// Failed: the job cannot finish; Job.Error says why. Final.
	Failed State = "failed"
)

// Final reports whether s is a state that nothing leaves: Done, Cancelled or
// Failed.
func (s State) Final() bool { return s == Done || s == Cancelled || s == Failed }

// Sentinel errors, always returned wrapped with the job ID and operation:
// test with errors.Is.
var (
	// ErrNotFound: the job has no meta item.
	ErrNotFound = errors.New("job not found")
	// ErrConflict: the job's state does not allow the operation (for
	// example cancelling a job that is done). The message names the state.
	ErrConflict = errors.New("job state conflict")
)

// DomainCount is one entry of a job's top-domains list: a registrable domain
// and how many unique URLs of the job it has.
type DomainCount struct {
	Domain string `json:"domain"`
	URLs   int    `json:"urls"`
}

// Job is the meta item of a job. Zero times mean unset.
type Job struct {
	ID     string // partition key; required
	State  State  // Create defaults it to Splitting
	Source string // where the list came from, e.g. "api" or "inbox"
	Key    string // inbox object key of the list
	ETag   string // that object's ETag
	Name   string // display name

	Created  time.Time // Create sets it to now when zero; stored in ms
	Started  time.Time // set by Start
	Finished time.Time // set on entering a final state
	Updated  time.Time // set by every write to the meta item

	Lines      int // input lines accepted (SetSplit)
	Rejected   int // invalid input lines (SetSplit)
	URLs       int // unique URLs, that is items to check (SetSplit)
	Shards     int // number of progress shards (Start)
	ShardsDone int // shards whose count reached their total
	Sent       int // groups enqueued so far (SetSent)

	Top     []DomainCount // the largest domains (SetSplit)
	Error   string        // why the job failed (Fail)
	Expires time.Time     // TTL, whole seconds; zero = never
}

// Counted is one checked item, as Record counts it. (It is not called Done:
// that is the state.)
type Counted struct {
	Key   int    // the item's identity within the job (its first input line)
	Class string // its result class, e.g. "ok", "not_found"
}

// Progress is a job with its counters summed over its shards.
type Progress struct {
	Job Job
	// Done is the number of items counted, Total the number of items in
	// the job (0 until Start has finished).
	Done, Total int
	// Classes maps result class to items counted with it.
	Classes map[string]int
	// LastProgress is the latest "updated" of the job's items (shards and
	// meta): when something last happened to the job.
	LastProgress time.Time
}

// Store reads and writes jobs in one DynamoDB table laid out as the package
// documentation describes. It is safe for concurrent use.
type Store struct {
	client *dynamodb.Client
	table  string
	clk    clock.Clock
}

// New returns a Store over table, which must exist (see CreateTable). clk
// gives the times written (created, started, updated, ...); nil means
// clock.Real{}.
func New(client *dynamodb.Client, table string, clk clock.Clock) *Store {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Store{client: client, table: table, clk: clk}
}

// NewClient returns a DynamoDB client built from the default AWS
// configuration (awsconfig.Load; extra load options are passed on). endpoint,
// when not empty, overrides the service endpoint (e.g.
// "http://127.0.0.1:8000" for DynamoDB Local); region, when not empty,
// overrides the configured region. Like dynamostore's client it does not
// validate response checksums (DynamoDB Local makes the SDK log a warning on
// every failed condition otherwise). It returns an error, wrapped, when the
// configuration cannot be loaded.
func NewClient(ctx context.Context, endpoint, region string, extra ...func(*config.LoadOptions) error) (*dynamodb.Client, error) {
	cfg, err := awsconfig.Load(ctx, region, extra...)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.DisableValidateResponseChecksum = true
	}), nil
}

// CreateTable creates table with partition key "job" (S), sort key "sk" (S)
// and on-demand billing, waits until it is ACTIVE (polling every 1 to 5 s,
// for at most 5 minutes or until ctx ends), then enables TTL on "expires"
// unless it is enabled already. An existing table is not an error (its key
// schema is not checked). Meant for tests and the local pipeline; on AWS the
// table comes from the deployment template.
func CreateTable(ctx context.Context, client *dynamodb.Client, table string) error {
	err := dynamostore.EnsureTable(ctx, client, &dynamodb.CreateTableInput{
		TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrJob), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrSK), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrJob), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return fmt.Errorf("jobs: describing TTL of table %s: %w", table, err)
	}
	if d := ttl.TimeToLiveDescription; d != nil && aws.ToString(d.AttributeName) == attrExpires &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attrExpires),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("jobs: enabling TTL on %q of table %s: %w", attrExpires, table, err)
	}
	return nil
}

// now returns the store clock's time in unix milliseconds.
func (s *Store) now() int64 { return s.clk.Now().UnixMilli() }

// conditionFailed reports whether err is a failed condition and returns the
// item as it was (ReturnValuesOnConditionCheckFailure ALL_OLD; empty when
// there was no item).
func conditionFailed(err error) (map[string]types.AttributeValue, bool) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf.Item, true
	}
	return nil, false
}

// Create stores j as a new job with a conditional PutItem of its meta item
// (attribute_not_exists). j.ID is required; a zero State becomes Splitting,
// zero Created and Updated become now. It returns the stored job and
// created=true; when the job exists already it stores nothing and returns
// the existing job (as the failed condition returned it, no second read) and
// created=false, so a retried Create is harmless. Errors are wrapped with
// the job ID.
func (s *Store) Create(ctx context.Context, j Job) (Job, bool, error) {
	if j.ID == "" {
		return Job{}, false, errors.New("jobs: creating a job: empty ID")
	}
	if j.State == "" {
		j.State = Splitting
	}
	now := fromMillis(s.now())
	if j.Created.IsZero() {
		j.Created = now
	}
	if j.Updated.IsZero() {
		j.Updated = now
	}
	item, err := encodeJob(j)
	if err != nil {
		return Job{}, false, fmt.Errorf("jobs: creating job %q: %w", j.ID, err)
	}
	e := newExpr()
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(" + e.name(attrJob) + ")"),
		ExpressionAttributeNames:            e.names,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, ok := conditionFailed(err); ok {
		existing, derr := decodeJob(old)
		if derr != nil {
			return Job{}, false, fmt.Errorf("jobs: job %q exists and is unreadable: %w", j.ID, derr)
		}
		return existing, false, nil
	}
	if err != nil {
		return Job{}, false, fmt.Errorf("jobs: creating job %q in table %s: %w", j.ID, s.table, err)
	}
	// What was stored: times at millisecond precision, as Get returns them.
	stored, err := decodeJob(item)
	if err != nil {
		return Job{}, false, fmt.Errorf("jobs: creating job %q: %w", j.ID, err)
	}
	return stored, true, nil
}

// Get returns job id with a strongly consistent read of its meta item. A
// missing job is an error wrapping ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (Job, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            key(id, skMeta),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Job{}, fmt.Errorf("jobs: reading job %q from table %s: %w", id, s.table, err)
	}
	if len(out.Item) == 0 {
		return Job{}, fmt.Errorf("jobs: job %q: %w", id, ErrNotFound)
	}
	j, err := decodeJob(out.Item)
	if err != nil {
		return Job{}, fmt.Errorf("jobs: reading job %q: %w", id, err)
	}
	return j, nil
}

// Progress reads every item of job id with one strongly consistent Query
// (following pagination) and sums its shards. Total is the sum of the
// shards' totals once Start has set Job.Shards, else 0. A job without a meta
// item is an error wrapping ErrNotFound.
func (s *Store) Progress(ctx context.Context, id string) (Progress, error) {
	e := newExpr()
	cond := e.name(attrJob) + " = " + e.value(sv(id))
	pages := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.vals(),
		ConsistentRead:            aws.Bool(true),
	})
	var p Progress
	var total int
	haveMeta := false
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return Progress{}, fmt.Errorf("jobs: reading progress of job %q from table %s: %w", id, s.table, err)
		}
		for _, item := range out.Items {
			sk, _ := getS(item, attrSK)
			switch {
			case sk == skMeta:
				j, err := decodeJob(item)
				if err != nil {
					return Progress{}, fmt.Errorf("jobs: reading job %q: %w", id, err)
				}
				p.Job, haveMeta = j, true
				if j.Updated.After(p.LastProgress) {
					p.LastProgress = j.Updated
				}
			case strings.HasPrefix(sk, shardPrefix):
				v, err := decodeShard(item)
				if err != nil {
					return Progress{}, fmt.Errorf("jobs: reading job %q %s: %w", id, sk, err)
				}
				p.Done += v.done
				total += v.total
				for c, k := range v.classes {
					if p.Classes == nil {
						p.Classes = make(map[string]int)
					}
					p.Classes[c] += k
				}
				if v.updated.After(p.LastProgress) {
					p.LastProgress = v.updated
				}
			}
		}
	}
	if !haveMeta {
		return Progress{}, fmt.Errorf("jobs: job %q: %w", id, ErrNotFound)
	}
	if p.Job.Shards > 0 {
		p.Total = total
	}
	return p, nil
}

// update runs one UpdateItem on the meta item of job id. It returns the item
// after the write (ReturnValues ALL_NEW) and ok=true, or, when cond failed,
// the item before it (empty when the job does not exist) and ok=false.
func (s *Store) update(ctx context.Context, id string, e *expr, update, cond string) (item map[string]types.AttributeValue, ok bool, err error) {
	in := &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(id, skMeta),
		UpdateExpression:                    aws.String(update),
		ExpressionAttributeNames:            e.names,
		ExpressionAttributeValues:           e.vals(),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if cond != "" {
		in.ConditionExpression = aws.String(cond)
	}
	out, err := s.client.UpdateItem(ctx, in)
	if old, failed := conditionFailed(err); failed {
		return old, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("table %s: %w", s.table, err)
	}
	return out.Attributes, true, nil
}

// exists returns the condition "the meta item exists".
func exists(e *expr) string { return "attribute_exists(" + e.name(attrJob) + ")" }

// stateOf decodes the state of a meta item returned by a failed condition.
func stateOf(item map[string]types.AttributeValue) State {
	st, _ := getS(item, attrState)
	return State(st)
}

// SetSent raises the job's sent high-water mark (groups enqueued) to sent.
// It is monotonic: a value not above the stored one is a no-op, not an
// error, so retried and out-of-order calls are harmless. A negative sent is
// an error; a missing job is an error wrapping ErrNotFound.
func (s *Store) SetSent(ctx context.Context, id string, sent int) error {
	if sent < 0 {
		return fmt.Errorf("jobs: job %q: negative sent %d", id, sent)
	}
	e := newExpr()
	v := e.value(nv(int64(sent)))
	upd := "SET " + e.name(attrSent) + " = " + v + ", " + e.name(attrUpdated) + " = " + e.value(nv(s.now()))
	cond := exists(e) + " AND (attribute_not_exists(" + e.name(attrSent) + ") OR " + e.name(attrSent) + " < " + v + ")"
	old, ok, err := s.update(ctx, id, e, upd, cond)
	if err != nil {
		return fmt.Errorf("jobs: setting sent of job %q: %w", id, err)
	}
	if !ok && len(old) == 0 {
		return fmt.Errorf("jobs: setting sent of job %q: %w", id, ErrNotFound)
	}
	return nil
}

// SetSplit records the split's counts on the job, whatever its state: lines
// accepted, rejected lines, unique URLs and the top domains (an empty top
// removes the attribute). A missing job is an error wrapping ErrNotFound.
func (s *Store) SetSplit(ctx context.Context, id string, lines, rejected, urls int, top []DomainCount) error {
	e := newExpr()
	upd := "SET " + e.name(attrLines) + " = " + e.value(nv(int64(lines))) +
		", " + e.name(attrRejected) + " = " + e.value(nv(int64(rejected))) +
		", " + e.name(attrURLs) + " = " + e.value(nv(int64(urls))) +
		", " + e.name(attrUpdated) + " = " + e.value(nv(s.now()))
	if len(top) > 0 {
		t, err := encodeTop(top)
		if err != nil {
			return fmt.Errorf("jobs: job %q: %w", id, err)
		}
		upd += ", " + e.name(attrTop) + " = " + e.value(sv(t))
	} else {
		upd += " REMOVE " + e.name(attrTop)
	}
	old, ok, err := s.update(ctx, id, e, upd, exists(e))
	if err != nil {
		return fmt.Errorf("jobs: recording split of job %q: %w", id, err)
	}
	if !ok && len(old) == 0 {
		return fmt.Errorf("jobs: recording split of job %q: %w", id, ErrNotFound)
	}
	return nil
}

// Transition moves job id from state from to state to with one conditional
// write, setting updated to now and, when to is final, finished to now. It
// returns true when it moved the job and false, with no error, when the job
// was not in state from (someone else moved it). A missing job is an error
// wrapping ErrNotFound. It does not check that the move is one of the
// documented transitions.
func (s *Store) Transition(ctx context.Context, id string, from, to State) (bool, error) {
	e := newExpr()
	now := e.value(nv(s.now()))
	upd := "SET " + e.name(attrState) + " = " + e.value(sv(string(to))) + ", " + e.name(attrUpdated) + " = " + now
	if to.Final() {
		upd += ", " + e.name(attrFinished) + " = " + now
	}
	cond := e.name(attrState) + " = " + e.value(sv(string(from)))
	old, ok, err := s.update(ctx, id, e, upd, cond)
	if err != nil {
		return false, fmt.Errorf("jobs: moving job %q from %s to %s: %w", id, from, to, err)
	}
	if !ok && len(old) == 0 {
		return false, fmt.Errorf("jobs: moving job %q from %s to %s: %w", id, from, to, ErrNotFound)
	}
	return ok, nil
}

// Fail moves job id from any non-final state to Failed, recording reason as
// its error and setting finished and updated to now. Failing a job that has
// failed already is a no-op (the first reason stays); failing a job that is
// done or cancelled is an error wrapping ErrConflict; a missing job is an
// error wrapping ErrNotFound.
func (s *Store) Fail(ctx context.Context, id, reason string) error {
	e := newExpr()
	now := e.value(nv(s.now()))
	upd := "SET " + e.name(attrState) + " = " + e.value(sv(string(Failed))) +
		", " + e.name(attrError) + " = " + e.value(sv(reason)) +
		", " + e.name(attrFinished) + " = " + now + ", " + e.name(attrUpdated) + " = " + now
	cond := exists(e) + " AND NOT (" + e.name(attrState) + " IN (" +
		e.value(sv(string(Done))) + ", " + e.value(sv(string(Cancelled))) + ", " + e.value(sv(string(Failed))) + "))"
	old, ok, err := s.update(ctx, id, e, upd, cond)
	if err != nil {
		return fmt.Errorf("jobs: failing job %q: %w", id, err)
	}
	switch {
	case ok:
		return nil
	case len(old) == 0:
		return fmt.Errorf("jobs: failing job %q: %w", id, ErrNotFound)
	case stateOf(old) == Failed:
		return nil
	default:
		return fmt.Errorf("jobs: failing job %q: it is %s: %w", id, stateOf(old), ErrConflict)
	}
}

// Cancel moves job id from Splitting or Running to Cancelled (finished and
// updated set to now) and returns the job as stored after. Cancelling a
// cancelled job returns it unchanged with no error. A job that is
// summarizing, done or failed is not changed: the error wraps ErrConflict and
// names its state. A missing job is an error wrapping ErrNotFound.
func (s *Store) Cancel(ctx context.Context, id string) (Job, error) {
	e := newExpr()
	now := e.value(nv(s.now()))
	upd := "SET " + e.name(attrState) + " = " + e.value(sv(string(Cancelled))) +
		", " + e.name(attrFinished) + " = " + now + ", " + e.name(attrUpdated) + " = " + now
	cond := e.name(attrState) + " IN (" + e.value(sv(string(Splitting))) + ", " + e.value(sv(string(Running))) + ")"
	item, ok, err := s.update(ctx, id, e, upd, cond)
	if err != nil {
		return Job{}, fmt.Errorf("jobs: cancelling job %q: %w", id, err)
	}
	if !ok {
		switch st := stateOf(item); {
		case len(item) == 0:
			return Job{}, fmt.Errorf("jobs: cancelling job %q: %w", id, ErrNotFound)
		case st != Cancelled:
			return Job{}, fmt.Errorf("jobs: cancelling job %q: it is %s: %w", id, st, ErrConflict)
		}
	}
	j, err := decodeJob(item)
	if err != nil {
		return Job{}, fmt.Errorf("jobs: cancelling job %q: %w", id, err)
	}
	return j, nil
}

// Touch sets the job's updated time to now, to show it is alive (for
// example during a long split). A missing job is an error wrapping
// ErrNotFound.
func (s *Store) Touch(ctx context.Context, id string) error {
	e := newExpr()
	upd := "SET " + e.name(attrUpdated) + " = " + e.value(nv(s.now()))
	old, ok, err := s.update(ctx, id, e, upd, exists(e))
	if err != nil {
		return fmt.Errorf("jobs: touching job %q: %w", id, err)
	}
	if !ok && len(old) == 0 {
		return fmt.Errorf("jobs: touching job %q: %w", id, ErrNotFound)
	}
	return nil
}

// Claim lets one of several repairers take over a stalled step: it sets
// the job's updated time to now on condition that the job is in state and
// its updated time is still seen (as read before, in Job.Updated, to the
// millisecond). It returns true for the one caller whose claim succeeded,
// false (no error) when the job moved on or someone else claimed it first.
// A missing job is an error wrapping ErrNotFound.
func (s *Store) Claim(ctx context.Context, id string, state State, seen time.Time) (bool, error) {
	e := newExpr()
	upd := "SET " + e.name(attrUpdated) + " = " + e.value(nv(s.now()))
	cond := exists(e) + " AND " + e.name(attrState) + " = " + e.value(sv(string(state)))
	if ms := millis(seen); ms > 0 {
		cond += " AND " + e.name(attrUpdated) + " = " + e.value(nv(ms))
	} else {
		cond += " AND attribute_not_exists(" + e.name(attrUpdated) + ")"
	}
	old, ok, err := s.update(ctx, id, e, upd, cond)
	if err != nil {
		return false, fmt.Errorf("jobs: claiming job %q: %w", id, err)
	}
	if !ok && len(old) == 0 {
		return false, fmt.Errorf("jobs: claiming job %q: %w", id, ErrNotFound)
	}
	return ok, nil
}
