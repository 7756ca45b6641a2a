// Package scan implements the task handlers of urlcheck's scheduled scans:
// the Step Functions state machine infra/scan.asl.json calls one Lambda
// function (functions/scan) whose input names an action, and Handler.Handle
// dispatches on it:
//
//   - "start": copy a saved list (an S3 key under ListsPrefix) to
//     inbox/jobs/<job>.<ext> and ingest it as a job (pipeline IngestObject);
//   - "status": the job's state and progress (pipeline Status);
//   - "diff": compare the job's results with the previous scan of the same
//     name (package diff), write scans/<name>/<stamp>/diff.json and move
//     scans/<name>/latest to the new scan;
//   - "notify": publish the diff's Markdown to the SNS topic;
//   - "fail": record why a scan failed under scans/<name>/failures/.
//
// Every action is idempotent, so the state machine may retry any of them:
// the job ID of "start" derives from the scan name and the execution's start
// time, and "diff" recognises a scan it already recorded.
package scan

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/urlcheck/urlcheck/pkg/clock"
	"github.com/urlcheck/urlcheck/pkg/diff"
	"github.com/urlcheck/urlcheck/pkg/pipeline"
	"github.com/urlcheck/urlcheck/pkg/results"
	"github.com/urlcheck/urlcheck/pkg/results/s3store"
)

// Key layout in the data bucket.
const (
	// ListsPrefix is where saved lists live; a scan's list_key must be under
	// it. (Not under inbox/: objects there become drop-folder jobs and
	// expire after InboxRetentionDays.)
	ListsPrefix = "lists/"
	// Prefix holds every scan's records: scans/<name>/latest,
	// scans/<name>/<stamp>/diff.json and scans/<name>/failures/<stamp>.json.
	Prefix = "scans/"
	// LatestName is the object, under scans/<name>/, naming the last
	// recorded scan (JSON Latest).
	LatestName = "latest"
	// StampLayout formats the UTC timestamps of keys and job IDs.
	StampLayout = "20060102t150405z"
)

// EnvTopic is the environment variable holding the SNS topic ARN that
// "notify" publishes to (template.yaml: ScanTopic).
const EnvTopic = "URLCHECK_SCAN_TOPIC"

// Actions of Request.Action.
const (
	ActionStart  = "start"
	ActionStatus = "status"
	ActionDiff   = "diff"
	ActionNotify = "notify"
	ActionFail   = "fail"
)

// MarkdownItems is how many items per section the Markdown of a diff lists
// (the rest are counted), keeping the state machine's payload (256 KiB) and
// the SNS message (256 KiB) small.
const MarkdownItems = 20

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// ValidName reports whether name can name a scan: 1 to 40 lower-case
// letters, digits and '-', not starting with '-'. Names appear in object
// keys and job IDs.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// InputError reports a request that can never succeed (unknown action,
// invalid name or key, missing job). Through Lambda its error type is
// "InputError", which the state machine does not retry.
type InputError struct{ Msg string }

// Error returns the message.
func (e *InputError) Error() string { return e.Msg }

func inputErr(format string, args ...any) error {
	return &InputError{Msg: fmt.Sprintf(format, args...)}
}

// ErrorType returns the error type Lambda reports for err (the name of its
// dynamic type, without pointer): "InputError" for an *InputError anywhere
// in err's chain, else the type name of err itself. Local harnesses use it
// to mimic Lambda.
func ErrorType(err error) string {
	var ie *InputError
	if errors.As(err, &ie) {
		return "InputError"
	}
	t := fmt.Sprintf("%T", err)
	t = strings.TrimPrefix(t, "*")
	if i := strings.LastIndex(t, "."); i >= 0 {
		t = t[i+1:]
	}
	return t
}

