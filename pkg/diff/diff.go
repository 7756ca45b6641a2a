// Package diff compares two urlcheck scans of a list: which URLs broke,
// which were fixed, which are still broken (and since when), whose redirect
// target, status code or latency changed, and which URLs were added to or
// removed from the list.
//
// A scan is the results.jsonl and summary.json of one job (see Load). URLs
// are matched by their normalized form (results.Result.URL); several lines
// of one list that carry the same URL make one Change listing all of them.
// Lines of class "invalid" are ignored entirely: they are neither compared
// nor reported as added or removed, since their URL field holds raw line
// text rather than a URL.
//
// Compute is deterministic: every list in a Diff is sorted by domain, then
// URL, and the Diff round-trips through encoding/json. The same Diff serves
// the CLI (urlcheck diff, urlcheck run -baseline) and scheduled scans, which
// notify with Diff.Markdown.
package diff

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/urlcheck/urlcheck/pkg/results"
)

// FileName is the name under which a Diff is stored as indented JSON next to
// the new scan's summary.json (urlcheck run -baseline writes
// <dir>/diff.json).
const FileName = "diff.json"

// Default thresholds applied by Compute when Options leaves them zero.
const (
	DefaultLatencyFactor = 2.0
	DefaultLatencyMin    = 500 * time.Millisecond
)

// Options tunes Compute. The zero value uses the defaults.
type Options struct {
	// LatencyFactor and LatencyMin define a latency regression of a URL
	// that works in both scans: new > old*LatencyFactor AND
	// new-old > LatencyMin. LatencyFactor <= 0 means DefaultLatencyFactor
	// (2); LatencyMin == 0 means DefaultLatencyMin (500 ms), and a negative
	// LatencyMin drops the absolute condition.
	LatencyFactor float64
	LatencyMin    time.Duration
	// Since maps a normalized URL to when it was first seen broken in
	// earlier scans; it sets Change.Since of still-broken URLs. For a URL
	// missing from it (or a nil map) Since is the old scan's CheckedAt of
	// that URL. Diff.BrokenSince builds the map from the previous Diff.
	Since map[string]time.Time
}

// Change describes one normalized URL that differs between the scans. The
// Old* fields come from the old scan and the New* fields from the new one;
// fields of a scan that does not contain the URL (Added, Removed) are zero
// and omitted from JSON.
type Change struct {
	// URL is the normalized URL, the key of the comparison.
	URL string `json:"url"`
	// Lines are the URL's 1-based line numbers in the new list, ascending
	// (in the old list for Removed).
	Lines []int `json:"lines"`
	// Domain is the URL's registrable domain (from the new scan, or the old
	// one for Removed).
	Domain string `json:"domain"`
	// OldClass and NewClass are result classes (results.Classes).
	OldClass string `json:"old_class,omitempty"`
	NewClass string `json:"new_class,omitempty"`
	// OldStatus and NewStatus are final HTTP status codes, 0 when no
	// response arrived.
	OldStatus int `json:"old_status,omitempty"`
	NewStatus int `json:"new_status,omitempty"`
	// OldFinal and NewFinal are the URLs after redirects, empty when none
	// were followed.
	OldFinal string `json:"old_final_url,omitempty"`
	NewFinal string `json:"new_final_url,omitempty"`
	// OldLatencyMS and NewLatencyMS are the latencies of the final
	// attempts, in milliseconds.
	OldLatencyMS float64 `json:"old_latency_ms,omitempty"`
	NewLatencyMS float64 `json:"new_latency_ms,omitempty"`
	// Since is set for still-broken URLs only: when the URL was first seen
	// broken (Options.Since, else the old scan's CheckedAt).
	Since time.Time `json:"since,omitzero"`
	// Error is the last error text of the new scan (of the old scan for
	// Removed); usually empty for URLs that work.
	Error string `json:"error,omitempty"`
}

// Meta identifies one of the compared scans.
type Meta struct {
	// JobID is the scan's job ID (results.Summary.JobID).
	JobID string `json:"job_id"`
	// Finished is when the scan finished.
	Finished time.Time `json:"finished,omitzero"`
	// Total and Broken count the scan's lines and broken lines, invalid
	// lines included (as in results.Summary).
	Total  int `json:"total"`
	Broken int `json:"broken"`
}

