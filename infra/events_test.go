package infra

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/urlcheck/urlcheck/pkg/groups"
	"github.com/urlcheck/urlcheck/pkg/pipeline"
)

// decodeEvent strictly decodes events/<name> (unknown fields are errors, to
// catch misspelt keys) into v.
func decodeEvent(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "events", name))
	if err != nil {
		t.Fatalf("read event: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s into %T: %v", name, v, err)
	}
}

func TestAPIEvents(t *testing.T) {
	tests := []struct {
		file, route string
		pathID      bool
	}{
		{"api-post-jobs.json", "POST /jobs", false},
		{"api-get-job.json", "GET /jobs/{id}", true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var ev events.APIGatewayV2HTTPRequest
			decodeEvent(t, tt.file, &ev)
			if ev.Version != "2.0" {
				t.Errorf("version = %q, want 2.0", ev.Version)
			}
			if ev.RouteKey != tt.route || ev.RequestContext.RouteKey != tt.route {
				t.Errorf("routeKey = %q / %q, want %q", ev.RouteKey, ev.RequestContext.RouteKey, tt.route)
			}
			if !slices.Contains(pipeline.Routes, tt.route) {
				t.Errorf("route %q is not in pipeline.Routes", tt.route)
			}
			method, _, _ := strings.Cut(tt.route, " ")
			if ev.RequestContext.HTTP.Method != method || ev.RequestContext.HTTP.Path != ev.RawPath {
				t.Errorf("http = %+v, want method %s path %s", ev.RequestContext.HTTP, method, ev.RawPath)
			}
			if tt.pathID && (ev.PathParameters["id"] == "" || !strings.HasSuffix(ev.RawPath, "/"+ev.PathParameters["id"])) {
				t.Errorf("pathParameters.id = %q, rawPath %q", ev.PathParameters["id"], ev.RawPath)
			}
		})
	}
	var ev events.APIGatewayV2HTTPRequest
	decodeEvent(t, "api-post-jobs.json", &ev)
	if ct := ev.Headers["content-type"]; !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("content-type = %q, want text/plain", ct)
	}
	hosts := map[string]int{}
	n := 0
	for _, line := range strings.Split(ev.Body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		u, err := url.Parse(line)
		if err != nil {
			t.Errorf("body line %q: %v", line, err)
			continue
		}
		hosts[u.Host]++
		n++
	}
	if n != 3 || hosts["example.com"] == 0 || hosts["example.org"] == 0 || len(hosts) != 2 {
		t.Errorf("body has %d URLs on hosts %v, want 3 on example.com and example.org", n, hosts)
	}
}

func TestS3Event(t *testing.T) {
	var ev events.S3Event
	decodeEvent(t, "s3-put.json", &ev)
	if len(ev.Records) != 1 {
		t.Fatalf("%d records, want 1", len(ev.Records))
	}
	r := ev.Records[0]
	if r.EventSource != "aws:s3" || r.EventName != "ObjectCreated:Put" {
		t.Errorf("eventSource %q eventName %q", r.EventSource, r.EventName)
	}
	if k := r.S3.Object.Key; k != pipeline.InboxPrefix+"urls.txt" {
		t.Errorf("key = %q, want %surls.txt", k, pipeline.InboxPrefix)
	}
	if r.S3.Bucket.Name == "" || r.S3.Bucket.Arn != "arn:aws:s3:::"+r.S3.Bucket.Name {
		t.Errorf("bucket %q arn %q", r.S3.Bucket.Name, r.S3.Bucket.Arn)
	}
}

func TestSQSEvent(t *testing.T) {
	var ev events.SQSEvent
	decodeEvent(t, "sqs-batch.json", &ev)
	if len(ev.Records) != 2 {
		t.Fatalf("%d records, want 2", len(ev.Records))
	}
	for i, r := range ev.Records {
		if r.MessageId == "" || r.ReceiptHandle == "" || r.EventSource != "aws:sqs" {
			t.Errorf("record %d: messageId %q receiptHandle %q eventSource %q", i, r.MessageId, r.ReceiptHandle, r.EventSource)
		}
		for _, a := range []string{"ApproximateReceiveCount", "SentTimestamp", "ApproximateFirstReceiveTimestamp"} {
			if r.Attributes[a] == "" {
				t.Errorf("record %d: attribute %s missing", i, a)
			}
		}
		g, err := groups.Decode([]byte(r.Body))
		if err != nil {
			t.Errorf("record %d: %v", i, err)
			continue
		}
		for _, it := range g.Items {
			u, err := url.Parse(it.URL)
			if err != nil || u.Hostname() != g.Domain {
				t.Errorf("record %d: URL %q is not on domain %q", i, it.URL, g.Domain)
			}
		}
	}
}