// Publisher publishes a message to an SNS topic; *sns.Client satisfies it.
type Publisher interface {
	Publish(ctx context.Context, in *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// Handler runs the actions. Deps is required (its Objects, Jobs, Queue and
// Rates are used by "start" and "status"); Notifier and TopicARN only by
// "notify". Clock, when nil, is the wall clock.
type Handler struct {
	Deps     *pipeline.Deps
	Notifier Publisher
	TopicARN string
	Clock    clock.Clock
}

// TaskError is the error a Catch of the state machine records (ResultPath
// $.error): the error name and its cause.
type TaskError struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// Request is the input of every action (the task state's Parameters).
type Request struct {
	Action string `json:"action"`
	// Name is the scan name (ValidName): start, diff, notify, fail.
	Name string `json:"name,omitempty"`
	// ListKey is the saved list's key under ListsPrefix: start.
	ListKey string `json:"list_key,omitempty"`
	// StartedAt is the execution's start time (RFC 3339,
	// $$.Execution.StartTime): start derives the job ID from it so that a
	// retried start makes the same job. Empty: the handler's clock.
	StartedAt string `json:"started_at,omitempty"`
	// JobID is the scan's job: status, diff, notify, fail (optional).
	JobID string `json:"job_id,omitempty"`
	// NewlyBroken, Fixed, Markdown and DiffKey are the diff's answer: notify.
	NewlyBroken int    `json:"newly_broken,omitempty"`
	Fixed       int    `json:"fixed,omitempty"`
	Markdown    string `json:"markdown,omitempty"`
	DiffKey     string `json:"diff_key,omitempty"`
	// Error and State: fail (the caught error and the execution's state).
	Error *TaskError      `json:"error,omitempty"`
	State json.RawMessage `json:"state,omitempty"`
}

// StartResult is the answer of "start".
type StartResult struct {
	JobID   string `json:"job_id"`
	Key     string `json:"key"`      // the list's copy under inbox/jobs/
	ListKey string `json:"list_key"` // the saved list
	Bytes   int    `json:"bytes"`    // size of the list
}

// StatusResult is the answer of "status". Error is always present (empty
// unless the job failed) so that the state machine can refer to it.
type StatusResult struct {
	JobID string `json:"job_id"`
	State string `json:"state"` // jobs.State: splitting, running, summarizing, done, failed, cancelled
	Done  int    `json:"done"`  // input lines with a result
	Total int    `json:"total"` // input lines
	Error string `json:"error"`
}

// DiffResult is the answer of "diff".
type DiffResult struct {
	JobID       string `json:"job_id"`
	PreviousJob string `json:"previous_job_id"` // "" for the first scan
	NewlyBroken int    `json:"newly_broken"`
	Fixed       int    `json:"fixed"`
	StillBroken int    `json:"still_broken"`
	Added       int    `json:"added"`
	Removed     int    `json:"removed"`
	Markdown    string `json:"markdown"` // Diff.Markdown(MarkdownItems)
	DiffKey     string `json:"diff_key"` // scans/<name>/<stamp>/diff.json
}

// NotifyResult is the answer of "notify".
type NotifyResult struct {
	MessageID string `json:"message_id"`
}

// FailResult is the answer of "fail".
type FailResult struct {
	FailureKey string `json:"failure_key"`
}

// Latest is the JSON object scans/<name>/latest: the last recorded scan.
type Latest struct {
	JobID    string    `json:"job_id"`
	Finished time.Time `json:"finished"`
	DiffKey  string    `json:"diff_key"`
}

// Failure is the JSON object "fail" writes.
type Failure struct {
	Name   string          `json:"name"`
	JobID  string          `json:"job_id,omitempty"`
	Error  string          `json:"error"`
	Cause  string          `json:"cause"`
	At     time.Time       `json:"at"`
	State  json.RawMessage `json:"state,omitempty"`
	Source string          `json:"source"` // "state machine"
}

func (h *Handler) now() time.Time {
	if h.Clock == nil {
		return time.Now().UTC()
	}
	return h.Clock.Now().UTC()
}

// Handle runs req.Action and returns its result (StartResult,
// StatusResult, DiffResult, NotifyResult or FailResult). Errors wrap
// *InputError for requests that cannot succeed, or the store's error.
func (h *Handler) Handle(ctx context.Context, req Request) (any, error) {
	switch req.Action {
	case ActionStart:
		return h.Start(ctx, req)
	case ActionStatus:
		return h.Status(ctx, req)
	case ActionDiff:
		return h.Diff(ctx, req)
	case ActionNotify:
		return h.Notify(ctx, req)
	case ActionFail:
		return h.Fail(ctx, req)
	}
	return nil, inputErr("scan: unknown action %q", req.Action)
}

// LatestKey returns scans/<name>/latest.
func LatestKey(name string) string { return Prefix + name + "/" + LatestName }

// JobID returns the job ID of the scan name started at t:
// "s-<name>-<t in StampLayout>".
func JobID(name string, t time.Time) string {
	return "s-" + name + "-" + t.UTC().Format(StampLayout)
}

// Start copies the saved list req.ListKey to inbox/jobs/<job>.<ext> and
// ingests it as job JobID(req.Name, req.StartedAt). The list is ingested
// here directly, not through the S3 event; on AWS the event fires too, and
// ingest is idempotent per key (the second run finds the job past
// splitting and does nothing), so that is harmless.
func (h *Handler) Start(ctx context.Context, req Request) (StartResult, error) {
	if !ValidName(req.Name) {
		return StartResult{}, inputErr("scan start: invalid scan name %q (want 1-40 of a-z, 0-9, '-')", req.Name)
	}
	if !strings.HasPrefix(req.ListKey, ListsPrefix) || strings.HasSuffix(req.ListKey, "/") {
		return StartResult{}, inputErr("scan start: list_key %q is not an object under %s", req.ListKey, ListsPrefix)
	}
	at := h.now()
	if req.StartedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, req.StartedAt)
		if err != nil {
			return StartResult{}, inputErr("scan start: started_at %q: %v", req.StartedAt, err)
		}
		at = t
	}
	id := JobID(req.Name, at)
	if !pipeline.ValidJobID(id) {
		return StartResult{}, inputErr("scan start: job ID %q is invalid", id)
	}
	body, err := h.Deps.Objects.Get(ctx, req.ListKey)
	if err != nil {
		if errors.Is(err, s3store.ErrNotFound) {
			return StartResult{}, &InputError{Msg: fmt.Sprintf("scan start: no saved list %s: %v", req.ListKey, err)}
		}
		return StartResult{}, fmt.Errorf("scan start: reading %s: %w", req.ListKey, err)
	}
	data, err := io.ReadAll(io.LimitReader(body, pipeline.MaxUploadBytes+1))
	body.Close()
	if err != nil {
		return StartResult{}, fmt.Errorf("scan start: reading %s: %w", req.ListKey, err)
	}
	if len(data) > pipeline.MaxUploadBytes {
		return StartResult{}, inputErr("scan start: %s is larger than %d bytes", req.ListKey, pipeline.MaxUploadBytes)
	}
	ext := path.Ext(req.ListKey)
	if ext == "" || strings.ContainsAny(ext, "/ ") {
		ext = ".txt"
	}
	key := pipeline.JobKeyPrefix + id + ext
	if err := h.Deps.Objects.Put(ctx, key, bytes.NewReader(data), "text/plain"); err != nil {
		return StartResult{}, fmt.Errorf("scan start: copying %s to %s: %w", req.ListKey, key, err)
	}
	if err := h.Deps.IngestObject(ctx, key, "", int64(len(data))); err != nil {
		return StartResult{}, fmt.Errorf("scan start: %w", err)
	}
	return StartResult{JobID: id, Key: key, ListKey: req.ListKey, Bytes: len(data)}, nil
}

