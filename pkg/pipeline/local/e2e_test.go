package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/urlcheck/urlcheck/pkg/check"
	"github.com/urlcheck/urlcheck/pkg/clock"
	"github.com/urlcheck/urlcheck/pkg/pipeline"
	"github.com/urlcheck/urlcheck/pkg/pipeline/local"
	"github.com/urlcheck/urlcheck/pkg/results"
	"github.com/urlcheck/urlcheck/pkg/simrun"
	"github.com/urlcheck/urlcheck/pkg/simweb"
)

// servers returns the local servers' endpoints, skipping the test when the
// README test command has not started them.
func servers(t *testing.T) local.Options {
	t.Helper()
	o := local.Options{DDBEndpoint: os.Getenv(pipeline.EnvDDBEndpoint), SQSEndpoint: os.Getenv(pipeline.EnvSQSEndpoint),
		VersityGW: os.Getenv("URLCHECK_VERSITYGW_BIN")}
	if o.DDBEndpoint == "" || o.SQSEndpoint == "" || o.VersityGW == "" {
		t.Skip("local AWS servers not running (make test starts them)")
	}
	o.Suffix = fmt.Sprintf("-%s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), time.Now().UnixNano()%1e6)
	if testing.Verbose() {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return o
}

// web starts a simulated web for sc on the wall clock and returns a
// Configure that points the checker at it.
func web(t *testing.T, sc simweb.Scenario) (*simweb.Web, []string, func(*pipeline.Deps)) {
	t.Helper()
	w, urls, _, err := simrun.Start(sc, clock.Real{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w, urls, func(d *pipeline.Deps) {
		d.Check = check.Config{AllowPrivate: true, Resolver: w.Resolver, Dial: w.Dial, RootCAs: w.CertPool(),
			ConnectTimeout: 5 * time.Second, TLSTimeout: 5 * time.Second, HeaderTimeout: 5 * time.Second, TotalTimeout: 10 * time.Second}
	}
}

func postJSON(t *testing.T, method, url, ctype string, body []byte) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: %d %q: %v", method, url, resp.StatusCode, b, err)
	}
	return resp.StatusCode, out
}

// waitDone polls GET /jobs/{id} until the job is final.
func waitDone(t *testing.T, api, id string, limit time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(limit)
	var st map[string]any
	for time.Now().Before(deadline) {
		code, out := postJSON(t, "GET", api+"/jobs/"+id, "", nil)
		if code == 200 {
			st = out
			switch out["state"] {
			case "done", "failed", "cancelled":
				return out
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("job %s not done after %v: %v", id, limit, st)
	return nil
}

func TestSmoke(t *testing.T) {
	o := servers(t)
	w, urls, conf := web(t, simweb.Scenario{Seed: 1, Domains: 20, URLs: 300, RateMin: 5, RateMax: 20})
	_ = w
	o.Configure = conf
	p, err := local.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	list := strings.Join(urls, "\n") + "\nnot a url\n"
	code, out := postJSON(t, "POST", p.APIURL+"/jobs", "text/plain", []byte(list))
	if code != 202 {
		t.Fatalf("POST /jobs: %d %v", code, out)
	}
	id := out["job_id"].(string)
	st := waitDone(t, p.APIURL, id, 2*time.Minute)
	t.Logf("status: %v", st)
	if st["state"] != "done" {
		t.Fatalf("state %v", st["state"])
	}
	rc, err := p.Deps.Objects.Get(context.Background(), "results/"+id+"/summary.json")
	if err != nil {
		t.Fatal(err)
	}
	var sum results.Summary
	if err := json.NewDecoder(rc).Decode(&sum); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if sum.Total != len(urls)+1 {
		t.Errorf("summary total %d, want %d", sum.Total, len(urls)+1)
	}
	t.Logf("poller %+v", p.Poller.Stats())
}

// verify checks a done job: one result per input line, classes as the
// simulated web intends, the summary's counts equal to the list.
func verify(t *testing.T, p *local.Pipeline, id string, lines []string, truth map[string]string) results.Summary {
	t.Helper()
	rs, sum, err := p.Results(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	byLine := map[int]results.Result{}
	for _, r := range rs {
		if _, dup := byLine[r.Line]; dup {
			t.Fatalf("job %s: line %d has two results", id, r.Line)
		}
		byLine[r.Line] = r
	}
	page, err := p.Deps.Objects.Get(context.Background(), pipeline.ResultsPrefix+id+"/report.html")
	if err != nil {
		t.Fatalf("job %s: no report.html next to summary.json: %v", id, err)
	}
	html, _ := io.ReadAll(page)
	page.Close()
	if !bytes.Contains(html, []byte("<svg")) || !bytes.Contains(html, []byte(id)) {
		t.Errorf("job %s: report.html lacks its chart or job id (%d bytes)", id, len(html))
	}
	if len(byLine) != len(lines) || sum.Total != len(lines) {
		t.Fatalf("job %s: %d results, summary total %d; want %d (one per line)", id, len(byLine), sum.Total, len(lines))
	}
	n := 0
	for c, k := range sum.ByClass {
		n += k
		_ = c
	}
	if n != len(lines) {
		t.Errorf("job %s: summary counts by class sum to %d, want %d", id, n, len(lines))
	}
	mismatches := 0
	for i, u := range lines {
		r, ok := byLine[i+1]
		if !ok {
			t.Fatalf("job %s: line %d has no result", id, i+1)
		}
		want, known := truth[u]
		if !known {
			want = "invalid"
		}
		if r.Class != want {
			mismatches++
			if mismatches <= 5 {
				t.Errorf("job %s line %d %s: class %s (status %d, %q, %d attempts), want %s", id, i+1, u, r.Class, r.Status, r.Error, r.Attempts, want)
			}
		}
	}
	if mismatches > 0 {
		t.Errorf("job %s: %d of %d lines classified differently from the simulated truth", id, mismatches, len(lines))
	}
	return sum
}

// TestTwoJobs submits one list through POST /jobs and another through the
// drop folder, at the same time, over the same domains with hidden limits.
func TestTwoJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run of about a minute")
	}
	o := servers(t)
	size := 5000
	sc := simweb.Scenario{Seed: 7, Domains: 120, Big: []int{900}, URLs: size, RateMin: 5, RateMax: 25, BigRate: 40,
		Faults: simweb.MixedFaults(), HTTPS: 0.3, Modes: simweb.AllModes()}
	w, urls, conf := web(t, sc)
	_, _, truth, _ := simrun.Start(sc, clock.Real{}) // the same scenario's truth
	o.Configure = conf
	ctx := context.Background()
	p, err := local.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	half := size / 2
	listA := append(append([]string{}, urls...), "ftp://example.com/x")
	listB := append(append([]string{}, urls[half:]...), urls[:half]...)
	start := time.Now()
	idA, err := p.Submit(ctx, []byte(strings.Join(listA, "\n")), "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	idB, err := p.Drop(ctx, "lists/b.txt", []byte(strings.Join(listB, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	defer cancel()
	go logProgress(wctx, t, p, idA)
	for _, id := range []string{idA, idB} {
		st, err := p.Wait(wctx, id, time.Second)
		if err != nil || st.State != "done" {
			t.Fatalf("job %s: %v %+v", id, err, st)
		}
	}
	wall := time.Since(start)
	sumA := verify(t, p, idA, listA, truth)
	sumB := verify(t, p, idB, listB, truth)
	var req, thr, viol int
	for d, st := range w.Stats() {
		req += st.Requests
		thr += st.Throttled
		viol += st.Violations
		if st.Violations > 0 {
			t.Errorf("%s: %d requests over its concurrency cap (peak %d, cap %d)", d, st.Violations, st.PeakInFlight, st.Limit.MaxConcurrent)
		}
	}
	share := float64(thr) / float64(max(req, 1))
	lb, lbDomain := simrun.LowerBound(append(append([]string{}, urls...), urls...), w.Stats())
	t.Logf("two jobs of %d URLs: wall %.1fs, lower bound %.1fs (%s), ratio %.2f; %d requests, %d throttled (%.2f%%); summaries %d+%d lines; poller %+v",
		size, wall.Seconds(), lb, lbDomain, wall.Seconds()/lb, req, thr, 100*share, sumA.Total, sumB.Total, p.Poller.Stats())
	if share > 0.02 {
		t.Errorf("%.2f%% of requests throttled (429/503), want <= 2%%", 100*share)
	}
}

// logProgress logs a job's progress every 10 s (go test -v shows it).
func logProgress(ctx context.Context, t *testing.T, p *local.Pipeline, id string) {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		st, err := p.Deps.Status(ctx, id)
		if err != nil || st.State.Final() {
			return
		}
		var busy []string
		for _, b := range st.Busiest {
			busy = append(busy, fmt.Sprintf("%s:%d@%.1f/s", b.Domain, b.URLs, b.LearnedRate))
		}
		t.Logf("job %s: %s %d/%d; busiest %s", id, st.State, st.Done, st.Total, strings.Join(busy, " "))
	}
}
