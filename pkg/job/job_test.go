package job_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/urlcheck/urlcheck/pkg/job"
	"github.com/urlcheck/urlcheck/pkg/results"
	"github.com/urlcheck/urlcheck/pkg/schedule"
	"github.com/urlcheck/urlcheck/pkg/simrun"
	"github.com/urlcheck/urlcheck/pkg/simweb"
	"github.com/urlcheck/urlcheck/pkg/urllist"
)

// TestJobAgainstSimulatedWeb is the end-to-end check of the local engine:
// 2,000 URLs over 120 simulated registrable domains (two with 400 URLs, then
// a long tail) with hidden limits between 1 and 20 r/s, every kind of fault,
// and all four throttle answers.
func TestJobAgainstSimulatedWeb(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	sc := simweb.Scenario{
		Seed: 7, Domains: 120, Big: []int{400, 400}, URLs: 2000,
		RateMin: 1, RateMax: 20, MaxConcurrent: 2, HTTPS: 0.3,
		Faults: simweb.MixedFaults(),
		Modes:  simweb.AllModes(),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := simrun.Execute(ctx, sc, simrun.Options{
		Scale: 10, Timeout: 10 * time.Second, Out: t.TempDir(), Repeat: 1,
		// Blank lines and a comment (skipped) and a bad line.
		Extra: []string{"", "# a comment", "", "ftp://not-http.example/file"},
		Job:   job.Options{List: urllist.Options{Format: urllist.FormatText}, Schedule: schedule.Config{Concurrency: 64}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := results.ReadJSONL(r.Report.Dir + "/results.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	byLine := map[int]results.Result{}
	for _, res := range rs {
		if _, dup := byLine[res.Line]; dup {
			t.Fatalf("line %d has two results", res.Line)
		}
		byLine[res.Line] = res
	}
	n := len(r.URLs)
	if len(byLine) != n+2 {
		t.Fatalf("%d results, want %d (one per URL line)", len(byLine), n+2)
	}
	if rep, first := byLine[n+1], byLine[1]; rep.URL != first.URL || rep.Class != first.Class || rep.Attempts != first.Attempts {
		t.Errorf("repeated URL on line %d: %+v, want the result of line 1 %+v", n+1, rep, first)
	}
	mismatches := 0
	for i, u := range r.URLs {
		res, ok := byLine[i+1]
		if !ok {
			t.Fatalf("line %d (%s) has no result", i+1, u)
		}
		if want := r.Truth[u]; res.Class != want {
			mismatches++
			if mismatches <= 10 {
				t.Errorf("line %d %s: class %s (status %d, %q, %d attempts), want %s", i+1, u, res.Class, res.Status, res.Error, res.Attempts, want)
			}
		}
	}
	if mismatches > 0 {
		t.Fatalf("%d of %d URLs classified differently from the simulated truth", mismatches, n)
	}
	if inv := byLine[n+5]; inv.Class != "invalid" || !strings.Contains(inv.Error, "ftp") {
		t.Errorf("line %d (ftp URL): %+v, want class invalid naming the scheme", n+5, inv)
	}
	for d, st := range r.Web.Stats() {
		if st.Violations > 0 || (st.Limit.MaxConcurrent > 0 && st.PeakInFlight > st.Limit.MaxConcurrent) {
			t.Errorf("%s: %d requests in flight at peak, hidden cap %d", d, st.PeakInFlight, st.Limit.MaxConcurrent)
		}
	}
	s := r.Report.Summary
	t.Logf("requests %d, answered 429/503 %d (%.2f%%); makespan %.1fs sim, lower bound %.1fs (%s): ratio %.2f; wall %v",
		r.Requests, r.Throttled, 100*r.ThrottledShare(), s.MakespanS, r.LowerBound, r.LowerBoundDomain, r.Ratio(), r.Wall)
	if r.ThrottledShare() > 0.02 {
		t.Errorf("%.2f%% of requests answered 429/503, want <= 2%%", 100*r.ThrottledShare())
	}
	if s.Total != n+2 || s.Unique != n {
		t.Errorf("summary counts %d lines, %d unique URLs; want %d and %d", s.Total, s.Unique, n+2, n)
	}
}
