package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/urlcheck/urlcheck/pkg/check"
	"github.com/urlcheck/urlcheck/pkg/jobs"
	"github.com/urlcheck/urlcheck/pkg/pipeline"
	"github.com/urlcheck/urlcheck/pkg/pipeline/local"
)

// errOffline is what the offline checker's resolver and dialer return.
var errOffline = errors.New("api test: the network is off")

// apiOffline is a Configure that keeps the checker on this machine: every
// host name fails to resolve (ClassDNS) and every dial is refused, so no
// test reaches the internet whatever the list holds. apiKey, when not
// empty, becomes the required x-api-key value.
func apiOffline(apiKey string) func(*pipeline.Deps) {
	return func(d *pipeline.Deps) {
		d.APIKey = apiKey
		d.Check = check.Config{
			Resolver: func(context.Context, string) ([]netip.Addr, error) { return nil, errOffline },
			Dial: func(context.Context, string, netip.AddrPort) (net.Conn, error) {
				return nil, errOffline
			},
			ConnectTimeout: time.Second, TLSTimeout: time.Second, HeaderTimeout: time.Second, TotalTimeout: 2 * time.Second,
		}
	}
}

var (
	apiSpecOnce sync.Once
	apiSpecDoc  *openapi3.T
	apiSpecErr  error
)

// apiSpec loads and validates infra/openapi.yaml once per test binary.
func apiSpec(t *testing.T) *openapi3.T {
	t.Helper()
	apiSpecOnce.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join("..", "..", "..", "infra", "openapi.yaml"))
		if err == nil {
			err = doc.Validate(context.Background())
		}
		apiSpecDoc, apiSpecErr = doc, err
	})
	if apiSpecErr != nil {
		t.Fatalf("infra/openapi.yaml: %v", apiSpecErr)
	}
	return apiSpecDoc
}

// apiStart starts a local pipeline with the offline checker and apiKey
// (see apiOffline), closed when the test ends.
func apiStart(t *testing.T, apiKey string) *local.Pipeline {
	t.Helper()
	o := servers(t)
	o.Configure = apiOffline(apiKey)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := local.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("closing the pipeline: %v", err)
		}
	})
	return p
}

// apiCase is one HTTP request to the API and the answer it must get.
type apiCase struct {
	name   string
	method string
	path   string            // request path (escaped), e.g. /jobs/j-x
	route  string            // openapi path of the operation; "" = no route (the API front answers)
	ctype  string            // Content-Type; "" = none
	header map[string]string // extra request headers
	body   []byte
	status int    // wanted status
	code   string // wanted error code; "" = a success answer
	line   int    // wanted error line; -1 = any line >= 1; 0 = none
	msgHas string // a text the error message must contain
}

// apiAnswer is a decoded API answer.
type apiAnswer struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// apiDo sends c's request to api.
func apiDo(t *testing.T, api string, c apiCase) apiAnswer {
	t.Helper()
	req, err := http.NewRequest(c.method, api+c.path, bytes.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	if c.ctype != "" {
		req.Header.Set("Content-Type", c.ctype)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", c.method, c.path, err)
	}
	a := apiAnswer{status: resp.StatusCode, header: resp.Header, raw: raw}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("%s %s: %d answer %q is not a JSON object: %v", c.method, c.path, resp.StatusCode, apiClip(raw), err)
	}
	return a
}

func apiClip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// apiCheck sends c's request and checks the answer: status, content type,
// the error shape {"error":{"code","message"}} with the wanted code, line
// and message, and that infra/openapi.yaml declares the status for the
// operation, names the code in its description and that the body validates
// against the declared schema. It returns the answer.
func apiCheck(t *testing.T, doc *openapi3.T, api string, c apiCase) apiAnswer {
	t.Helper()
	a := apiDo(t, api, c)
	if a.status != c.status {
		t.Errorf("%s %s: status %d, want %d; body %s", c.method, c.path, a.status, c.status, apiClip(a.raw))
	}
	if mt, _, err := mime.ParseMediaType(a.header.Get("Content-Type")); err != nil || mt != "application/json" {
		t.Errorf("%s %s: content type %q, want application/json", c.method, c.path, a.header.Get("Content-Type"))
	}
	if c.route == "" {
		// Not an API route: API Gateway itself answers, before any function.
		if a.body["message"] != "Not Found" || len(a.body) != 1 {
			t.Errorf("%s %s: body %s, want the API front's {\"message\":\"Not Found\"}", c.method, c.path, a.raw)
		}
		return a
	}
	if c.code != "" {
		apiCheckError(t, c, a)
	} else if _, isErr := a.body["error"]; isErr {
		t.Errorf("%s %s: success answer with an error member: %s", c.method, c.path, apiClip(a.raw))
	}
	apiCheckSpec(t, doc, c, a)
	return a
}