// Status returns the state and progress of job req.JobID. Errors wrap
// *InputError for an invalid or unknown job ID.
func (h *Handler) Status(ctx context.Context, req Request) (StatusResult, error) {
	if !pipeline.ValidJobID(req.JobID) {
		return StatusResult{}, inputErr("scan status: invalid job ID %q", req.JobID)
	}
	st, err := h.Deps.Status(ctx, req.JobID)
	if err != nil {
		return StatusResult{}, fmt.Errorf("scan status %s: %w", req.JobID, err)
	}
	return StatusResult{JobID: st.JobID, State: string(st.State), Done: st.Done, Total: st.Total, Error: st.Error}, nil
}

// Diff compares job req.JobID (which must be done) with the scan that
// scans/<req.Name>/latest names, writes the Diff as indented JSON to
// scans/<name>/<stamp>/diff.json, then points latest at the new scan.
// The first scan of a name is compared with nothing (every URL "added").
// If latest already names req.JobID (a retry after the records were
// written), it returns the recorded diff instead of comparing the scan with
// itself.
func (h *Handler) Diff(ctx context.Context, req Request) (DiffResult, error) {
	if !ValidName(req.Name) {
		return DiffResult{}, inputErr("scan diff: invalid scan name %q", req.Name)
	}
	if !pipeline.ValidJobID(req.JobID) {
		return DiffResult{}, inputErr("scan diff: invalid job ID %q", req.JobID)
	}
	prev, hasPrev, err := h.latest(ctx, req.Name)
	if err != nil {
		return DiffResult{}, err
	}
	if hasPrev && prev.JobID == req.JobID && prev.DiffKey != "" {
		d, err := h.loadDiff(ctx, prev.DiffKey)
		if err != nil {
			return DiffResult{}, fmt.Errorf("scan diff: %w", err)
		}
		return diffResult(req.JobID, d, prev.DiffKey), nil
	}
	newRes, newSum, err := LoadScan(ctx, h.Deps.Objects, req.JobID)
	if err != nil {
		return DiffResult{}, fmt.Errorf("scan diff: %w", err)
	}
	var oldRes []results.Result
	var oldSum results.Summary
	var opts diff.Options
	if hasPrev {
		if oldRes, oldSum, err = LoadScan(ctx, h.Deps.Objects, prev.JobID); err != nil {
			return DiffResult{}, fmt.Errorf("scan diff: previous scan: %w", err)
		}
		if prev.DiffKey != "" {
			// Carry "broken since" across the chain of scans; a previous
			// diff that is gone only loses that.
			if pd, err := h.loadDiff(ctx, prev.DiffKey); err == nil {
				opts.Since = pd.BrokenSince()
			}
		}
	}
	d := diff.Compute(oldRes, newRes, oldSum, newSum, opts)
	now := h.now()
	key := Prefix + req.Name + "/" + now.Format(StampLayout) + "/" + diff.FileName
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return DiffResult{}, fmt.Errorf("scan diff: encoding: %w", err)
	}
	if err := h.Deps.Objects.Put(ctx, key, bytes.NewReader(append(data, '\n')), "application/json"); err != nil {
		return DiffResult{}, fmt.Errorf("scan diff: writing %s: %w", key, err)
	}
	finished := newSum.Finished
	if finished.IsZero() {
		finished = now
	}
	lb, err := json.Marshal(Latest{JobID: req.JobID, Finished: finished.UTC(), DiffKey: key})
	if err != nil {
		return DiffResult{}, fmt.Errorf("scan diff: encoding latest: %w", err)
	}
	if err := h.Deps.Objects.Put(ctx, LatestKey(req.Name), bytes.NewReader(lb), "application/json"); err != nil {
		return DiffResult{}, fmt.Errorf("scan diff: writing %s: %w", LatestKey(req.Name), err)
	}
	return diffResult(req.JobID, d, key), nil
}