// Diff is the comparison of an old and a new scan. Every list is sorted by
// Domain, then URL. A URL appears in at most one of NewlyBroken, Fixed,
// StillBroken, Added and Removed; a URL that works in both scans may appear
// in several of RedirectChanged, StatusChanged and SlowerLatency.
type Diff struct {
	// Old and New describe the two scans.
	Old Meta `json:"old"`
	New Meta `json:"new"`
	// NewlyBroken: working in the old scan, broken in the new one.
	NewlyBroken []Change `json:"newly_broken"`
	// Fixed: broken in the old scan, working in the new one.
	Fixed []Change `json:"fixed"`
	// StillBroken: broken in both (the class may differ); see Change.Since.
	StillBroken []Change `json:"still_broken"`
	// RedirectChanged: working in both, with different final URLs
	// (including starting or ceasing to redirect).
	RedirectChanged []Change `json:"redirect_changed"`
	// StatusChanged: working in both with the same class but a different
	// final status code.
	StatusChanged []Change `json:"status_changed"`
	// SlowerLatency: working in both, latency regressed (see Options).
	SlowerLatency []Change `json:"latency_regressions"`
	// Added: URLs only in the new list; Removed: URLs only in the old list.
	Added   []Change `json:"added"`
	Removed []Change `json:"removed"`
}

// entry is one normalized URL of a scan: its representative result (the
// one of the lowest line) and all its lines.
type entry struct {
	res   results.Result
	lines []int
}

// index groups rs by normalized URL, skipping invalid lines and results
// without a URL.
func index(rs []results.Result) map[string]*entry {
	m := make(map[string]*entry, len(rs))
	for _, r := range rs {
		if r.Class == results.ClassInvalid || r.URL == "" {
			continue
		}
		e := m[r.URL]
		if e == nil {
			e = &entry{res: r}
			m[r.URL] = e
		} else if r.Line < e.res.Line {
			e.res = r
		}
		e.lines = append(e.lines, r.Line)
	}
	for _, e := range m {
		slices.Sort(e.lines)
	}
	return m
}

// meta describes a scan from its summary; when the summary is empty but
// results exist (a caller without summary.json), counts come from rs.
func meta(s results.Summary, rs []results.Result) Meta {
	m := Meta{JobID: s.JobID, Finished: s.Finished, Total: s.Total, Broken: s.Broken}
	if s.Total == 0 && len(rs) > 0 {
		m.Total = len(rs)
		m.Broken = 0
		for _, r := range rs {
			if results.Broken(r.Class) {
				m.Broken++
			}
		}
	}
	return m
}

// Compute compares the old scan (results and summary) with the new one.
// It never fails: results are matched by normalized URL, invalid lines are
// ignored, and for a URL on several lines the result of its lowest line
// represents it. All lists of the returned Diff are non-nil.
func Compute(old, new []results.Result, oldSum, newSum results.Summary, o Options) Diff {
	factor := o.LatencyFactor
	if factor <= 0 {
		factor = DefaultLatencyFactor
	}
	minMS := float64(o.LatencyMin) / float64(time.Millisecond)
	switch {
	case o.LatencyMin == 0:
		minMS = float64(DefaultLatencyMin) / float64(time.Millisecond)
	case o.LatencyMin < 0:
		minMS = -1 // any positive growth satisfies new-old > minMS
	}
	d := Diff{
		Old: meta(oldSum, old), New: meta(newSum, new),
		NewlyBroken: []Change{}, Fixed: []Change{}, StillBroken: []Change{},
		RedirectChanged: []Change{}, StatusChanged: []Change{}, SlowerLatency: []Change{},
		Added: []Change{}, Removed: []Change{},
	}
	oi, ni := index(old), index(new)
	for u, ne := range ni {
		oe := oi[u]
		if oe == nil {
			d.Added = append(d.Added, change(u, nil, ne))
			continue
		}
		c := change(u, oe, ne)
		ob, nb := results.Broken(oe.res.Class), results.Broken(ne.res.Class)
		switch {
		case !ob && nb:
			d.NewlyBroken = append(d.NewlyBroken, c)
		case ob && !nb:
			d.Fixed = append(d.Fixed, c)
		case ob && nb:
			c.Since = oe.res.CheckedAt
			if t, ok := o.Since[u]; ok && !t.IsZero() {
				c.Since = t
			}
			d.StillBroken = append(d.StillBroken, c)
		default: // works in both
			if oe.res.FinalURL != ne.res.FinalURL {
				d.RedirectChanged = append(d.RedirectChanged, c)
			}
			if oe.res.Class == ne.res.Class && oe.res.Status != ne.res.Status {
				d.StatusChanged = append(d.StatusChanged, c)
			}
			if ol, nl := oe.res.LatencyMS, ne.res.LatencyMS; nl > ol*factor && nl-ol > minMS {
				d.SlowerLatency = append(d.SlowerLatency, c)
			}
		}
	}
	for u, oe := range oi {
		if ni[u] == nil {
			d.Removed = append(d.Removed, change(u, oe, nil))
		}
	}
	for _, l := range d.lists() {
		slices.SortFunc(*l, func(a, b Change) int {
			return cmp.Or(cmp.Compare(a.Domain, b.Domain), cmp.Compare(a.URL, b.URL))
		})
	}
	return d
}

