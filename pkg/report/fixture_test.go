package report

import (
	"fmt"
	"math"
	"time"

	"github.com/urlcheck/urlcheck/pkg/diff"
	"github.com/urlcheck/urlcheck/pkg/results"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// hostile is a URL whose text would run a script if it were not escaped.
const hostile = `https://evil.example/<script>alert("x")</script>?a=1&b=2`

// busyDomains are the fixture's domains with their request rates (per
// second) and learned rates; the last one is the quietest and is left out
// of the timeline (Tally keeps the 5 busiest).
var busyDomains = []struct {
	name    string
	rate    float64
	learned float64
}{
	{"alpha.example", 8, 6},
	{"bravo.example", 5, 4.5},
	{"charlie.example", 3, 2},
	{"delta.example", 2, 0},
	{"echo.example", 1, 1.5},
	{"foxtrot.example", 0.5, 1},
}

// fixture returns a job of 300 s with requests from six domains, broken
// lines of several classes (one with a hostile URL), an invalid line and a
// diff against a baseline in which some URLs worked and others differed.
func fixture() Input {
	ta := results.NewTally(t0)
	for _, d := range busyDomains {
		// Ramp up over the first 100 s, then steady; alpha is throttled
		// between 150 and 155 s and slows down to its learned rate.
		for sec := range 300 {
			rate := d.rate * min(1, float64(sec+10)/110)
			if d.name == "alpha.example" && sec >= 150 {
				rate = d.learned
			}
			n := int(math.Round(rate))
			for i := range n {
				at := t0.Add(time.Duration((float64(sec) + float64(i)/float64(n)) * float64(time.Second)))
				throttled := d.name == "alpha.example" && sec >= 150 && sec < 155
				ta.RequestAt(d.name, 200, throttled, at)
			}
		}
		ta.SetDomain(d.name, 10)
	}
	var rs []results.Result
	add := func(r results.Result) {
		r.Line = len(rs) + 1
		r.CheckedAt = t0.Add(time.Duration(r.Line) * time.Second)
		rs = append(rs, r)
		ta.Add(r)
	}
	for i := range 20 {
		d := busyDomains[i%len(busyDomains)].name
		add(results.Result{URL: fmt.Sprintf("https://%s/page/%d", d, i), Domain: d, Class: results.ClassOK, Status: 200, LatencyMS: float64(40 + i)})
	}
	add(results.Result{URL: "https://alpha.example/gone", Domain: "alpha.example", Class: results.ClassClientError, Status: 404, LatencyMS: 31})
	add(results.Result{URL: hostile, Domain: "evil.example", Class: results.ClassServerError, Status: 500, Error: `<b>boom</b> & "quotes"`, LatencyMS: 12})
	add(results.Result{URL: "https://bravo.example/slow", Domain: "bravo.example", Class: results.ClassTimeout, Error: "context deadline exceeded", LatencyMS: 10000})
	add(results.Result{URL: "https://charlie.example/moved", Domain: "charlie.example", Class: results.ClassTooManyRedirects, Status: 301,
		FinalURL: "https://charlie.example/moved?loop=11", Error: "stopped after 10 redirects", LatencyMS: 80})
	add(results.Result{URL: "javascript:alert(1)", Class: results.ClassInvalid, Error: "not an http(s) URL"})
	add(results.Result{URL: "https://delta.example/wall", Domain: "delta.example", Class: results.ClassBlockedByBotProtection, Status: 403, LatencyMS: 22})
	sum := ta.Summary("job-2025-03-01", t0.Add(300*time.Second), func(d string) float64 {
		for _, b := range busyDomains {
			if b.name == d {
				return b.learned
			}
		}
		return 0
	})

	// The baseline: the same list a week earlier, where /gone still worked,
	// /wall was already blocked, one page redirected elsewhere and one URL
	// was not yet on the list.
	var old []results.Result
	for _, r := range rs {
		o := r
		o.CheckedAt = r.CheckedAt.Add(-7 * 24 * time.Hour)
		switch r.URL {
		case "https://alpha.example/gone":
			o.Class, o.Status, o.Error = results.ClassOK, 200, ""
		case "https://alpha.example/page/0":
			o.FinalURL = "https://alpha.example/old-home"
		case "https://bravo.example/page/1":
			o.LatencyMS = 1
		case "https://charlie.example/moved":
			continue
		}
		old = append(old, o)
	}
	old = append(old, results.Result{Line: len(old) + 1, URL: "https://removed.example/", Domain: "removed.example", Class: results.ClassOK, Status: 200})
	oldSum := results.Summary{JobID: "job-2025-02-22", Finished: t0.Add(-7 * 24 * time.Hour), Total: len(old), Broken: 2}
	d := diff.Compute(old, rs, oldSum, sum, diff.Options{LatencyMin: -1})
	return Input{Summary: sum, Results: rs, Diff: &d}
}