// apiCheckError checks the error shape, code, line and message of a.
func apiCheckError(t *testing.T, c apiCase, a apiAnswer) {
	t.Helper()
	e, ok := a.body["error"].(map[string]any)
	if !ok {
		t.Errorf("%s %s: body %s has no error object", c.method, c.path, apiClip(a.raw))
		return
	}
	code, _ := e["code"].(string)
	msg, _ := e["message"].(string)
	if code != c.code {
		t.Errorf("%s %s: error code %q, want %q (message %q)", c.method, c.path, code, c.code, msg)
	}
	if msg == "" {
		t.Errorf("%s %s: error without a message: %s", c.method, c.path, a.raw)
	}
	if c.msgHas != "" && !strings.Contains(msg, c.msgHas) {
		t.Errorf("%s %s: message %q does not contain %q", c.method, c.path, msg, c.msgHas)
	}
	for k := range e {
		if k != "code" && k != "message" && k != "line" {
			t.Errorf("%s %s: unexpected error member %q in %s", c.method, c.path, k, a.raw)
		}
	}
	line, has := e["line"].(float64)
	switch {
	case c.line == 0 && has:
		t.Errorf("%s %s: error line %v, want none", c.method, c.path, line)
	case c.line < 0 && (!has || line < 1):
		t.Errorf("%s %s: error line %v (present %v), want a line >= 1", c.method, c.path, e["line"], has)
	case c.line > 0 && (!has || int(line) != c.line):
		t.Errorf("%s %s: error line %v, want %d", c.method, c.path, e["line"], c.line)
	}
}

// apiCheckSpec checks a against the operation c.method c.route of doc.
func apiCheckSpec(t *testing.T, doc *openapi3.T, c apiCase, a apiAnswer) {
	t.Helper()
	item := doc.Paths.Find(c.route)
	if item == nil {
		t.Errorf("openapi.yaml has no path %s", c.route)
		return
	}
	op := item.GetOperation(c.method)
	if op == nil {
		t.Errorf("openapi.yaml has no operation %s %s", c.method, c.route)
		return
	}
	rr := op.Responses.Status(a.status)
	if rr == nil || rr.Value == nil {
		t.Errorf("%s %s: status %d (code %q) is not documented in openapi.yaml for %s %s",
			c.method, c.path, a.status, c.code, c.method, c.route)
		return
	}
	if c.code != "" && (rr.Value.Description == nil || !strings.Contains(*rr.Value.Description, c.code)) {
		desc := ""
		if rr.Value.Description != nil {
			desc = *rr.Value.Description
		}
		t.Errorf("%s %s: openapi.yaml's %d answer of %s %s does not name code %q (description %q)",
			c.method, c.path, a.status, c.method, c.route, c.code, desc)
	}
	mtype := rr.Value.Content.Get("application/json")
	if mtype == nil || mtype.Schema == nil || mtype.Schema.Value == nil {
		t.Errorf("%s %s: openapi.yaml's %d answer has no application/json schema", c.method, c.path, a.status)
		return
	}
	var v any
	if err := json.Unmarshal(a.raw, &v); err != nil {
		t.Fatal(err)
	}
	if err := mtype.Schema.Value.VisitJSON(v, openapi3.MultiErrors(), openapi3.VisitAsResponse(),
		openapi3.EnableFormatValidation()); err != nil {
		t.Errorf("%s %s: the %d answer does not match openapi.yaml's schema: %v\nbody: %s",
			c.method, c.path, a.status, err, apiClip(a.raw))
	}
}

