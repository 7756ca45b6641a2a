package eventsource

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// S3Webhook defaults and limits.
const (
	// DefaultRetries is the number of retries after a failed invocation when
	// S3Webhook.Retries is 0 (Lambda's asynchronous invocation default).
	DefaultRetries = 2
	// DefaultBackoff is the pause before the first retry when
	// S3Webhook.Backoff is 0.
	DefaultBackoff = time.Second
	// MaxWebhookBody is the largest webhook request body S3Webhook reads,
	// in bytes.
	MaxWebhookBody = 1 << 20
)

// S3Handler is a Lambda handler for S3 event notifications.
type S3Handler func(ctx context.Context, ev events.S3Event) error

// S3Webhook emulates S3 event notifications delivered to a Lambda function,
// fed by versitygw's event webhook (versitygw --event-webhook-url URL, which
// POSTs one JSON document per event). Use a pointer; the zero value with a
// Handler is ready to use. The fields must not change once it serves
// requests.
//
// ServeHTTP answers every well-formed POST with 200 at once (versitygw
// waits for the answer: 1 s for its start-up test event, then 3 s) and
// invokes the handler asynchronously, like Lambda's asynchronous invocation:
// on an error or a panic it retries up to Retries times, pausing Backoff
// before the first retry and twice as long before each next one, then drops
// the event (logged and counted). The s3:TestEvent versitygw sends at
// start-up and records other than ObjectCreated:* are ignored; the
// ObjectCreated records of one POST make one invocation.
//
// versitygw v1.8.0 deviates from the AWS message structure; the records are
// converted to what S3 sends: eventName loses versitygw's "s3:" prefix
// ("ObjectCreated:Put"); object.key, which versitygw sends unencoded, is
// URL-encoded the way S3 does (spaces as "+", "/" kept; URLDecodedKey holds
// the key itself); the quotes around eTag are removed; bucket.arn becomes
// "arn:aws:s3:::BUCKET"; an empty glacierEventData is dropped.
type S3Webhook struct {
	// Handler is invoked with the events; required.
	Handler S3Handler
	// Retries is how many times a failed invocation is retried: 0 means
	// DefaultRetries (2), a negative value means none.
	Retries int
	// Backoff is the pause before the first retry, doubled before each
	// next one; 0 means DefaultBackoff.
	Backoff time.Duration
	// Logger receives ignored events, handler failures and dropped events;
	// nil discards them.
	Logger *slog.Logger

	wg    sync.WaitGroup
	stats webhookCounters
}

// WebhookStats are the counters of an S3Webhook since it was created.
type WebhookStats struct {
	Requests    int64 // POSTs decoded
	Ignored     int64 // test events and records that are not ObjectCreated
	Invocations int64 // handler invocations, retries included
	Errors      int64 // invocations that returned an error or panicked
	Dropped     int64 // events given up after the last retry
}

type webhookCounters struct {
	requests, ignored, invocations, errors, dropped atomic.Int64
}

// Stats returns a snapshot of w's counters.
func (w *S3Webhook) Stats() WebhookStats {
	return WebhookStats{
		Requests:    w.stats.requests.Load(),
		Ignored:     w.stats.ignored.Load(),
		Invocations: w.stats.invocations.Load(),
		Errors:      w.stats.errors.Load(),
		Dropped:     w.stats.dropped.Load(),
	}
}

// Wait blocks until every asynchronous invocation started so far (with its
// retries) has finished. Call it once no more requests arrive (for instance
// after the HTTP server was shut down).
func (w *S3Webhook) Wait() { w.wg.Wait() }

func (w *S3Webhook) logger() *slog.Logger {
	if w.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return w.Logger
}

// vgwMessage is what versitygw v1.8.0 posts: either a test event (Event,
// Service, ...) or an event with Records.
type vgwMessage struct {
	Event   string      `json:"Event"`
	Records []vgwRecord `json:"Records"`
}

type vgwRecord struct {
	EventVersion string `json:"eventVersion"`
	EventSource  string `json:"eventSource"`
	AWSRegion    string `json:"awsRegion"`
	EventTime    string `json:"eventTime"`
	EventName    string `json:"eventName"`
	UserIdentity struct {
		PrincipalID string `json:"principalId"` // versitygw: PrincipalId (matched case-insensitively)
	} `json:"userIdentity"`
	RequestParameters events.S3RequestParameters `json:"requestParameters"`
	ResponseElements  map[string]string          `json:"responseElements"`
	S3                struct {
		SchemaVersion   string `json:"s3SchemaVersion"`
		ConfigurationID string `json:"configurationId"`
		Bucket          struct {
			Name          string `json:"name"`
			OwnerIdentity struct {
				PrincipalID string `json:"principalId"`
			} `json:"ownerIdentity"`
		} `json:"bucket"`
		Object struct {
			Key       string  `json:"key"`
			Size      int64   `json:"size"`
			ETag      *string `json:"eTag"`
			VersionID *string `json:"versionId"`
			Sequencer string  `json:"sequencer"`
		} `json:"object"`
	} `json:"s3"`
}

