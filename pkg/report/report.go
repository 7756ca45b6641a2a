// Package report renders a urlcheck job as one self-contained HTML page:
// the job's key figures, counts by class, the broken URLs, a per-domain
// table, a timeline chart of the busiest domains' request rates and, when a
// baseline scan is given, what changed since it (see pkg/diff).
//
// The page opens offline: it has no external style sheets, scripts, fonts or
// images (styles are inline, charts are inline SVG, there is no script).
// Everything taken from the input is escaped by html/template; links are
// only made for http and https URLs.
package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urlcheck/urlcheck/pkg/diff"
	"github.com/urlcheck/urlcheck/pkg/results"
)

// FileName is the default name of the report inside a result directory.
const FileName = "report.html"

// Default row limits, used when the Input leaves them zero.
const (
	DefaultMaxBroken  = 2000 // rows of the broken-URL table
	DefaultMaxDomains = 500  // rows of the per-domain table
	DefaultMaxChanges = 500  // rows of each diff section
)

// Input is what Write renders.
type Input struct {
	// Summary is the job's summary (summary.json). Its Timeline, when
	// present, feeds the timeline chart; Domains feeds the domain table.
	Summary results.Summary
	// Results are the job's per-line results (results.jsonl), in any
	// order; the broken ones are listed by line number.
	Results []results.Result
	// Diff, when not nil, adds a section with the changes against a
	// baseline scan (diff.Compute of the baseline and this job).
	Diff *diff.Diff
	// MaxBroken, MaxDomains and MaxChanges cap the rows of the broken-URL
	// table, the domain table and each diff section; 0 means
	// DefaultMaxBroken, DefaultMaxDomains and DefaultMaxChanges. A capped
	// table says how many rows it left out.
	MaxBroken, MaxDomains, MaxChanges int
}

//go:embed report.html.tmpl
var pageSource string

var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":   formatInt,
	"float": formatFloat,
}).Parse(pageSource))

// Write renders in as one HTML document to w. It returns an error, wrapped
// with context, if the template cannot be executed or w fails; part of the
// document may then have been written.
func Write(w io.Writer, in Input) error {
	p := buildPage(in)
	if err := pageTmpl.Execute(w, p); err != nil {
		return fmt.Errorf("report: render job %q: %w", in.Summary.JobID, err)
	}
	return nil
}

// page is the template's view of an Input.
type page struct {
	Title       string
	JobID       string
	Started     string
	Finished    string
	Makespan    string
	S           results.Summary
	ClassBar    []barSegment
	Classes     []classRow
	ZeroClasses string // known classes without lines, comma-separated
	Broken      table[brokenRow]
	Domains     table[domainRow]
	Chart       *chart
	Diff        *diffView
	HasDomain   bool
}

// table is a possibly capped list of rows.
type table[T any] struct {
	Rows  []T
	Total int // rows before capping
}

// Capped reports whether rows were left out.
func (t table[T]) Capped() bool { return t.Total > len(t.Rows) }

type classRow struct {
	Name   string
	Count  int
	Share  string // percent of all lines
	Width  float64
	Color  string
	Broken bool
}

type barSegment struct {
	X, Width float64
	Color    string
	Label    string
}

type brokenRow struct {
	Line     int
	URL      string
	Link     bool
	Class    string
	Status   string
	Error    string
	FinalURL string
	Redirect bool
}

type domainRow struct {
	Domain       string
	URLs         int
	Requests     int
	Throttled    int
	LearnedRate  string
	AchievedRate string
	P95          string
}

