package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/urlcheck/urlcheck/pkg/check"
	"github.com/urlcheck/urlcheck/pkg/groups"
	"github.com/urlcheck/urlcheck/pkg/jobs"
	"github.com/urlcheck/urlcheck/pkg/results"
	"github.com/urlcheck/urlcheck/pkg/urllist"
)

// JobKeyPrefix is where POST /jobs puts lists whose job ID it has already
// handed out (inbox/jobs/<id>.<ext>), and UploadKeyPrefix where the
// presigned uploads of POST /uploads go (inbox/uploads/<id>.<ext>). Any
// other key under InboxPrefix is a drop-folder upload whose job ID is
// derived from the key and ETag.
const (
	JobKeyPrefix    = InboxPrefix + "jobs/"
	UploadKeyPrefix = InboxPrefix + "uploads/"
)

var jobIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{5,63}$`)

// ValidJobID reports whether id has the shape of a job ID: 6 to 64
// characters of lower-case letters, digits and '-', not starting with '-'.
func ValidJobID(id string) bool { return jobIDPattern.MatchString(id) }

// JobForKey returns the job ID and source ("api", "upload" or "drop") of the
// object key with the given ETag: for inbox/jobs/<id>.<ext> and
// inbox/uploads/<id>.<ext> the ID in the name; for
// any other inbox key "d-" and 20 hex digits of SHA-256(key, ETag), so that
// the same object (key and ETag) always yields the same job and an
// overwritten object a new one. ok is false for keys outside the inbox.
func JobForKey(key, etag string) (id, source string, ok bool) {
	if !strings.HasPrefix(key, InboxPrefix) || strings.HasSuffix(key, "/") {
		return "", "", false
	}
	for prefix, src := range map[string]string{JobKeyPrefix: "api", UploadKeyPrefix: "upload"} {
		if rest, found := strings.CutPrefix(key, prefix); found && !strings.Contains(rest, "/") {
			base := strings.TrimSuffix(rest, path.Ext(rest))
			if ValidJobID(base) {
				return base, src, true
			}
		}
	}
	sum := sha256.Sum256([]byte(key + "\x00" + strings.Trim(etag, `"`)))
	return "d-" + hex.EncodeToString(sum[:10]), "drop", true
}