func diffResult(job string, d diff.Diff, key string) DiffResult {
	return DiffResult{JobID: job, PreviousJob: d.Old.JobID, NewlyBroken: len(d.NewlyBroken), Fixed: len(d.Fixed),
		StillBroken: len(d.StillBroken), Added: len(d.Added), Removed: len(d.Removed),
		Markdown: d.Markdown(MarkdownItems), DiffKey: key}
}

// latest reads scans/<name>/latest; ok is false when there is none.
func (h *Handler) latest(ctx context.Context, name string) (Latest, bool, error) {
	body, err := h.Deps.Objects.Get(ctx, LatestKey(name))
	if errors.Is(err, s3store.ErrNotFound) {
		return Latest{}, false, nil
	}
	if err != nil {
		return Latest{}, false, fmt.Errorf("scan: reading %s: %w", LatestKey(name), err)
	}
	defer body.Close()
	var l Latest
	if err := json.NewDecoder(body).Decode(&l); err != nil {
		return Latest{}, false, fmt.Errorf("scan: decoding %s: %w", LatestKey(name), err)
	}
	if !pipeline.ValidJobID(l.JobID) {
		return Latest{}, false, fmt.Errorf("scan: %s names invalid job %q", LatestKey(name), l.JobID)
	}
	return l, true, nil
}

// loadDiff reads a stored diff.json.
func (h *Handler) loadDiff(ctx context.Context, key string) (diff.Diff, error) {
	body, err := h.Deps.Objects.Get(ctx, key)
	if err != nil {
		return diff.Diff{}, fmt.Errorf("reading %s: %w", key, err)
	}
	defer body.Close()
	var d diff.Diff
	if err := json.NewDecoder(body).Decode(&d); err != nil {
		return diff.Diff{}, fmt.Errorf("decoding %s: %w", key, err)
	}
	return d, nil
}

// ObjectGetter reads objects; *s3store.Store satisfies it.
type ObjectGetter interface {
	Get(ctx context.Context, key string) (io.ReadCloser, error)
}