// apiRunningJob makes a running job that nothing will ever count: created,
// split and started with one shard of one line, with no list object and no
// queue message behind it.
func apiRunningJob(t *testing.T, p *local.Pipeline, id string) {
	t.Helper()
	ctx := context.Background()
	j := jobs.Job{ID: id, Source: "api", Key: pipeline.JobKeyPrefix + id + ".txt", Name: id + ".txt",
		Expires: time.Now().Add(time.Hour)}
	if _, _, err := p.Deps.Jobs.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	if err := p.Deps.Jobs.SetSplit(ctx, id, 1, 0, 1, []jobs.DomainCount{{Domain: "a.invalid", URLs: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Deps.Jobs.Start(ctx, id, []int{1}); err != nil {
		t.Fatal(err)
	}
}

// apiWaitState polls GET /jobs/{id} until the job's state is one of want
// (or final), failing the test after limit. Polling is unavoidable: the
// job advances in other goroutines (webhook, poller).
func apiWaitState(t *testing.T, api, id string, limit time.Duration, want ...string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last apiAnswer
	for {
		last = apiDo(t, api, apiCase{method: http.MethodGet, path: "/jobs/" + id})
		if last.status == http.StatusOK {
			st, _ := last.body["state"].(string)
			for _, w := range want {
				if st == w {
					return last.body
				}
			}
			if jobs.State(st).Final() {
				t.Fatalf("job %s reached %s, want one of %q: %s", id, st, want, last.raw)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not in %q after %v: %d %s", id, want, limit, last.status, apiClip(last.raw))
		}
		<-tick.C
	}
}

// TestAPIErrors table-drives requests against a local pipeline's API and
// checks every answer against infra/openapi.yaml.
func TestAPIErrors(t *testing.T) {
	doc := apiSpec(t)
	p := apiStart(t, "")
	const unknown = "j-0000000000000000"
	big := bytes.Repeat([]byte("http://a.invalid/\n"), 6<<20/18+1) // just over 6 MB
	cases := []apiCase{
		{name: "empty body", method: "POST", path: "/jobs", route: "/jobs", ctype: "text/plain",
			status: 400, code: pipeline.CodeEmptyBody},
		{name: "whitespace body", method: "POST", path: "/jobs", route: "/jobs", ctype: "text/plain",
			body: []byte(" \n\t\r\n  \n"), status: 400, code: pipeline.CodeEmptyBody},
		{name: "missing content type", method: "POST", path: "/jobs", route: "/jobs",
			body: []byte("http://a.invalid/\n"), status: 415, code: pipeline.CodeMediaType},
		{name: "image content type", method: "POST", path: "/jobs", route: "/jobs", ctype: "image/png",
			body: []byte("http://a.invalid/\n"), status: 415, code: pipeline.CodeMediaType},
		{name: "html content type", method: "POST", path: "/jobs", route: "/jobs", ctype: "text/html; charset=utf-8",
			body: []byte("http://a.invalid/\n"), status: 415, code: pipeline.CodeMediaType},
		{name: "malformed content type", method: "POST", path: "/jobs", route: "/jobs", ctype: "text/plain; charset",
			body: []byte("http://a.invalid/\n"), status: 415, code: pipeline.CodeMediaType},
		{name: "6 MB body", method: "POST", path: "/jobs", route: "/jobs", ctype: "text/plain", body: big,
			status: 413, code: pipeline.CodeTooLarge, msgHas: "POST /uploads"},
		{name: "NUL bytes", method: "POST", path: "/jobs", route: "/jobs", ctype: "text/plain",
			body: []byte("http://a.invalid/\x00\nhttp://b.invalid/\n"), status: 400, code: pipeline.CodeBinaryBody},
		{name: "invalid UTF-8", method: "POST", path: "/jobs", route: "/jobs", ctype: "text/plain; charset=utf-8",
			body: []byte("http://a.invalid/\xff\xfe\n"), status: 400, code: pipeline.CodeBinaryBody},
		{name: "malformed JSON", method: "POST", path: "/jobs", route: "/jobs", ctype: "application/json",
			body: []byte("[\n\"http://a.invalid/\",\n\"http://b.invalid/\" \"x\"\n]\n"), status: 400,
			code: pipeline.CodeInvalidJSON, line: 3},
		{name: "truncated JSON", method: "POST", path: "/jobs", route: "/jobs", ctype: "application/json",
			body: []byte("[\n\"http://a.invalid/\",\n{\"url\": "), status: 400, code: pipeline.CodeInvalidJSON, line: -1},
		{name: "JSON not a list", method: "POST", path: "/jobs", route: "/jobs", ctype: "application/json",
			body: []byte(`"http://a.invalid/"`), status: 400, code: pipeline.CodeInvalidJSON},
		{name: "no valid URL", method: "POST", path: "/jobs", route: "/jobs", ctype: "text/plain",
			body: []byte("# a comment\nnot a url\nftp://a.invalid/x\n"), status: 400, code: pipeline.CodeNoValidURLs,
			line: 2, msgHas: "line 2"},
		{name: "no valid URL in JSON", method: "POST", path: "/jobs", route: "/jobs", ctype: "application/json",
			body: []byte("[\n  \"mailto:x@a.invalid\",\n  42\n]"), status: 400, code: pipeline.CodeNoValidURLs, line: 2},
		{name: "accepted with rejects", method: "POST", path: "/jobs", route: "/jobs", ctype: "text/plain",
			body: []byte("http://a.invalid/\nnot a url\n"), status: 202},
		// The documented JobRequest form of application/json
		// (components.schemas.JobRequest, the operation's example).
		{name: "JSON JobRequest object", method: "POST", path: "/jobs", route: "/jobs", ctype: "application/json",
			body: []byte(`{"urls": ["http://a.invalid/", "http://b.invalid/"], "name": "nightly"}`), status: 202},

		{name: "get unknown job", method: "GET", path: "/jobs/" + unknown, route: "/jobs/{id}",
			status: 404, code: pipeline.CodeJobNotFound},
		{name: "results of unknown job", method: "GET", path: "/jobs/" + unknown + "/results", route: "/jobs/{id}/results",
			status: 404, code: pipeline.CodeJobNotFound},
		{name: "delete unknown job", method: "DELETE", path: "/jobs/" + unknown, route: "/jobs/{id}",
			status: 404, code: pipeline.CodeJobNotFound},
		{name: "get malformed id", method: "GET", path: "/jobs/NOT_AN_ID", route: "/jobs/{id}",
			status: 400, code: pipeline.CodeInvalidJobID},
		{name: "get short id", method: "GET", path: "/jobs/j-1", route: "/jobs/{id}",
			status: 400, code: pipeline.CodeInvalidJobID},
		{name: "get escaped id", method: "GET", path: "/jobs/j-0000%200000", route: "/jobs/{id}",
			status: 400, code: pipeline.CodeInvalidJobID},
		{name: "get 65-char id", method: "GET", path: "/jobs/" + strings.Repeat("a", 65), route: "/jobs/{id}",
			status: 400, code: pipeline.CodeInvalidJobID},
		{name: "results of malformed id", method: "GET", path: "/jobs/-leading-dash/results", route: "/jobs/{id}/results",
			status: 400, code: pipeline.CodeInvalidJobID},
		{name: "delete malformed id", method: "DELETE", path: "/jobs/Upper-Case", route: "/jobs/{id}",
			status: 400, code: pipeline.CodeInvalidJobID},

		{name: "upload bad JSON", method: "POST", path: "/uploads", route: "/uploads", ctype: "application/json",
			body: []byte(`{"name":`), status: 400, code: pipeline.CodeInvalidJSON},
		{name: "upload bad content type", method: "POST", path: "/uploads", route: "/uploads", ctype: "application/json",
			body: []byte(`{"name":"x.png","content_type":"image/png"}`), status: 415, code: pipeline.CodeMediaType},

		{name: "unknown path", method: "GET", path: "/nope", status: 404},
		{name: "unrouted method", method: "PUT", path: "/jobs", ctype: "text/plain", body: []byte("http://a.invalid/"), status: 404},
		{name: "list jobs", method: "GET", path: "/jobs", status: 404},
		{name: "too deep", method: "GET", path: "/jobs/" + unknown + "/results/x", status: 404},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := apiCheck(t, doc, p.APIURL, c)
			if c.status == 202 && a.status == 202 {
				id, _ := a.body["job_id"].(string)
				if !pipeline.ValidJobID(id) {
					t.Errorf("job_id %q is not a valid job ID", id)
				}
			}
		})
	}

	t.Run("running job", func(t *testing.T) {
		id := "j-apitestrunning" + fmt.Sprint(time.Now().UnixNano()%1e6)
		apiRunningJob(t, p, id)
		apiCheck(t, doc, p.APIURL, apiCase{method: "GET", path: "/jobs/" + id, route: "/jobs/{id}", status: 200})
		apiCheck(t, doc, p.APIURL, apiCase{method: "GET", path: "/jobs/" + id + "/results", route: "/jobs/{id}/results",
			status: 409, code: pipeline.CodeJobNotDone, msgHas: "running"})
		for i := range 2 { // cancelling twice answers 202 both times
			a := apiCheck(t, doc, p.APIURL, apiCase{method: "DELETE", path: "/jobs/" + id, route: "/jobs/{id}", status: 202})
			if a.body["state"] != "cancelled" || a.body["job_id"] != id {
				t.Errorf("DELETE #%d: body %s, want job %s cancelled", i+1, a.raw, id)
			}
		}
		a := apiCheck(t, doc, p.APIURL, apiCase{method: "GET", path: "/jobs/" + id, route: "/jobs/{id}", status: 200})
		if a.body["state"] != "cancelled" || a.body["finished"] == nil {
			t.Errorf("GET after DELETE: state %v finished %v, want cancelled with a finish time", a.body["state"], a.body["finished"])
		}
		apiCheck(t, doc, p.APIURL, apiCase{method: "GET", path: "/jobs/" + id + "/results", route: "/jobs/{id}/results",
			status: 409, code: pipeline.CodeJobNotDone, msgHas: "cancelled"})
	})

	t.Run("splitting job", func(t *testing.T) {
		// A job as POST /jobs leaves it before ingest has split the list.
		id := "j-apitestsplitting" + fmt.Sprint(time.Now().UnixNano()%1e6)
		if _, _, err := p.Deps.Jobs.Create(context.Background(), jobs.Job{ID: id, Source: "api",
			Key: pipeline.JobKeyPrefix + id + ".txt", Expires: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		apiCheck(t, doc, p.APIURL, apiCase{method: "GET", path: "/jobs/" + id, route: "/jobs/{id}", status: 200})
		apiCheck(t, doc, p.APIURL, apiCase{method: "GET", path: "/jobs/" + id + "/results", route: "/jobs/{id}/results",
			status: 409, code: pipeline.CodeJobNotDone, msgHas: "splitting"})
		apiCheck(t, doc, p.APIURL, apiCase{method: "DELETE", path: "/jobs/" + id, route: "/jobs/{id}", status: 202})
	})

	t.Run("drop folder job", func(t *testing.T) {
		id, err := p.Drop(context.Background(), fmt.Sprintf("api-test/%d.txt", time.Now().UnixNano()),
			[]byte("http://a.invalid/\n"))
		if err != nil {
			t.Fatal(err)
		}
		apiWaitState(t, p.APIURL, id, 90*time.Second, "done")
		apiCheck(t, doc, p.APIURL, apiCase{method: "GET", path: "/jobs/" + id, route: "/jobs/{id}", status: 200})
	})

	t.Run("upload", func(t *testing.T) {
		a := apiCheck(t, doc, p.APIURL, apiCase{method: "POST", path: "/uploads", route: "/uploads", ctype: "application/json",
			body: []byte(`{"name":"list.txt","content_type":"text/plain"}`), status: 201})
		id, _ := a.body["job_id"].(string)
		u, _ := a.body["upload_url"].(string)
		hdrs, _ := a.body["headers"].(map[string]any)
		ctype, _ := hdrs["Content-Type"].(string)
		if !pipeline.ValidJobID(id) || !strings.HasPrefix(u, p.S3Endpoint+"/") || ctype != "text/plain" || a.body["method"] != "PUT" {
			t.Fatalf("POST /uploads: %s; want a job ID, a PUT URL on %s and Content-Type text/plain", a.raw, p.S3Endpoint)
		}
		// The job does not exist before the upload.
		apiCheck(t, doc, p.APIURL, apiCase{method: "GET", path: "/jobs/" + id, route: "/jobs/{id}", status: 404,
			code: pipeline.CodeJobNotFound})
		list := "http://a.invalid/\nhttp://b.invalid/x\nnot a url\n"
		req, err := http.NewRequest(http.MethodPut, u, strings.NewReader(list))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ctype)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("PUT upload_url: %s: %s", resp.Status, b)
		}
		st := apiWaitState(t, p.APIURL, id, 90*time.Second, "done")
		if st["total"] != float64(3) || st["rejected"] != float64(1) {
			t.Errorf("job %s: total %v rejected %v, want 3 and 1: %v", id, st["total"], st["rejected"], st)
		}
		apiCheck(t, doc, p.APIURL, apiCase{method: "GET", path: "/jobs/" + id, route: "/jobs/{id}", status: 200})
		r := apiCheck(t, doc, p.APIURL, apiCase{method: "GET", path: "/jobs/" + id + "/results", route: "/jobs/{id}/results", status: 200})
		files, _ := r.body["files"].(map[string]any)
		for name, fu := range files {
			if s, _ := fu.(string); !strings.HasPrefix(s, p.S3Endpoint+"/") {
				t.Errorf("results file %s: URL %v not on %s", name, fu, p.S3Endpoint)
			}
		}
		apiCheck(t, doc, p.APIURL, apiCase{method: "DELETE", path: "/jobs/" + id, route: "/jobs/{id}", status: 409,
			code: pipeline.CodeJobFinished})
	})
}

// TestAPIKey checks the x-api-key mode: a missing key is 401, a wrong one
// 403, the right one passes to the route.
func TestAPIKey(t *testing.T) {
	doc := apiSpec(t)
	const key = "api-test-key-0123456789"
	p := apiStart(t, key)
	const unknown = "j-0000000000000000"
	list := []byte("http://a.invalid/\n")
	cases := []apiCase{
		{name: "get missing key", method: "GET", path: "/jobs/" + unknown, route: "/jobs/{id}",
			status: 401, code: pipeline.CodeMissingAPIKey},
		{name: "get empty key", method: "GET", path: "/jobs/" + unknown, route: "/jobs/{id}",
			header: map[string]string{"X-Api-Key": ""}, status: 401, code: pipeline.CodeMissingAPIKey},
		{name: "get wrong key", method: "GET", path: "/jobs/" + unknown, route: "/jobs/{id}",
			header: map[string]string{"X-Api-Key": key + "x"}, status: 403, code: pipeline.CodeInvalidAPIKey},
		{name: "get right key", method: "GET", path: "/jobs/" + unknown, route: "/jobs/{id}",
			header: map[string]string{"X-Api-Key": key}, status: 404, code: pipeline.CodeJobNotFound},
		{name: "post missing key", method: "POST", path: "/jobs", route: "/jobs", ctype: "text/plain", body: list,
			status: 401, code: pipeline.CodeMissingAPIKey},
		{name: "post wrong key", method: "POST", path: "/jobs", route: "/jobs", ctype: "text/plain", body: list,
			header: map[string]string{"x-api-key": strings.ToUpper(key)}, status: 403, code: pipeline.CodeInvalidAPIKey},
		{name: "post right key", method: "POST", path: "/jobs", route: "/jobs", ctype: "text/plain", body: list,
			header: map[string]string{"x-api-key": key}, status: 202},
		{name: "key checked before the body", method: "POST", path: "/jobs", route: "/jobs", ctype: "image/png",
			body: list, status: 401, code: pipeline.CodeMissingAPIKey},
		{name: "upload missing key", method: "POST", path: "/uploads", route: "/uploads",
			status: 401, code: pipeline.CodeMissingAPIKey},
		{name: "upload right key", method: "POST", path: "/uploads", route: "/uploads",
			header: map[string]string{"x-api-key": key}, status: 201},
		{name: "results wrong key", method: "GET", path: "/jobs/" + unknown + "/results", route: "/jobs/{id}/results",
			header: map[string]string{"x-api-key": "nope"}, status: 403, code: pipeline.CodeInvalidAPIKey},
		{name: "delete missing key", method: "DELETE", path: "/jobs/" + unknown, route: "/jobs/{id}",
			status: 401, code: pipeline.CodeMissingAPIKey},
		{name: "delete right key", method: "DELETE", path: "/jobs/" + unknown, route: "/jobs/{id}",
			header: map[string]string{"x-api-key": key}, status: 404, code: pipeline.CodeJobNotFound},
		{name: "unknown path without key", method: "GET", path: "/nope", status: 404},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { apiCheck(t, doc, p.APIURL, c) })
	}
}