func buildPage(in Input) page {
	s := in.Summary
	p := page{
		JobID:    s.JobID,
		Started:  formatTime(s.Started),
		Finished: formatTime(s.Finished),
		Makespan: formatSeconds(s.MakespanS),
		S:        s,
	}
	p.Title = "urlcheck report"
	if s.JobID != "" {
		p.Title += ": job " + s.JobID
	}
	p.Classes, p.ClassBar = classRows(s)
	var zero []string
	for _, c := range p.Classes {
		if c.Count == 0 {
			zero = append(zero, c.Name)
		}
	}
	p.ZeroClasses = strings.Join(zero, ", ")
	p.Broken = brokenRows(in.Results, orDefault(in.MaxBroken, DefaultMaxBroken))
	p.Domains = domainRows(s.Domains, orDefault(in.MaxDomains, DefaultMaxDomains))
	p.Chart = buildChart(s.Timeline)
	if in.Diff != nil {
		p.Diff = buildDiff(*in.Diff, orDefault(in.MaxChanges, DefaultMaxChanges))
	}
	return p
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// classColor gives each class a colour: green for ok, blue for redirects,
// grey for invalid lines, orange for throttling and bot walls, red for the
// other broken classes.
func classColor(c string) string {
	switch c {
	case results.ClassOK:
		return "#2e8b57"
	case results.ClassRedirect:
		return "#3b78c2"
	case results.ClassInvalid:
		return "#8a8a8a"
	case results.ClassRateLimited, results.ClassBlockedByBotProtection:
		return "#e08a1e"
	default:
		return "#c8372d"
	}
}

// classRows lists every known class (in results.Classes order) and then any
// unknown class that occurred, by name.
func classRows(s results.Summary) ([]classRow, []barSegment) {
	names := slices.Clone(results.Classes)
	var extra []string
	for c := range s.ByClass {
		if !slices.Contains(results.Classes, c) {
			extra = append(extra, c)
		}
	}
	slices.Sort(extra)
	names = append(names, extra...)
	total := 0
	for _, c := range names {
		total += s.ByClass[c]
	}
	const barWidth = 600.0
	var rows []classRow
	var segs []barSegment
	x := 0.0
	for _, c := range names {
		n := s.ByClass[c]
		r := classRow{Name: c, Count: n, Color: classColor(c), Broken: results.Broken(c), Share: "0%"}
		if total > 0 {
			f := float64(n) / float64(total)
			r.Share = strconv.FormatFloat(100*f, 'f', 1, 64) + "%"
			r.Width = round1(160 * f)
			if n > 0 {
				w := barWidth * f
				segs = append(segs, barSegment{X: round1(x), Width: round1(w), Color: r.Color,
					Label: fmt.Sprintf("%s: %s (%s)", c, formatInt(n), r.Share)})
				x += w
			}
		}
		rows = append(rows, r)
	}
	return rows, segs
}

func brokenRows(rs []results.Result, max int) table[brokenRow] {
	var broken []results.Result
	for _, r := range rs {
		if results.Broken(r.Class) {
			broken = append(broken, r)
		}
	}
	slices.SortStableFunc(broken, func(a, b results.Result) int { return a.Line - b.Line })
	t := table[brokenRow]{Total: len(broken)}
	for _, r := range broken[:min(len(broken), max)] {
		t.Rows = append(t.Rows, brokenRow{
			Line: r.Line, URL: r.URL, Link: isWebURL(r.URL), Class: r.Class,
			Status: formatStatus(r.Status), Error: r.Error, FinalURL: r.FinalURL, Redirect: isWebURL(r.FinalURL),
		})
	}
	return t
}

func domainRows(ds []results.DomainSummary, max int) table[domainRow] {
	t := table[domainRow]{Total: len(ds)}
	for _, d := range ds[:min(len(ds), max)] {
		t.Rows = append(t.Rows, domainRow{
			Domain: d.Domain, URLs: d.URLs, Requests: d.Requests, Throttled: d.Throttled,
			LearnedRate: formatRate(d.LearnedRate), AchievedRate: formatRate(d.AchievedRate),
			P95: formatMS(d.P95MS),
		})
	}
	return t
}

// isWebURL reports whether u is an absolute http or https URL, the only
// kind the report links to.
func isWebURL(u string) bool {
	l := strings.ToLower(u)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

func formatSeconds(s float64) string {
	if s <= 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return "0 s"
	}
	return time.Duration(s * float64(time.Second)).Round(100 * time.Millisecond).String()
}

func formatStatus(code int) string {
	if code == 0 {
		return "—"
	}
	return strconv.Itoa(code)
}

func formatRate(r float64) string {
	if r <= 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		return "—"
	}
	return formatFloat(r) + "/s"
}

func formatMS(ms float64) string {
	if ms <= 0 || math.IsNaN(ms) || math.IsInf(ms, 0) {
		return "—"
	}
	return formatFloat(ms) + " ms"
}

// formatFloat prints f with at most 3 significant decimals, no exponent
// for ordinary magnitudes.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "—"
	case math.Abs(f) >= 1000 && math.Abs(f) < 1e15:
		return formatInt(int(math.Round(f)))
	case math.Abs(f) >= 100:
		return strconv.FormatFloat(math.Round(f), 'f', -1, 64)
	case math.Abs(f) >= 10:
		return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64)
	default:
		return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
	}
}

// formatInt prints n with thin-space-free comma grouping: 12345 → "12,345".
func formatInt(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }
