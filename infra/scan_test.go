package infra

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/urlcheck/urlcheck/pkg/check"
	"github.com/urlcheck/urlcheck/pkg/clock"
	"github.com/urlcheck/urlcheck/pkg/diff"
	"github.com/urlcheck/urlcheck/pkg/pipeline"
	"github.com/urlcheck/urlcheck/pkg/pipeline/local"
	"github.com/urlcheck/urlcheck/pkg/scan"
	"github.com/urlcheck/urlcheck/pkg/simweb"
)

// sfnDir is the Node harness (package.json, run.mjs); its node_modules
// comes from
// npm install --prefix infra/local/sfn --no-audit --no-fund --no-package-lock --before=2026-11-23T00:00:00Z
var sfnDir = filepath.Join("local", "sfn")

// needNode skips the test unless node and the harness's packages are
// installed.
func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	for _, p := range []string{"aws-local-stepfunctions", "asl-validator"} {
		if _, err := os.Stat(filepath.Join(sfnDir, "node_modules", p, "package.json")); err != nil {
			t.Skipf("%s not installed under %s (npm install --prefix infra/local/sfn ...)", p, sfnDir)
		}
	}
}

// node runs run.mjs with args and decodes its JSON answer into out.
func node(t *testing.T, ctx context.Context, out any, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(sfnDir, "run.mjs")}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node run.mjs %s: %v\nstderr: %s", args[0], err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("node run.mjs %s: decoding %q: %v\nstderr: %s", args[0], stdout.String(), err, stderr.String())
	}
}

func TestScanASLValid(t *testing.T) {
	needNode(t)
	broken, err := os.ReadFile(aslPath)
	if err != nil {
		t.Fatal(err)
	}
	badPath := filepath.Join(t.TempDir(), "bad.asl.json")
	// A transition to a state that does not exist must be rejected, or the
	// validator checks nothing.
	bad := bytes.Replace(broken, []byte(`"Next": "InitWait"`), []byte(`"Next": "NoSuchState"`), 1)
	if bytes.Equal(bad, broken) {
		t.Fatal("the definition has no transition to InitWait to break")
	}
	if err := os.WriteFile(badPath, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		valid      bool
	}{
		{"scan.asl.json", aslPath, true},
		{"broken transition", badPath, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var res struct {
				Valid  bool              `json:"valid"`
				Errors []json.RawMessage `json:"errors"`
			}
			node(t, context.Background(), &res, "validate", tc.path)
			if res.Valid != tc.valid {
				t.Errorf("valid = %v, want %v; errors: %s", res.Valid, tc.valid, res.Errors)
			}
		})
	}
	// Top-level settings the issue asks for.
	var def struct {
		TimeoutSeconds int
		States         map[string]map[string]any
	}
	if err := json.Unmarshal(broken, &def); err != nil {
		t.Fatal(err)
	}
	if def.TimeoutSeconds <= 0 {
		t.Errorf("no top-level TimeoutSeconds")
	}
	for name, st := range def.States {
		if st["Type"] != "Task" {
			continue
		}
		if st["Retry"] == nil {
			t.Errorf("task %s has no Retry", name)
		}
		if st["Catch"] == nil {
			t.Errorf("task %s has no Catch", name)
		}
	}
}

// flipWeb is a simulated web of 30 unlimited hosts (u00.example ..
// u29.example, one page each) whose pages the test breaks and fixes
// between scans with simweb.Web.SetStatus.
type flipWeb struct {
	web  *simweb.Web
	list []string
}

