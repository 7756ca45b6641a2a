package scan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/urlcheck/urlcheck/pkg/clock"
	"github.com/urlcheck/urlcheck/pkg/pipeline"
	"github.com/urlcheck/urlcheck/pkg/results"
	"github.com/urlcheck/urlcheck/pkg/results/s3store"
)

// fixedClock is a clock.Clock whose Now is set by the test.
type fixedClock struct{ t time.Time }

func (c *fixedClock) Now() time.Time { return c.t }

func (c *fixedClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func (c *fixedClock) NewTimer(time.Duration) clock.Timer { panic("not used") }

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"nightly", true},
		{"a", true},
		{"site-1", true},
		{strings.Repeat("a", 40), true},
		{strings.Repeat("a", 41), false},
		{"", false},
		{"-x", false},
		{"Nightly", false},
		{"a/b", false},
		{"a_b", false},
	}
	for _, tc := range tests {
		if got := ValidName(tc.name); got != tc.ok {
			t.Errorf("ValidName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
	// Every valid name makes a valid job ID.
	at := time.Date(2026, 11, 23, 15, 4, 5, 0, time.UTC)
	for _, n := range []string{"a", strings.Repeat("z", 40)} {
		if id := JobID(n, at); !pipeline.ValidJobID(id) {
			t.Errorf("JobID(%q) = %q is not a valid job ID", n, id)
		}
	}
	if got := JobID("site", at.In(time.FixedZone("x", 3600))); got != "s-site-20261123t150405z" {
		t.Errorf("JobID = %q", got)
	}
}

func TestInputErrors(t *testing.T) {
	h := &Handler{} // no Deps: every request below fails before using them
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"unknown action", Request{Action: "explode"}, "unknown action"},
		{"start bad name", Request{Action: ActionStart, Name: "Bad", ListKey: "lists/a.txt"}, "invalid scan name"},
		{"start key outside lists", Request{Action: ActionStart, Name: "a", ListKey: "inbox/a.txt"}, "not an object under lists/"},
		{"start key is a folder", Request{Action: ActionStart, Name: "a", ListKey: "lists/x/"}, "not an object"},
		{"start bad time", Request{Action: ActionStart, Name: "a", ListKey: "lists/a.txt", StartedAt: "yesterday"}, "started_at"},
		{"status bad job", Request{Action: ActionStatus, JobID: "x"}, "invalid job ID"},
		{"diff bad name", Request{Action: ActionDiff, Name: "", JobID: "s-a-1234"}, "invalid scan name"},
		{"diff bad job", Request{Action: ActionDiff, Name: "a", JobID: "NO"}, "invalid job ID"},
		{"notify without topic", Request{Action: ActionNotify, Name: "a"}, "no SNS topic"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.Handle(context.Background(), tc.req)
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want an InputError containing %q", err, tc.want)
			}
			if got := ErrorType(err); got != "InputError" {
				t.Errorf("ErrorType = %q", got)
			}
		})
	}
}

type myErr struct{}

func (*myErr) Error() string { return "mine" }

