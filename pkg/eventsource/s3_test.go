package eventsource

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/urlcheck/urlcheck/pkg/results/s3store"
)

// vgwPut is an event as versitygw v1.8.0 posts it (captured from a real
// PutObject of key "dir/a b+c%d=é.txt").
const vgwPut = `{"Records":[{"eventVersion":"2.2","eventSource":"aws:s3","awsRegion":"us-east-1","eventTime":"2026-11-23T14:37:26Z",` +
	`"eventName":"s3:ObjectCreated:Put","userIdentity":{"PrincipalId":"test"},"requestParameters":{"sourceIPAddress":"127.0.0.1"},` +
	`"responseElements":{"x-amz-request-id":"","x-amz-id-2":""},"s3":{"s3SchemaVersion":"1.0","configurationId":"webhook-global",` +
	`"bucket":{"name":"probe","ownerIdentity":{"PrincipalId":"test"},"arn":"arn:aws:s3:::/probe/dir/a b+c%d=é.txt"},` +
	`"object":{"key":"dir/a b+c%d=é.txt","size":6,"eTag":"\"b1946ac92492d2347c6235b4d2611184\"","versionId":null,"sequencer":"1"}},` +
	`"glacierEventData":{"restoreEventData":{"lifecycleRestorationExpiryTime":"","lifecycleRestoreStorageClass":""}}}]}`

const vgwTest = `{"Bucket":"Test-Bucket","Event":"s3:TestEvent","Service":"S3","Time":"2026-11-23T14:37:20Z"}`

// collector is an S3Handler that records its events and fails the first
// failures invocations.
type collector struct {
	mu       sync.Mutex
	events   []events.S3Event
	failures int
	panics   bool
	calls    int
}

func (c *collector) handle(_ context.Context, ev events.S3Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.calls <= c.failures {
		if c.panics {
			panic("boom")
		}
		return errors.New("boom")
	}
	c.events = append(c.events, ev)
	return nil
}

func (c *collector) got() (calls int, evs []events.S3Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls, append([]events.S3Event(nil), c.events...)
}

func TestS3WebhookDecode(t *testing.T) {
	removed := strings.Replace(vgwPut, "s3:ObjectCreated:Put", "s3:ObjectRemoved:Delete", 1)
	tests := []struct {
		name         string
		method, body string
		failures     int
		panics       bool
		retries      int
		wantStatus   int
		wantCalls    int
		wantEvents   int
		wantStats    WebhookStats
	}{
		{name: "put", method: "POST", body: vgwPut, wantStatus: 200, wantCalls: 1, wantEvents: 1,
			wantStats: WebhookStats{Requests: 1, Invocations: 1}},
		{name: "test event ignored", method: "POST", body: vgwTest, wantStatus: 200,
			wantStats: WebhookStats{Requests: 1, Ignored: 1}},
		{name: "removed ignored", method: "POST", body: removed, wantStatus: 200,
			wantStats: WebhookStats{Requests: 1, Ignored: 1}},
		{name: "retried after errors", method: "POST", body: vgwPut, failures: 2, wantStatus: 200, wantCalls: 3, wantEvents: 1,
			wantStats: WebhookStats{Requests: 1, Invocations: 3, Errors: 2}},
		{name: "retried after a panic", method: "POST", body: vgwPut, failures: 1, panics: true, wantStatus: 200, wantCalls: 2, wantEvents: 1,
			wantStats: WebhookStats{Requests: 1, Invocations: 2, Errors: 1}},
		{name: "dropped after the retries", method: "POST", body: vgwPut, failures: 5, wantStatus: 200, wantCalls: 3,
			wantStats: WebhookStats{Requests: 1, Invocations: 3, Errors: 3, Dropped: 1}},
		{name: "no retries", method: "POST", body: vgwPut, failures: 5, retries: -1, wantStatus: 200, wantCalls: 1,
			wantStats: WebhookStats{Requests: 1, Invocations: 1, Errors: 1, Dropped: 1}},
		{name: "one retry", method: "POST", body: vgwPut, failures: 5, retries: 1, wantStatus: 200, wantCalls: 2,
			wantStats: WebhookStats{Requests: 1, Invocations: 2, Errors: 2, Dropped: 1}},
		{name: "not json", method: "POST", body: "nope", wantStatus: 400},
		{name: "GET", method: "GET", wantStatus: 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &collector{failures: tt.failures, panics: tt.panics}
			w := &S3Webhook{Handler: c.handle, Retries: tt.retries, Backoff: time.Millisecond}
			rec := httptest.NewRecorder()
			w.ServeHTTP(rec, httptest.NewRequest(tt.method, "/", strings.NewReader(tt.body)))
			w.Wait()
			if rec.Code != tt.wantStatus {
				t.Errorf("status %d, want %d", rec.Code, tt.wantStatus)
			}
			calls, evs := c.got()
			if calls != tt.wantCalls || len(evs) != tt.wantEvents {
				t.Errorf("%d calls, %d events delivered, want %d, %d", calls, len(evs), tt.wantCalls, tt.wantEvents)
			}
			if s := w.Stats(); s != tt.wantStats {
				t.Errorf("stats %+v, want %+v", s, tt.wantStats)
			}
			if len(evs) == 0 {
				return
			}
			if len(evs[0].Records) != 1 {
				t.Fatalf("%d records", len(evs[0].Records))
			}
			r := evs[0].Records[0]
			want := events.S3EventRecord{
				EventVersion: "2.2", EventSource: "aws:s3", AWSRegion: "us-east-1",
				EventTime:         time.Date(2026, 11, 23, 14, 37, 26, 0, time.UTC),
				EventName:         "ObjectCreated:Put",
				PrincipalID:       events.S3UserIdentity{PrincipalID: "test"},
				RequestParameters: events.S3RequestParameters{SourceIPAddress: "127.0.0.1"},
				ResponseElements:  map[string]string{"x-amz-request-id": "", "x-amz-id-2": ""},
				S3: events.S3Entity{
					SchemaVersion: "1.0", ConfigurationID: "webhook-global",
					Bucket: events.S3Bucket{Name: "probe", OwnerIdentity: events.S3UserIdentity{PrincipalID: "test"}, Arn: "arn:aws:s3:::probe"},
					Object: events.S3Object{Key: "dir/a+b%2Bc%25d%3D%C3%A9.txt", URLDecodedKey: "dir/a b+c%d=é.txt", Size: 6,
						ETag: "b1946ac92492d2347c6235b4d2611184", Sequencer: "1"},
				},
			}
			if !r.EventTime.Equal(want.EventTime) {
				t.Errorf("event time %v, want %v", r.EventTime, want.EventTime)
			}
			r.EventTime = want.EventTime
			if fmt.Sprintf("%+v", r) != fmt.Sprintf("%+v", want) {
				t.Errorf("record\n %+v\nwant\n %+v", r, want)
			}
		})
	}
}