func newFlipWeb(t *testing.T) *flipWeb {
	t.Helper()
	w := simweb.New(clock.Real{})
	f := &flipWeb{web: w}
	for i := range 30 {
		host := fmt.Sprintf("u%02d.example", i)
		w.AddHost(simweb.Host{Name: host})
		f.list = append(f.list, fmt.Sprintf("http://%s/ok/p/%d", host, i))
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return f
}

// set makes exactly the pages of broken answer 404.
func (f *flipWeb) set(broken []string) {
	bad := map[string]bool{}
	for _, u := range broken {
		bad[u] = true
	}
	for _, raw := range f.list {
		u, err := url.Parse(raw)
		if err != nil {
			panic(err)
		}
		status := 0
		if bad[raw] {
			status = http.StatusNotFound
		}
		f.web.SetStatus(u.Host, u.Path, status)
	}
}

// fakeSNS records what is published.
type fakeSNS struct {
	mu   sync.Mutex
	msgs []*sns.PublishInput
}

func (f *fakeSNS) Publish(_ context.Context, in *sns.PublishInput, _ ...func(*sns.Options)) (*sns.PublishOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, in)
	return &sns.PublishOutput{MessageId: aws.String(fmt.Sprintf("m-%d", len(f.msgs)))}, nil
}

func (f *fakeSNS) sent() []*sns.PublishInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.msgs)
}

// taskServer stands in for Lambda: run.mjs POSTs each task's input to it
// and it calls the scan handler. fault, when set, may answer instead
// (handled true) with a result or a Lambda error type.
type taskServer struct {
	h     *scan.Handler
	mu    sync.Mutex
	fault func(state string, req scan.Request) (result any, errType string, handled bool)
	calls map[string]int
}

func (s *taskServer) setFault(f func(string, scan.Request) (any, string, bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
	s.calls = map[string]int{}
}

func (s *taskServer) count(state string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[state]
}

func (s *taskServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	var req scan.Request
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	fail := func(typ string, err error) {
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(map[string]string{"errorType": typ, "errorMessage": err.Error()})
	}
	if err := json.Unmarshal(body, &req); err != nil {
		fail("Runtime.UnmarshalError", err)
		return
	}
	s.mu.Lock()
	s.calls[state]++
	fault := s.fault
	s.mu.Unlock()
	if fault != nil {
		if res, typ, ok := fault(state, req); ok {
			if typ != "" {
				fail(typ, fmt.Errorf("injected %s in %s", typ, state))
				return
			}
			_ = json.NewEncoder(w).Encode(res)
			return
		}
	}
	res, err := s.h.Handle(r.Context(), req)
	if err != nil {
		fail(scan.ErrorType(err), err)
		return
	}
	_ = json.NewEncoder(w).Encode(res)
}

// execution is run.mjs's answer to "run".
type execution struct {
	Status  string          `json:"status"`
	Output  json.RawMessage `json:"output"`
	Error   string          `json:"error"`
	Cause   string          `json:"cause"`
	States  []string        `json:"states"`
	Retried []string        `json:"retried"`
}

// runScan executes the state machine for input against the task server.
func runScan(t *testing.T, endpoint string, input map[string]string, opts map[string]any) execution {
	t.Helper()
	in, _ := json.Marshal(input)
	o, _ := json.Marshal(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var ex execution
	node(t, ctx, &ex, "run", aslPath, string(in), endpoint, string(o))
	states := fmt.Sprint(ex.States)
	if len(states) > 300 {
		states = states[:150] + " ... " + states[len(states)-150:]
	}
	t.Logf("execution %s: %s %s %s; %d states %s; retried %v", input["name"], ex.Status, ex.Error, ex.Cause,
		len(ex.States), states, ex.Retried)
	return ex
}

// getJSON decodes the object under key.
func getJSON(t *testing.T, d *pipeline.Deps, key string, v any) {
	t.Helper()
	rc, err := d.Objects.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if err := json.NewDecoder(rc).Decode(v); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
}

func urlsOf(cs []diff.Change) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.URL)
	}
	sort.Strings(out)
	return out
}