// s3KeyEncode URL-encodes an object key the way S3 event notifications do:
// form encoding (space as "+") with "/" left as is.
func s3KeyEncode(key string) string {
	return strings.ReplaceAll(url.QueryEscape(key), "%2F", "/")
}

// convert turns a versitygw record into the record S3 would send.
func (r vgwRecord) convert() events.S3EventRecord {
	name := strings.TrimPrefix(r.EventName, "s3:")
	t, _ := time.Parse(time.RFC3339Nano, r.EventTime) // zero time if malformed
	rec := events.S3EventRecord{
		EventVersion:      r.EventVersion,
		EventSource:       r.EventSource,
		AWSRegion:         r.AWSRegion,
		EventTime:         t,
		EventName:         name,
		PrincipalID:       events.S3UserIdentity{PrincipalID: r.UserIdentity.PrincipalID},
		RequestParameters: r.RequestParameters,
		ResponseElements:  r.ResponseElements,
	}
	o := r.S3.Object
	rec.S3 = events.S3Entity{
		SchemaVersion:   r.S3.SchemaVersion,
		ConfigurationID: r.S3.ConfigurationID,
		Bucket: events.S3Bucket{
			Name:          r.S3.Bucket.Name,
			OwnerIdentity: events.S3UserIdentity{PrincipalID: r.S3.Bucket.OwnerIdentity.PrincipalID},
			Arn:           "arn:aws:s3:::" + r.S3.Bucket.Name,
		},
		Object: events.S3Object{
			Key:           s3KeyEncode(o.Key),
			URLDecodedKey: o.Key,
			Size:          o.Size,
			ETag:          strings.Trim(derefString(o.ETag), `"`),
			VersionID:     derefString(o.VersionID),
			Sequencer:     o.Sequencer,
		},
	}
	return rec
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ServeHTTP implements http.Handler for versitygw's webhook: see the S3Webhook
// documentation. It answers 405 to methods other than POST, 400 to a body
// that is not a JSON object (or is over MaxWebhookBody bytes), and 200
// otherwise.
func (w *S3Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	log := w.logger()
	if r.Method != http.MethodPost {
		rw.Header().Set("Allow", http.MethodPost)
		http.Error(rw, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxWebhookBody+1))
	if err != nil || len(body) > MaxWebhookBody {
		http.Error(rw, "cannot read the request body", http.StatusBadRequest)
		return
	}
	var msg vgwMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		log.Warn("s3 webhook: undecodable event", "err", err, "body", string(body))
		http.Error(rw, "bad event: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.stats.requests.Add(1)
	var ev events.S3Event
	for _, rec := range msg.Records {
		c := rec.convert()
		if !strings.HasPrefix(c.EventName, "ObjectCreated:") {
			w.stats.ignored.Add(1)
			log.Debug("s3 webhook: event ignored", "eventName", rec.EventName, "bucket", c.S3.Bucket.Name, "key", c.S3.Object.URLDecodedKey)
			continue
		}
		ev.Records = append(ev.Records, c)
	}
	if len(msg.Records) == 0 {
		w.stats.ignored.Add(1)
		log.Debug("s3 webhook: event without records ignored", "event", msg.Event)
	}
	rw.WriteHeader(http.StatusOK)
	if len(ev.Records) == 0 {
		return
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.deliver(context.WithoutCancel(r.Context()), ev)
	}()
}

// deliver invokes the handler with ev, retrying as configured.
func (w *S3Webhook) deliver(ctx context.Context, ev events.S3Event) {
	log := w.logger()
	retries := w.Retries
	switch {
	case retries == 0:
		retries = DefaultRetries
	case retries < 0:
		retries = 0
	}
	backoff := w.Backoff
	if backoff <= 0 {
		backoff = DefaultBackoff
	}
	first := ev.Records[0].S3
	for attempt := 0; ; attempt++ {
		w.stats.invocations.Add(1)
		err := callS3(ctx, w.Handler, ev)
		if err == nil {
			return
		}
		w.stats.errors.Add(1)
		if attempt >= retries {
			w.stats.dropped.Add(1)
			log.Error("s3 webhook: handler failed, event dropped", "attempts", attempt+1,
				"bucket", first.Bucket.Name, "key", first.Object.URLDecodedKey, "records", len(ev.Records), "err", err)
			return
		}
		log.Warn("s3 webhook: handler failed, retrying", "attempt", attempt+1, "in", backoff,
			"bucket", first.Bucket.Name, "key", first.Object.URLDecodedKey, "err", err)
		sleep(ctx, backoff)
		backoff *= 2
	}
}

// callS3 calls h, turning a panic into an error.
func callS3(ctx context.Context, h S3Handler, ev events.S3Event) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v", errHandlerPanic, v)
		}
	}()
	return h(ctx, ev)
}
