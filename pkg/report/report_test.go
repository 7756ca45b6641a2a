package report

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/urlcheck/urlcheck/pkg/results"
)

func TestWriteHTML(t *testing.T) {
	full := fixture()
	noTimeline := fixture()
	noTimeline.Summary.Timeline = nil
	noTimeline.Diff = nil
	capped := fixture()
	capped.MaxBroken, capped.MaxDomains, capped.MaxChanges = 2, 3, 1
	unknown := Input{Summary: results.Summary{JobID: "j", ByClass: map[string]int{"ok": 1, "weird_new": 2}},
		Results: []results.Result{{Line: 1, URL: "https://a.example/", Class: "weird_new"}}}

	tests := []struct {
		name    string
		in      Input
		want    []string // substrings of the output
		notWant []string
	}{
		{
			name: "full report",
			in:   full,
			want: []string{
				"<title>urlcheck report: job job-2025-03-01</title>",
				`id="class-table"`, `id="class-bar"`, `id="broken-table"`, `id="domain-table"`,
				`<svg id="timeline-chart"`, `<polyline points="`, `stroke-dasharray="6 4"`,
				"alpha.example (learned 6/s)", "delta.example</text>", "time since start", "requests/s",
				`id="diff"`, `id="diff-newly-broken"`, `id="diff-still-broken"`, `id="diff-added"`, `id="diff-removed"`,
				"job-2025-02-22", "https://removed.example/",
				// The hostile URL and error are text, never markup.
				"https://evil.example/&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;?a=1&amp;b=2",
				`href="https://evil.example/%3cscript%3ealert%28%22x%22%29%3c/script%3e?a=1&amp;b=2"`,
				"&lt;b&gt;boom&lt;/b&gt; &amp; &#34;quotes&#34;",
				"javascript:alert(1)", // shown as text...
				"No lines of class redirect, rate_limited",
			},
			notWant: []string{
				"<script", "<b>boom", `href="javascript:`, // ...but not as a link
				"foxtrot.example (learned", // the sixth domain is not in the timeline
				"Showing the first", "ZgotmplZ",
			},
		},
		{
			name: "empty input",
			in:   Input{},
			want: []string{"<title>urlcheck report</title>", `id="no-broken"`, "No broken URLs.", `id="no-timeline"`, "No domains."},
			notWant: []string{
				"<polyline", `id="broken-table"`, `id="diff"`, `id="class-bar"`, "NaN", "Inf",
			},
		},
		{
			name:    "no timeline, no baseline",
			in:      noTimeline,
			want:    []string{`id="broken-table"`, `id="domain-table"`, `id="no-timeline"`},
			notWant: []string{"<polyline", `id="timeline-chart"`, `id="diff"`, `href="#diff"`},
		},
		{
			name: "capped tables say so",
			in:   capped,
			want: []string{
				"Showing the first 2 of 6 broken lines",
				"Showing the 3 domains with the most URLs of 7",
				"Showing the first 1 of 3, by domain and URL",
			},
		},
		{
			name:    "unknown class is listed",
			in:      unknown,
			want:    []string{">weird_new</span>", "66.7%", `class="cls-bad">weird_new</td>`},
			notWant: []string{"<polyline"},
		},
		{
			name: "empty diff",
			in: func() Input {
				in := fixture()
				d := *in.Diff
				d.NewlyBroken, d.Fixed, d.RedirectChanged, d.StatusChanged, d.SlowerLatency, d.Added, d.Removed = nil, nil, nil, nil, nil, nil, nil
				in.Diff = &d
				return in
			}(),
			want:    []string{`id="diff-empty"`, "Nothing changed since the baseline (3 URLs are still broken)", `id="diff-still-broken"`},
			notWant: []string{`id="diff-newly-broken"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, tc.in); err != nil {
				t.Fatalf("Write: %v", err)
			}
			out := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output contains %q", w)
				}
			}
			assertOffline(t, out)
		})
	}
}

// assertOffline checks that a page references nothing outside itself: no
// scripts, no resources loaded by src, stylesheets or CSS url()/@import;
// the only external references allowed are <a href> links to checked URLs.
func assertOffline(t *testing.T, page string) {
	t.Helper()
	lower := strings.ToLower(page)
	for _, bad := range []string{"<script", " src=", "<link", "<img", "<iframe", "<object", "<embed", "@import", "url(", "srcset", "<base"} {
		if strings.Contains(lower, bad) {
			t.Errorf("page contains %q, so it may not open offline", bad)
		}
	}
	if !strings.Contains(page, "default-src 'none'") {
		t.Error("page lacks its Content-Security-Policy")
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteError(t *testing.T) {
	err := Write(failingWriter{}, Input{Summary: results.Summary{JobID: "j-1"}})
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), `"j-1"`) {
		t.Errorf("Write to a failing writer = %v, want an error wrapping disk full and naming the job", err)
	}
}

func TestFormatting(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"int", formatInt(1234567), "1,234,567"},
		{"small int", formatInt(999), "999"},
		{"negative int", formatInt(-1234), "-1,234"},
		{"float small", formatFloat(2.3456), "2.35"},
		{"float tens", formatFloat(12.34), "12.3"},
		{"float hundreds", formatFloat(123.4), "123"},
		{"float thousands", formatFloat(10000), "10,000"},
		{"rate zero", formatRate(0), "—"},
		{"rate", formatRate(4.5), "4.5/s"},
		{"ms", formatMS(80), "80 ms"},
		{"status none", formatStatus(0), "—"},
		{"duration 0", durationLabel(0), "0"},
		{"duration s", durationLabel(45), "45s"},
		{"duration m", durationLabel(120), "2m"},
		{"duration m s", durationLabel(90), "1m30s"},
		{"duration h", durationLabel(3600), "1h"},
		{"duration h m", durationLabel(3900), "1h5m"},
		{"lines", joinLines([]int{1, 2, 3, 4, 5, 6, 7}), "1, 2, 3, 4, 5, … +2"},
		{"class status", classStatus("client_error", 404), "client_error 404"},
		{"class only", classStatus("timeout", 0), "timeout"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestNiceSteps(t *testing.T) {
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"rate 8.4 in 5", niceStep(8.4, 5), 2},
		{"rate 0.3 in 5", niceStep(0.3, 5), 0.1},
		{"rate 0", niceStep(0, 5), 1},
		{"rate 4500 in 5", niceStep(4500, 5), 1000},
		{"time 300 s in 8", niceTimeStep(300, 8), 60},
		{"time 12 s in 8", niceTimeStep(12, 8), 2},
		{"time 3 h in 8", niceTimeStep(3*3600, 8), 1800},
		{"time 30 days in 8", niceTimeStep(30*86400, 8), 4 * 86400},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestChartGeometry(t *testing.T) {
	c := buildChart(fixture().Summary.Timeline)
	if c == nil {
		t.Fatal("no chart for a summary with a timeline")
	}
	if len(c.Series) != results.TimelineDomains {
		t.Fatalf("%d series, want %d", len(c.Series), results.TimelineDomains)
	}
	for _, s := range c.Series {
		for _, pt := range strings.Fields(s.Points) {
			var x, y float64
			if _, err := fmt.Sscanf(pt, "%g,%g", &x, &y); err != nil {
				t.Fatalf("%s: bad point %q: %v", s.Domain, pt, err)
			}
			if x < c.Left || x > c.Right || y < c.Top || y > c.Base {
				t.Errorf("%s: point %q outside the plot area", s.Domain, pt)
			}
		}
		if s.HasLearned && (s.LearnedY < c.Top || s.LearnedY > c.Base) {
			t.Errorf("%s: learned line at y=%v outside the plot", s.Domain, s.LearnedY)
		}
	}
	if c.XTicks[0].Label != "0" || c.XTicks[len(c.XTicks)-1].Label != "5m" {
		t.Errorf("x ticks %+v, want 0 to 5m", c.XTicks)
	}
	if got := buildChart([]results.DomainTimeline{{Domain: "a", BucketSeconds: 0, Requests: []int{1}}}); got != nil {
		t.Errorf("chart of a timeline without bucket width = %+v, want nil", got)
	}
}