// LoadScan reads job's results/<job>/results.jsonl and summary.json from
// the bucket, as diff.Load reads them from a directory. Errors name the key
// (and the 1-based line of a malformed results.jsonl) and wrap the store's
// error (s3store.ErrNotFound for a missing object).
func LoadScan(ctx context.Context, objs ObjectGetter, job string) ([]results.Result, results.Summary, error) {
	prefix := pipeline.ResultsPrefix + job + "/"
	sb, err := objs.Get(ctx, prefix+results.SummaryFile)
	if err != nil {
		return nil, results.Summary{}, fmt.Errorf("load scan %s: %w", job, err)
	}
	var sum results.Summary
	err = json.NewDecoder(sb).Decode(&sum)
	sb.Close()
	if err != nil {
		return nil, results.Summary{}, fmt.Errorf("load scan %s: decoding %s: %w", job, prefix+results.SummaryFile, err)
	}
	rb, err := objs.Get(ctx, prefix+results.JSONLFile)
	if err != nil {
		return nil, results.Summary{}, fmt.Errorf("load scan %s: %w", job, err)
	}
	defer rb.Close()
	rs, err := DecodeJSONL(rb)
	if err != nil {
		return nil, results.Summary{}, fmt.Errorf("load scan %s: %s: %w", job, prefix+results.JSONLFile, err)
	}
	return rs, sum, nil
}

// DecodeJSONL decodes results.jsonl content: one JSON Result per line,
// blank lines ignored, unknown fields ignored, lines of any length. Errors
// name the 1-based line.
func DecodeJSONL(r io.Reader) ([]results.Result, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []results.Result
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var res results.Result
			if derr := json.Unmarshal(t, &res); derr != nil {
				return nil, fmt.Errorf("line %d: %w", n, derr)
			}
			out = append(out, res)
		}
		if err != nil {
			return out, nil
		}
	}
}

// Notify publishes req.Markdown (with the diff's key) to the topic, with a
// subject naming the scan and its count of newly broken URLs. Errors wrap
// *InputError when no topic or notifier is configured, or the SNS error.
func (h *Handler) Notify(ctx context.Context, req Request) (NotifyResult, error) {
	if h.Notifier == nil || h.TopicARN == "" {
		return NotifyResult{}, inputErr("scan notify: no SNS topic configured (%s)", EnvTopic)
	}
	if !ValidName(req.Name) {
		return NotifyResult{}, inputErr("scan notify: invalid scan name %q", req.Name)
	}
	subject := fmt.Sprintf("urlcheck scan %s: %d newly broken, %d fixed", req.Name, req.NewlyBroken, req.Fixed)
	msg := req.Markdown
	if req.DiffKey != "" {
		msg += "\nFull diff: s3://" + h.Deps.Objects.Bucket() + "/" + req.DiffKey + "\n"
	}
	if req.JobID != "" {
		msg += "Job: " + req.JobID + "\n"
	}
	out, err := h.Notifier.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(h.TopicARN),
		Subject: aws.String(subject), Message: aws.String(msg)})
	if err != nil {
		return NotifyResult{}, fmt.Errorf("scan notify %s: publishing: %w", req.Name, err)
	}
	return NotifyResult{MessageID: aws.ToString(out.MessageId)}, nil
}

// Fail writes a Failure (req.Error and req.State) to
// scans/<name>/failures/<stamp>.json; an invalid name is recorded under
// scans/_invalid/failures/. Errors wrap the store's error.
func (h *Handler) Fail(ctx context.Context, req Request) (FailResult, error) {
	name := req.Name
	dir := name
	if !ValidName(name) {
		dir = "_invalid"
	}
	now := h.now()
	f := Failure{Name: name, JobID: req.JobID, At: now, State: req.State, Source: "state machine"}
	if req.Error != nil {
		f.Error, f.Cause = req.Error.Error, req.Error.Cause
	}
	if len(f.State) > 0 && !json.Valid(f.State) {
		f.State = nil
	}
	if f.JobID == "" && len(f.State) > 0 {
		// The state machine passes its whole state; the job is in $.job
		// once "start" has succeeded.
		var st struct {
			Job struct {
				JobID string `json:"job_id"`
			} `json:"job"`
		}
		if json.Unmarshal(f.State, &st) == nil {
			f.JobID = st.Job.JobID
		}
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return FailResult{}, fmt.Errorf("scan fail: encoding: %w", err)
	}
	key := Prefix + dir + "/failures/" + now.Format(StampLayout) + ".json"
	if err := h.Deps.Objects.Put(ctx, key, bytes.NewReader(append(data, '\n')), "application/json"); err != nil {
		return FailResult{}, fmt.Errorf("scan fail: writing %s: %w", key, err)
	}
	return FailResult{FailureKey: key}, nil
}