func TestS3KeyEncode(t *testing.T) {
	tests := []struct{ key, want string }{
		{"plain.txt", "plain.txt"},
		{"dir/sub/file.jsonl", "dir/sub/file.jsonl"},
		{"red flower.jpg", "red+flower.jpg"},
		{"a+b", "a%2Bb"},
		{"2026-01-01T00:00:00Z", "2026-01-01T00%3A00%3A00Z"},
	}
	for _, tt := range tests {
		if got := s3KeyEncode(tt.key); got != tt.want {
			t.Errorf("s3KeyEncode(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startVersitygw runs versitygw on a free loopback port with its event
// webhook pointing at webhookURL, and returns its endpoint. It is killed at
// the end of the test.
func startVersitygw(t *testing.T, bin, webhookURL string) string {
	t.Helper()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var out bytes.Buffer
	cmd := exec.Command(bin, "--access", "test", "--secret", "test", "--port", addr,
		"--event-webhook-url", webhookURL, "--quiet", "posix", t.TempDir())
	// versitygw reads settings from generically named variables (WEBHOOK,
	// ROOT_ACCESS_KEY, VGW_*): give it a clean environment, as emu.sh does.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("versitygw exited during start-up: %v; output:\n%s", err, out.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw not listening on %s after 20s; output:\n%s", addr, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestS3WebhookVersitygw(t *testing.T) {
	bin := os.Getenv("URLCHECK_VERSITYGW_BIN")
	if bin == "" {
		t.Skip("set URLCHECK_VERSITYGW_BIN to the versitygw binary (infra/local/emu.sh installs it in .emu/bin)")
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	ctx := context.Background()

	got := make(chan events.S3Event, 10)
	w := &S3Webhook{Handler: func(_ context.Context, ev events.S3Event) error {
		got <- ev
		return nil
	}}
	srv := httptest.NewServer(w)
	t.Cleanup(srv.Close)
	t.Cleanup(w.Wait)
	endpoint := startVersitygw(t, bin, srv.URL)
	if s := w.Stats(); s.Requests != 1 || s.Ignored != 1 {
		t.Errorf("stats after start-up %+v, want the test event received and ignored", s)
	}

	client, err := s3store.NewClient(ctx, endpoint, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	bucket := fmt.Sprintf("urlcheck-es-%d", time.Now().UnixNano())
	if err := s3store.CreateBucket(ctx, client, bucket); err != nil {
		t.Fatal(err)
	}
	const key, content = "results/job 1/part+0.jsonl", `{"url":"https://example.com/"}` + "\n"
	if err := s3store.New(client, bucket).Put(ctx, key, strings.NewReader(content), "application/x-ndjson"); err != nil {
		t.Fatal(err)
	}
	var ev events.S3Event
	select {
	case ev = <-got:
	case <-time.After(10 * time.Second):
		t.Fatalf("no event within 10s; stats %+v", w.Stats())
	}
	if len(ev.Records) != 1 {
		t.Fatalf("%d records, want 1", len(ev.Records))
	}
	r := ev.Records[0]
	sum := md5.Sum([]byte(content))
	o := r.S3.Object
	if r.EventName != "ObjectCreated:Put" || r.EventSource != "aws:s3" || r.S3.Bucket.Name != bucket || r.S3.Bucket.Arn != "arn:aws:s3:::"+bucket {
		t.Errorf("record %+v", r)
	}
	if o.URLDecodedKey != key || o.Key != "results/job+1/part%2B0.jsonl" || o.Size != int64(len(content)) || o.ETag != hex.EncodeToString(sum[:]) {
		t.Errorf("object %+v, want key %q (encoded %q), size %d, eTag %x", o, key, "results/job+1/part%2B0.jsonl", len(content), sum)
	}
	if time.Since(r.EventTime) > time.Minute || r.EventTime.After(time.Now().Add(time.Minute)) {
		t.Errorf("event time %v", r.EventTime)
	}

	// A delete is not an ObjectCreated event: ignored.
	if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the delete event", func() bool { return w.Stats().Ignored == 2 })
	select {
	case ev := <-got:
		t.Errorf("unexpected event %+v", ev)
	default:
	}
}