// Ingest handles an S3 event notification (the drop folder): every
// ObjectCreated record under InboxPrefix becomes a job (see IngestObject).
// Other records are ignored. It returns the records' errors joined; S3
// delivers events at least once and Lambda retries a failed asynchronous
// invocation, and IngestObject is idempotent, so a retry is safe.
func (d *Deps) Ingest(ctx context.Context, ev events.S3Event) error {
	var errs []error
	for _, r := range ev.Records {
		if !strings.HasPrefix(r.EventName, "ObjectCreated") && !strings.HasPrefix(r.EventName, "s3:ObjectCreated") {
			continue
		}
		key := r.S3.Object.URLDecodedKey
		if key == "" {
			k, err := url.QueryUnescape(r.S3.Object.Key)
			if err != nil {
				errs = append(errs, fmt.Errorf("object key %q: %w", r.S3.Object.Key, err))
				continue
			}
			key = k
		}
		if err := d.ingestRetrying(ctx, key, r.S3.Object.ETag, r.S3.Object.Size); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ingestAttempts is how many times Ingest tries an object before it leaves
// the retry to Lambda's asynchronous invocation (and the status check's
// repair of a job stuck in splitting).
const ingestAttempts = 4

// ingestRetrying runs IngestObject, retrying failures (after the SDK's own
// retries) with a growing, jittered pause: it is idempotent and resumes
// where it stopped.
func (d *Deps) ingestRetrying(ctx context.Context, key, etag string, size int64) error {
	var err error
	for i := range ingestAttempts {
		if err = d.IngestObject(ctx, key, etag, size); err == nil || ctx.Err() != nil {
			return err
		}
		d.log().Warn("ingest: attempt failed", "key", key, "attempt", i+1, "err", err)
		pause := time.Duration(100<<i) * time.Millisecond
		if err := d.clock().Sleep(ctx, pause/2+time.Duration(rand.Int64N(int64(pause/2)))); err != nil {
			return err
		}
	}
	return err
}

// IngestObject makes the job of the inbox object key: it creates the job
// (or finds it), streams and parses the list, splits it by registrable
// domain into group messages, records the lines that are not valid URLs as
// results, sends the groups with SendMessageBatch and starts the job.
//
// It is idempotent: the job ID comes from the key and ETag (JobForKey); a
// job past splitting is left alone; a split that was interrupted resumes
// after the groups already sent (the job's sent mark), so a retry adds at
// most one mark's worth of duplicate messages, which the checkers count
// once. A list that cannot be read or parsed fails the job with the reason
// (line number included) and returns nil: retrying would not help.
func (d *Deps) IngestObject(ctx context.Context, key, etag string, size int64) error {
	id, source, ok := JobForKey(key, etag)
	if !ok {
		return nil
	}
	log := d.log().With("job", id, "key", key)
	now := d.clock().Now()
	job, created, err := d.Jobs.Create(ctx, jobs.Job{
		ID: id, State: jobs.Splitting, Source: source, Key: key, ETag: strings.Trim(etag, `"`),
		Name: path.Base(key), Expires: now.Add(d.jobTTL()),
	})
	if err != nil {
		return fmt.Errorf("ingest %s: creating job %s: %w", key, id, err)
	}
	if !created && job.State != jobs.Splitting {
		log.Info("ingest: job already split", "state", job.State)
		return nil
	}
	if size > MaxUploadBytes {
		return d.failJob(ctx, id, fmt.Sprintf("the list is %d bytes, more than the %d-byte limit", size, MaxUploadBytes))
	}
	body, err := d.Objects.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("ingest %s: %w", key, err)
	}
	defer body.Close()

	sp := groups.NewSplitter(d.GroupSize)
	invalid := &part{}
	lines := 0
	err = urllist.Read(io.LimitReader(body, MaxUploadBytes+1), urllist.Options{Name: key, Keyer: d.Keyer}, func(e urllist.Entry) error {
		lines++
		if e.Err != "" {
			invalid.results = append(invalid.results, results.Result{Line: e.Line, URL: e.Raw, Domain: e.Domain,
				Class: string(check.ClassInvalid), Error: e.Err, CheckedAt: now})
			return nil
		}
		sp.Add(e.Domain, e.URL, e.Line)
		return nil
	})
	if err != nil {
		var rerr interface{ Timeout() bool }
		if errors.As(err, &rerr) || ctx.Err() != nil {
			return fmt.Errorf("ingest %s: reading: %w", key, err)
		}
		return d.failJob(ctx, id, fmt.Sprintf("reading the list: %v", err))
	}
	gs := sp.Groups(id)
	totals := assignShards(gs, d.shardLines())
	domains := sp.Domains()
	if err := d.Jobs.SetSplit(ctx, id, lines, len(invalid.results), sp.Unique(), topDomains(domains, 10)); err != nil {
		return fmt.Errorf("ingest %s: %w", key, err)
	}
	if !invalid.empty() {
		// A fixed key: a retried ingest overwrites it with the same content.
		if err := d.putPart(ctx, id, partsPrefix(id)+"0000000000000000000-ingest.jsonl", invalid); err != nil {
			return fmt.Errorf("ingest %s: %w", key, err)
		}
	}
	if err := d.sendGroups(ctx, id, gs, job.Sent); err != nil {
		return fmt.Errorf("ingest %s: %w", key, err)
	}
	complete, err := d.Jobs.Start(ctx, id, totals)
	if err != nil {
		if errors.Is(err, jobs.ErrConflict) {
			log.Info("ingest: job no longer splitting (cancelled?)")
			return nil
		}
		return fmt.Errorf("ingest %s: starting job: %w", key, err)
	}
	log.Info("ingest: job running", "lines", lines, "invalid", len(invalid.results), "urls", sp.Unique(),
		"domains", len(domains), "groups", len(gs), "shards", len(totals))
	if complete {
		return d.finishJob(ctx, id)
	}
	return nil
}

// sentMarkEvery is how many groups are sent between updates of the job's
// sent mark: the most duplicates an interrupted split can cause.
const sentMarkEvery = 200

// sendGroups sends gs[from:] in SendMessageBatch requests of 10, raising the
// job's sent mark every sentMarkEvery groups.
func (d *Deps) sendGroups(ctx context.Context, job string, gs []groups.Group, from int) error {
	if from >= len(gs) {
		return nil
	}
	var bodies [][]byte
	flush := func(upto int) error {
		if len(bodies) == 0 {
			return nil
		}
		if err := d.Queue.SendBatch(ctx, bodies, 0); err != nil {
			return fmt.Errorf("sending groups: %w", err)
		}
		bodies = bodies[:0]
		return d.Jobs.SetSent(ctx, job, upto)
	}
	for i := from; i < len(gs); i++ {
		b, err := groups.Encode(gs[i])
		if err != nil {
			return fmt.Errorf("encoding the group of %s: %w", gs[i].Domain, err)
		}
		bodies = append(bodies, b)
		if len(bodies) == sentMarkEvery {
			if err := flush(i + 1); err != nil {
				return err
			}
		}
	}
	return flush(len(gs))
}

// assignShards sets each group's progress shard: consecutive groups share a
// shard until it counts at least shardLines lines. It returns the lines of
// each shard. Groups sent together tend to be checked together, so one
// invocation mostly touches one shard.
func assignShards(gs []groups.Group, shardLines int) []int {
	var totals []int
	cur := 0
	for i := range gs {
		n := 0
		for _, it := range gs[i].Items {
			n += len(it.Lines)
		}
		if len(totals) == 0 || cur >= shardLines {
			totals = append(totals, 0)
			cur = 0
		}
		gs[i].Shard = len(totals) - 1
		totals[len(totals)-1] += n
		cur += n
	}
	return totals
}

// topDomains returns the n domains with the most URLs, most first, ties by
// name.
func topDomains(domains map[string]int, n int) []jobs.DomainCount {
	out := make([]jobs.DomainCount, 0, len(domains))
	for d, c := range domains {
		out = append(out, jobs.DomainCount{Domain: d, URLs: c})
	}
	slices.SortFunc(out, func(a, b jobs.DomainCount) int {
		if a.URLs != b.URLs {
			return b.URLs - a.URLs
		}
		return strings.Compare(a.Domain, b.Domain)
	})
	return out[:min(max(n, 0), len(out))]
}

// failJob marks job failed with reason; the error returned is only a store
// failure (the input's fault is not the invocation's).
func (d *Deps) failJob(ctx context.Context, id, reason string) error {
	d.log().Warn("job failed", "job", id, "reason", reason)
	if err := d.Jobs.Fail(ctx, id, reason); err != nil {
		return fmt.Errorf("failing job %s: %w", id, err)
	}
	return nil
}