func TestErrorType(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&InputError{Msg: "x"}, "InputError"},
		{fmt.Errorf("wrapped: %w", &InputError{Msg: "x"}), "InputError"},
		{&myErr{}, "myErr"},
		{errors.New("plain"), "errorString"},
	}
	for _, tc := range tests {
		if got := ErrorType(tc.err); got != tc.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestDecodeJSONL(t *testing.T) {
	tests := []struct {
		name, in string
		n        int
		err      string
	}{
		{"empty", "", 0, ""},
		{"two lines, blank ignored", `{"line":1,"url":"https://a.test/","class":"ok"}` + "\n\n" +
			`{"line":2,"url":"https://b.test/","class":"dns","extra":1}`, 2, ""},
		{"bad line", `{"line":1}` + "\n" + `nope`, 0, "line 2"},
		{"long line", `{"line":1,"error":"` + strings.Repeat("x", 200<<10) + `"}`, 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := DecodeJSONL(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(rs) != tc.n {
				t.Fatalf("got %d results, %v; want %d", len(rs), err, tc.n)
			}
		})
	}
}

type fakeSNS struct {
	mu  sync.Mutex
	in  []*sns.PublishInput
	err error
}

func (f *fakeSNS) Publish(_ context.Context, in *sns.PublishInput, _ ...func(*sns.Options)) (*sns.PublishOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	f.in = append(f.in, in)
	return &sns.PublishOutput{MessageId: aws.String("m1")}, nil
}

// store returns an s3store on the local S3 server with a fresh bucket,
// skipping when URLCHECK_S3_ENDPOINT is unset.
func store(t *testing.T) *s3store.Store {
	t.Helper()
	ep := os.Getenv(pipeline.EnvS3Endpoint)
	if ep == "" {
		t.Skip("URLCHECK_S3_ENDPOINT not set (make test starts the local servers)")
	}
	ctx := context.Background()
	c, err := s3store.NewClient(ctx, ep, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	bucket := fmt.Sprintf("scan-test-%d", time.Now().UnixNano()%1e12)
	if err := s3store.CreateBucket(ctx, c, bucket); err != nil {
		t.Fatal(err)
	}
	return s3store.New(c, bucket)
}

// putScan writes results/<job>/{results.jsonl,summary.json} with one line
// per URL, broken ones of class client_error.
func putScan(t *testing.T, s *s3store.Store, job string, finished time.Time, urls []string, broken map[string]bool) {
	t.Helper()
	var b strings.Builder
	nb := 0
	for i, u := range urls {
		r := results.Result{Line: i + 1, URL: u, Domain: strings.Split(u, "/")[2], Class: results.ClassOK, Status: 200,
			LatencyMS: 10, Attempts: 1, CheckedAt: finished}
		if broken[u] {
			r.Class, r.Status, r.Error = results.ClassClientError, 404, "404 Not Found"
			nb++
		}
		line, _ := json.Marshal(r)
		b.Write(append(line, '\n'))
	}
	sum, _ := json.Marshal(results.Summary{JobID: job, Finished: finished, Total: len(urls), Broken: nb})
	ctx := context.Background()
	if err := s.Put(ctx, "results/"+job+"/results.jsonl", strings.NewReader(b.String()), "application/x-ndjson"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "results/"+job+"/summary.json", strings.NewReader(string(sum)), "application/json"); err != nil {
		t.Fatal(err)
	}
}

func readJSON(t *testing.T, s *s3store.Store, key string, v any) {
	t.Helper()
	rc, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, _ := io.ReadAll(rc)
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
}

// TestDiffNotifyFailS3 runs diff (first scan, second scan, retried second
// scan), notify and fail against the local S3 server.
func TestDiffNotifyFailS3(t *testing.T) {
	s := store(t)
	ctx := context.Background()
	clk := &fixedClock{t: time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC)}
	pub := &fakeSNS{}
	h := &Handler{Deps: &pipeline.Deps{Objects: s}, Notifier: pub, TopicARN: "arn:aws:sns:us-east-1:1:t", Clock: clk}
	urls := []string{"https://a.test/1", "https://b.test/2", "https://c.test/3", "https://d.test/4"}
	t1, t2 := clk.t.Add(-time.Hour), clk.t.Add(23*time.Hour)
	putScan(t, s, "s-site-1", t1, urls, map[string]bool{"https://a.test/1": true, "https://c.test/3": true})
	putScan(t, s, "s-site-2", t2, urls, map[string]bool{"https://b.test/2": true, "https://c.test/3": true})

	steps := []struct {
		job                        string
		at                         time.Time
		newly, fixed, still, added int
		prev                       string
	}{
		{"s-site-1", clk.t, 0, 0, 0, 4, ""},
		{"s-site-2", clk.t.Add(24 * time.Hour), 1, 1, 1, 0, "s-site-1"},
		// A retry after the records were written returns the same diff.
		{"s-site-2", clk.t.Add(25 * time.Hour), 1, 1, 1, 0, "s-site-1"},
	}
	var keys []string
	for i, st := range steps {
		clk.t = st.at
		res, err := h.Handle(ctx, Request{Action: ActionDiff, Name: "site", JobID: st.job})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		d := res.(DiffResult)
		if d.NewlyBroken != st.newly || d.Fixed != st.fixed || d.StillBroken != st.still || d.Added != st.added ||
			d.PreviousJob != st.prev {
			t.Errorf("step %d: %+v", i, d)
		}
		var l Latest
		readJSON(t, s, LatestKey("site"), &l)
		if l.JobID != st.job || l.DiffKey != d.DiffKey {
			t.Errorf("step %d: latest %+v, diff key %s", i, l, d.DiffKey)
		}
		keys = append(keys, d.DiffKey)
		if i == 1 && !strings.Contains(d.Markdown, "https://b.test/2") {
			t.Errorf("markdown lacks the newly broken URL:\n%s", d.Markdown)
		}
	}
	if keys[0] == keys[1] || keys[1] != keys[2] {
		t.Errorf("diff keys %q: want a new key per scan and the same on retry", keys)
	}
	if want := "scans/site/20261124t010000z/diff.json"; keys[1] != want {
		t.Errorf("diff key %s, want %s", keys[1], want)
	}

	// Notify.
	res, err := h.Handle(ctx, Request{Action: ActionNotify, Name: "site", JobID: "s-site-2", NewlyBroken: 1, Fixed: 1,
		Markdown: "**1 newly broken**\n", DiffKey: keys[1]})
	if err != nil || res.(NotifyResult).MessageID != "m1" || len(pub.in) != 1 {
		t.Fatalf("notify: %v %v %d", res, err, len(pub.in))
	}
	if sub := aws.ToString(pub.in[0].Subject); sub != "urlcheck scan site: 1 newly broken, 1 fixed" || len(sub) > 100 {
		t.Errorf("subject %q", sub)
	}
	if msg := aws.ToString(pub.in[0].Message); !strings.Contains(msg, "s3://"+s.Bucket()+"/"+keys[1]) {
		t.Errorf("message %q lacks the diff's location", msg)
	}
	pub.err = errors.New("throttled")
	if _, err := h.Handle(ctx, Request{Action: ActionNotify, Name: "site"}); err == nil || ErrorType(err) == "InputError" {
		t.Errorf("notify with a failing SNS: %v (want a retryable error)", err)
	}

	// Fail: the job comes from the state when not given.
	res, err = h.Handle(ctx, Request{Action: ActionFail, Name: "site", Error: &TaskError{Error: "JobFailed", Cause: "boom"},
		State: json.RawMessage(`{"name":"site","job":{"job_id":"s-site-3"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	var f Failure
	readJSON(t, s, res.(FailResult).FailureKey, &f)
	if f.JobID != "s-site-3" || f.Error != "JobFailed" || f.Cause != "boom" ||
		!strings.HasPrefix(res.(FailResult).FailureKey, "scans/site/failures/") {
		t.Errorf("failure %+v at %s", f, res.(FailResult).FailureKey)
	}
	res, err = h.Handle(ctx, Request{Action: ActionFail, Name: "../x"})
	if err != nil || !strings.HasPrefix(res.(FailResult).FailureKey, "scans/_invalid/failures/") {
		t.Errorf("fail with an invalid name: %v %v", res, err)
	}

	// A diff of a job without results is a retryable error, not an input error.
	if _, err := h.Handle(ctx, Request{Action: ActionDiff, Name: "other", JobID: "s-other-1"}); err == nil ||
		!errors.Is(err, s3store.ErrNotFound) {
		t.Errorf("diff of a missing job: %v", err)
	}
}