// TestScanLocal runs the state machine with aws-local-stepfunctions, its
// tasks calling pkg/scan against the local pipeline (DynamoDB Local,
// fauxqs, versitygw): two scans of one list where a known set of URLs
// breaks and another gets fixed in between, a transient start failure
// (retried), a missing list (recorded failure) and a job that never
// finishes (execution timeout).
func TestScanLocal(t *testing.T) {
	needNode(t)
	o := local.Options{DDBEndpoint: os.Getenv(pipeline.EnvDDBEndpoint), SQSEndpoint: os.Getenv(pipeline.EnvSQSEndpoint),
		VersityGW: os.Getenv("URLCHECK_VERSITYGW_BIN")}
	if o.DDBEndpoint == "" || o.SQSEndpoint == "" || o.VersityGW == "" {
		t.Skip("local AWS servers not running (make test starts them)")
	}
	o.Suffix = fmt.Sprintf("-scan-%d", time.Now().UnixNano()%1e9)
	o.BatchWindow = -1
	o.BatchSize = 10
	chk := newFlipWeb(t)
	o.Configure = func(d *pipeline.Deps) {
		d.Check = check.Config{AllowPrivate: true, Resolver: chk.web.Resolver, Dial: chk.web.Dial,
			TotalTimeout: 10 * time.Second}
	}
	ctx := context.Background()
	p, err := local.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	pub := &fakeSNS{}
	ts := &taskServer{h: &scan.Handler{Deps: p.Deps, Notifier: pub, TopicARN: "arn:aws:sns:us-east-1:123456789012:scan-test"}}
	ts.setFault(nil)
	srv := httptest.NewServer(ts)
	defer srv.Close()

	// 30 URLs on 30 domains: u00..u09 broken in scan 1 only (fixed),
	// u10..u19 broken in scan 2 only (newly broken), u20..u24 broken in
	// both, u25..u29 fine in both.
	list := chk.list
	fixed, newly, still := list[0:10], list[10:20], list[20:25]
	listKey := scan.ListsPrefix + "site.txt"
	if err := p.Deps.Objects.Put(ctx, listKey, strings.NewReader(strings.Join(list, "\n")+"\n"), "text/plain"); err != nil {
		t.Fatal(err)
	}
	const name = "site"
	fast := map[string]any{"waitMs": 200, "retryMs": 50}
	in := map[string]string{"name": name, "list_key": listKey}

	// Scan 1, whose first start fails with a transient Lambda error.
	chk.set(append(slices.Clone(fixed), still...))
	ts.setFault(func(state string, _ scan.Request) (any, string, bool) {
		if state == "Start" && ts.count("Start") == 1 {
			return nil, "Lambda.ServiceException", true
		}
		return nil, "", false
	})
	ex := runScan(t, srv.URL, in, fast)
	if ex.Status != "SUCCEEDED" {
		t.Fatalf("scan 1: %s %s %s", ex.Status, ex.Error, ex.Cause)
	}
	if !slices.Equal(ex.Retried, []string{"Start"}) || ts.count("Start") != 2 {
		t.Errorf("scan 1: retried %v, Start called %d times; want one retry of Start", ex.Retried, ts.count("Start"))
	}
	if slices.Contains(ex.States, "Notify") {
		t.Errorf("scan 1 (nothing to compare with) notified")
	}
	var latest1 scan.Latest
	getJSON(t, p.Deps, scan.LatestKey(name), &latest1)
	var d1 diff.Diff
	getJSON(t, p.Deps, latest1.DiffKey, &d1)
	if len(d1.Added) != len(list) || len(d1.NewlyBroken) != 0 || d1.Old.JobID != "" {
		t.Errorf("scan 1 diff: %d added, %d newly broken, old job %q; want %d added against nothing",
			len(d1.Added), len(d1.NewlyBroken), d1.Old.JobID, len(list))
	}

	// Scan 2: fixed URLs work again, newly broken ones fail.
	chk.set(append(slices.Clone(newly), still...))
	ts.setFault(nil)
	ex = runScan(t, srv.URL, in, fast)
	if ex.Status != "SUCCEEDED" {
		t.Fatalf("scan 2: %s %s %s", ex.Status, ex.Error, ex.Cause)
	}
	var latest2 scan.Latest
	getJSON(t, p.Deps, scan.LatestKey(name), &latest2)
	if latest2.JobID == latest1.JobID || !strings.HasPrefix(latest2.DiffKey, scan.Prefix+name+"/") ||
		!strings.HasSuffix(latest2.DiffKey, "/"+diff.FileName) {
		t.Fatalf("latest after scan 2 = %+v (scan 1: %+v)", latest2, latest1)
	}
	var d2 diff.Diff
	getJSON(t, p.Deps, latest2.DiffKey, &d2)
	if got, want := urlsOf(d2.NewlyBroken), slices.Sorted(slices.Values(newly)); !slices.Equal(got, want) {
		t.Errorf("newly broken = %q, want %q", got, want)
	}
	if got, want := urlsOf(d2.Fixed), slices.Sorted(slices.Values(fixed)); !slices.Equal(got, want) {
		t.Errorf("fixed = %q, want %q", got, want)
	}
	if got, want := urlsOf(d2.StillBroken), slices.Sorted(slices.Values(still)); !slices.Equal(got, want) {
		t.Errorf("still broken = %q, want %q", got, want)
	}
	if len(d2.Added)+len(d2.Removed) != 0 || d2.Old.JobID != latest1.JobID || d2.New.JobID != latest2.JobID {
		t.Errorf("scan 2 diff: %d added, %d removed, old %q new %q", len(d2.Added), len(d2.Removed), d2.Old.JobID, d2.New.JobID)
	}
	msgs := pub.sent()
	if !slices.Contains(ex.States, "Notify") || len(msgs) != 1 {
		t.Fatalf("scan 2: states %v, %d messages; want one notification", ex.States, len(msgs))
	}
	body := aws.ToString(msgs[0].Message)
	t.Logf("notification %q:\n%s", aws.ToString(msgs[0].Subject), body)
	for _, u := range newly {
		if !strings.Contains(body, u) {
			t.Errorf("notification does not name %s:\n%s", u, body)
		}
	}
	if !strings.Contains(aws.ToString(msgs[0].Subject), "10 newly broken") || !strings.Contains(body, latest2.DiffKey) {
		t.Errorf("notification subject %q / body lacks the diff key:\n%s", aws.ToString(msgs[0].Subject), body)
	}

	t.Run("missing list is recorded, not retried", func(t *testing.T) {
		ts.setFault(nil)
		ex := runScan(t, srv.URL, map[string]string{"name": "gone", "list_key": scan.ListsPrefix + "missing.txt"}, fast)
		if ex.Status != "FAILED" || ex.Error != "ScanFailed" {
			t.Fatalf("status %s error %s, want FAILED ScanFailed", ex.Status, ex.Error)
		}
		if len(ex.Retried) != 0 || ts.count("Start") != 1 || !slices.Contains(ex.States, "RecordFailure") {
			t.Errorf("retried %v, Start called %d times, states %v; want no retry of an InputError, then RecordFailure",
				ex.Retried, ts.count("Start"), ex.States)
		}
		keys, err := p.Deps.Objects.List(ctx, scan.Prefix+"gone/failures/")
		if err != nil || len(keys) != 1 {
			t.Fatalf("failures: %v, %v", keys, err)
		}
		var f scan.Failure
		getJSON(t, p.Deps, keys[0], &f)
		if f.Name != "gone" || f.Error != "InputError" || !strings.Contains(f.Cause, "missing.txt") {
			t.Errorf("failure record %+v", f)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		// The job never finishes: every poll answers "running".
		ts.setFault(func(state string, req scan.Request) (any, string, bool) {
			if state == "Poll" {
				return scan.StatusResult{JobID: req.JobID, State: "running", Total: 30}, "", true
			}
			return nil, "", false
		})
		start := time.Now()
		ex := runScan(t, srv.URL, map[string]string{"name": "slow", "list_key": listKey},
			map[string]any{"waitMs": 100, "retryMs": 50, "timeoutSeconds": 3})
		if ex.Status != "TIMED_OUT" || ex.Error != "States.Timeout" {
			t.Fatalf("status %s error %s, want TIMED_OUT States.Timeout", ex.Status, ex.Error)
		}
		if n := ts.count("Poll"); n < 3 {
			t.Errorf("polled %d times before the timeout, want the loop to run", n)
		}
		if !slices.Contains(ex.States, "MaxWait") {
			t.Errorf("the wait never reached its cap (no MaxWait state): %v", ex.States)
		}
		if slices.Contains(ex.States, "Diff") || time.Since(start) > time.Minute {
			t.Errorf("states %v after %v", ex.States, time.Since(start))
		}
	})
}