// change builds the Change of URL u from its old and new entries, either of
// which may be nil.
func change(u string, oe, ne *entry) Change {
	c := Change{URL: u}
	if oe != nil {
		r := oe.res
		c.Lines, c.Domain, c.Error = oe.lines, r.Domain, r.Error
		c.OldClass, c.OldStatus, c.OldFinal, c.OldLatencyMS = r.Class, r.Status, r.FinalURL, r.LatencyMS
	}
	if ne != nil {
		r := ne.res
		c.Lines, c.Domain, c.Error = ne.lines, r.Domain, r.Error
		c.NewClass, c.NewStatus, c.NewFinal, c.NewLatencyMS = r.Class, r.Status, r.FinalURL, r.LatencyMS
	}
	return c
}

// lists returns pointers to d's lists in report order.
func (d *Diff) lists() []*[]Change {
	return []*[]Change{&d.NewlyBroken, &d.Fixed, &d.RedirectChanged, &d.StatusChanged,
		&d.SlowerLatency, &d.Added, &d.Removed, &d.StillBroken}
}

// Empty reports whether nothing changed: no URL newly broken or fixed, no
// redirect, status or latency change, none added or removed. Still-broken
// URLs do not count.
func (d Diff) Empty() bool {
	return len(d.NewlyBroken)+len(d.Fixed)+len(d.RedirectChanged)+len(d.StatusChanged)+
		len(d.SlowerLatency)+len(d.Added)+len(d.Removed) == 0
}

// BrokenSince returns, for every still-broken URL of d, when it was first
// seen broken (Change.Since). Passed as Options.Since to the Compute of the
// next scan against d's new scan, it carries "broken since" across a chain
// of scans; URLs that broke in d's new scan need no entry, since the default
// (the old scan's CheckedAt) is then right. It returns an empty, non-nil map
// when there are none.
func (d Diff) BrokenSince() map[string]time.Time {
	m := make(map[string]time.Time, len(d.StillBroken))
	for _, c := range d.StillBroken {
		if !c.Since.IsZero() {
			m[c.URL] = c.Since
		}
	}
	return m
}

// Load reads one scan: path may be a result directory holding
// results.jsonl and summary.json, or the path of either of those two files,
// in which case its sibling is read too. Errors name the path, and for a
// malformed results.jsonl the 1-based line.
func Load(path string) ([]results.Result, results.Summary, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, results.Summary{}, fmt.Errorf("diff: load %s: %w", path, err)
	}
	dir := path
	if !fi.IsDir() {
		switch filepath.Base(path) {
		case results.JSONLFile, results.SummaryFile:
			dir = filepath.Dir(path)
		default:
			return nil, results.Summary{}, fmt.Errorf("diff: load %s: want a result directory, %s or %s",
				path, results.JSONLFile, results.SummaryFile)
		}
	}
	sum, err := results.ReadSummary(filepath.Join(dir, results.SummaryFile))
	if err != nil {
		return nil, results.Summary{}, fmt.Errorf("diff: load %s: %w", path, err)
	}
	rs, err := results.ReadJSONL(filepath.Join(dir, results.JSONLFile))
	if err != nil {
		return nil, results.Summary{}, fmt.Errorf("diff: load %s: %w", path, err)
	}
	return rs, sum, nil
}

// LoadDiff reads a Diff stored as JSON (such as <dir>/diff.json). It
// returns an error naming path if the file cannot be read or decoded; a
// missing file satisfies errors.Is(err, fs.ErrNotExist).
func LoadDiff(path string) (Diff, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Diff{}, fmt.Errorf("diff: read diff: %w", err)
	}
	var d Diff
	if err := json.Unmarshal(data, &d); err != nil {
		return Diff{}, fmt.Errorf("diff: read %s: %w", path, err)
	}
	return d, nil
}
