package diff

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/urlcheck/urlcheck/pkg/results"
)

var (
	tOld = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	tNew = time.Date(2025, 3, 8, 10, 0, 0, 0, time.UTC)
)

// res builds a result; domain is taken from the URL's host.
func res(line int, u, class string, status int, final string, latency float64, at time.Time) results.Result {
	host := strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://")
	host, _, _ = strings.Cut(host, "/")
	if class == results.ClassInvalid {
		host = ""
	}
	r := results.Result{Line: line, URL: u, Domain: host, Class: class, Status: status, FinalURL: final,
		LatencyMS: latency, Attempts: 1, CheckedAt: at}
	if results.Broken(class) && class != results.ClassInvalid {
		r.Error = class + " error"
	}
	return r
}

func o(line int, u, class string, status int, final string, latency float64) results.Result {
	return res(line, u, class, status, final, latency, tOld)
}

func n(line int, u, class string, status int, final string, latency float64) results.Result {
	return res(line, u, class, status, final, latency, tNew)
}

// urls maps each non-empty list of d to its URLs in order.
func urls(d Diff) map[string][]string {
	m := map[string][]string{}
	add := func(name string, cs []Change) {
		for _, c := range cs {
			m[name] = append(m[name], c.URL)
		}
	}
	add("newly_broken", d.NewlyBroken)
	add("fixed", d.Fixed)
	add("still_broken", d.StillBroken)
	add("redirect_changed", d.RedirectChanged)
	add("status_changed", d.StatusChanged)
	add("latency", d.SlowerLatency)
	add("added", d.Added)
	add("removed", d.Removed)
	return m
}

const (
	ok  = results.ClassOK
	rd  = results.ClassRedirect
	ce  = results.ClassClientError
	se  = results.ClassServerError
	to  = results.ClassTimeout
	inv = results.ClassInvalid
)

func TestComputeCategories(t *testing.T) {
	a, b, c := "https://a.example/1", "https://b.example/1", "https://c.example/1"
	tests := []struct {
		name     string
		old, new []results.Result
		opts     Options
		want     map[string][]string
		empty    bool
	}{
		{"identical", []results.Result{o(1, a, ok, 200, "", 100)}, []results.Result{n(1, a, ok, 200, "", 120)},
			Options{}, map[string][]string{}, true},
		{"both empty", nil, nil, Options{}, map[string][]string{}, true},
		{"newly broken", []results.Result{o(1, a, ok, 200, "", 100)}, []results.Result{n(1, a, ce, 404, "", 100)},
			Options{}, map[string][]string{"newly_broken": {a}}, false},
		{"fixed", []results.Result{o(1, a, to, 0, "", 100)}, []results.Result{n(1, a, ok, 200, "", 100)},
			Options{}, map[string][]string{"fixed": {a}}, false},
		{"still broken is not a change", []results.Result{o(1, a, ce, 404, "", 100)}, []results.Result{n(1, a, se, 500, "", 9000)},
			Options{}, map[string][]string{"still_broken": {a}}, true},
		{"redirect target changed", []results.Result{o(1, a, rd, 200, a+"x", 100)}, []results.Result{n(1, a, rd, 200, a+"y", 100)},
			Options{}, map[string][]string{"redirect_changed": {a}}, false},
		{"started redirecting", []results.Result{o(1, a, ok, 200, "", 100)}, []results.Result{n(1, a, rd, 200, a+"y", 100)},
			Options{}, map[string][]string{"redirect_changed": {a}}, false},
		{"status changed in one class", []results.Result{o(1, a, ok, 200, "", 100)}, []results.Result{n(1, a, ok, 204, "", 100)},
			Options{}, map[string][]string{"status_changed": {a}}, false},
		{"latency regression", []results.Result{o(1, a, ok, 200, "", 100)}, []results.Result{n(1, a, ok, 200, "", 700)},
			Options{}, map[string][]string{"latency": {a}}, false},
		{"slower but under the minimum", []results.Result{o(1, a, ok, 200, "", 100)}, []results.Result{n(1, a, ok, 200, "", 550)},
			Options{}, map[string][]string{}, true},
		{"slower but under the factor", []results.Result{o(1, a, ok, 200, "", 1000)}, []results.Result{n(1, a, ok, 200, "", 1900)},
			Options{}, map[string][]string{}, true},
		{"custom latency thresholds", []results.Result{o(1, a, ok, 200, "", 100)}, []results.Result{n(1, a, ok, 200, "", 160)},
			Options{LatencyFactor: 1.5, LatencyMin: -1}, map[string][]string{"latency": {a}}, false},
		{"several changes of a working URL", []results.Result{o(1, a, rd, 301, a+"x", 100)}, []results.Result{n(1, a, rd, 200, a+"y", 2000)},
			Options{}, map[string][]string{"redirect_changed": {a}, "status_changed": {a}, "latency": {a}}, false},
		{"added and removed", []results.Result{o(1, a, ok, 200, "", 100)}, []results.Result{n(1, b, ce, 404, "", 100)},
			Options{}, map[string][]string{"added": {b}, "removed": {a}}, false},
		{"invalid lines are ignored", []results.Result{o(1, "garbage", inv, 0, "", 0), o(2, a, ok, 200, "", 1)},
			[]results.Result{n(1, "other garbage", inv, 0, "", 0), n(2, a, ok, 200, "", 1)},
			Options{}, map[string][]string{}, true},
		{"invalid line becoming valid is added", []results.Result{o(1, "htp:/x", inv, 0, "", 0)},
			[]results.Result{n(1, c, ok, 200, "", 1)}, Options{}, map[string][]string{"added": {c}}, false},
		{"sorted by domain then URL", []results.Result{
			o(1, c, ok, 200, "", 1), o(2, b+"/z", ok, 200, "", 1), o(3, b, ok, 200, "", 1), o(4, a, ok, 200, "", 1)},
			[]results.Result{n(1, a, ce, 404, "", 1), n(2, b, ce, 404, "", 1), n(3, c, ce, 404, "", 1), n(4, b+"/z", ce, 404, "", 1)},
			Options{}, map[string][]string{"newly_broken": {a, b, b + "/z", c}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Compute(tc.old, tc.new, results.Summary{}, results.Summary{}, tc.opts)
			if got := urls(d); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("lists %v, want %v", got, tc.want)
			}
			if d.Empty() != tc.empty {
				t.Errorf("Empty() = %v, want %v", d.Empty(), tc.empty)
			}
			for _, l := range d.lists() {
				if *l == nil {
					t.Fatalf("a list is nil: %+v", d)
				}
			}
		})
	}
}

func TestComputeChangeFields(t *testing.T) {
	a, b := "https://a.example/1", "https://b.example/1"
	old := []results.Result{o(4, a, ok, 200, "", 100), o(9, a, ok, 200, "", 100), o(2, b, ce, 404, "", 50)}
	// a moves to lines 1, 3 and 7 and breaks; b stays broken.
	new := []results.Result{n(7, a, to, 0, "", 30000), n(1, a, to, 0, "", 30000), n(3, a, to, 0, "", 30000), n(2, b, ce, 410, "", 60)}
	oldSum := results.Summary{JobID: "old", Finished: tOld, Total: 3, Broken: 1}
	newSum := results.Summary{JobID: "new", Finished: tNew, Total: 4, Broken: 4}
	d := Compute(old, new, oldSum, newSum, Options{})
	want := Diff{
		Old: Meta{JobID: "old", Finished: tOld, Total: 3, Broken: 1},
		New: Meta{JobID: "new", Finished: tNew, Total: 4, Broken: 4},
		NewlyBroken: []Change{{URL: a, Lines: []int{1, 3, 7}, Domain: "a.example", OldClass: ok, NewClass: to,
			OldStatus: 200, OldLatencyMS: 100, NewLatencyMS: 30000, Error: "timeout error"}},
		Fixed: []Change{},
		StillBroken: []Change{{URL: b, Lines: []int{2}, Domain: "b.example", OldClass: ce, NewClass: ce,
			OldStatus: 404, NewStatus: 410, OldLatencyMS: 50, NewLatencyMS: 60, Since: tOld, Error: "client_error error"}},
		RedirectChanged: []Change{}, StatusChanged: []Change{}, SlowerLatency: []Change{}, Added: []Change{}, Removed: []Change{},
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("got  %+v\nwant %+v", d, want)
	}

	// Options.Since carries "broken since" from earlier scans.
	since := tOld.Add(-30 * 24 * time.Hour)
	d2 := Compute(old, new, oldSum, newSum, Options{Since: map[string]time.Time{b: since, a: since}})
	if got := d2.StillBroken[0].Since; !got.Equal(since) {
		t.Errorf("Since = %v, want %v", got, since)
	}
	if !d2.NewlyBroken[0].Since.IsZero() {
		t.Errorf("newly broken has Since %v", d2.NewlyBroken[0].Since)
	}
	if got := d2.BrokenSince(); !reflect.DeepEqual(got, map[string]time.Time{b: since}) {
		t.Errorf("BrokenSince = %v", got)
	}

	// JSON round-trips.
	data, err := json.Marshal(d2)
	if err != nil {
		t.Fatal(err)
	}
	var back Diff
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, d2) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, d2)
	}
	for _, key := range []string{`"newly_broken":[{`, `"latency_regressions":[]`, `"old":{"job_id":"old"`, `"since":"2025-01-30T10:00:00Z"`, `"new_class":"timeout"`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("JSON lacks %s: %s", key, data)
		}
	}
	if strings.Contains(string(data), `"new_status"`+":0") {
		t.Errorf("zero status not omitted: %s", data)
	}
}

func TestMetaFromResultsWithoutSummary(t *testing.T) {
	rs := []results.Result{n(1, "https://a.example/", ok, 200, "", 1), n(2, "x", inv, 0, "", 0)}
	d := Compute(nil, rs, results.Summary{}, results.Summary{}, Options{})
	if d.New.Total != 2 || d.New.Broken != 1 || d.Old.Total != 0 {
		t.Fatalf("meta old %+v new %+v", d.Old, d.New)
	}
}

func TestMarkdown(t *testing.T) {
	var old, new []results.Result
	// Three newly broken URLs, one fixed, one still broken, one added.
	for i, u := range []string{"https://a.example/1", "https://a.example/2", "https://b.example/1"} {
		old = append(old, o(i+1, u, ok, 200, "", 100))
		new = append(new, n(i+1, u, ce, 404, "", 100))
	}
	old = append(old, o(4, "https://c.example/`x`", to, 0, "", 100), o(5, "https://d.example/", se, 503, "", 100))
	new = append(new, n(4, "https://c.example/`x`", ok, 200, "", 90), n(5, "https://d.example/", se, 500, "", 100),
		n(6, "https://e.example/new", ok, 200, "", 10), n(7, "https://e.example/new", ok, 200, "", 10))
	d := Compute(old, new, results.Summary{JobID: "j1", Total: 5, Broken: 2}, results.Summary{JobID: "j2", Total: 7, Broken: 4}, Options{})

	tests := []struct {
		name  string
		d     Diff
		max   int
		want  []string // in this order
		avoid []string
	}{
		{"limited", d, 2, []string{
			"**urlcheck diff: 3 newly broken, 1 fixed, 1 added; 1 still broken**\n",
			"Old scan `j1` (5 lines, 2 broken) → new scan `j2` (7 lines, 4 broken).\n",
			"\n**Newly broken (3)**\n",
			"- `https://a.example/1` line 1: ok 200 → client_error 404 (`client_error error`)\n",
			"- `https://a.example/2` line 2: ok 200 → client_error 404",
			"- … 1 more\n",
			"\n**Fixed (1)**\n- `https://c.example/'x'` line 4: timeout → ok 200\n",
			"\n**Added (1)**\n- `https://e.example/new` lines 6, 7: ok 200\n",
			"\n**Still broken (1)**\n- `https://d.example/` line 5: server_error 500 since 2025-03-01 10:00 UTC (`server_error error`)\n",
		}, []string{"b.example", "Removed", "Slower"}},
		{"unlimited", d, -1, []string{"**Newly broken (3)**", "a.example/1", "a.example/2", "b.example/1", "**Fixed"}, []string{"more"}},
		{"headline only", d, 0, []string{"**urlcheck diff: 3 newly broken", "Old scan"}, []string{"**Newly", "- "}},
		{"empty", Compute(old[:1], old[:1], results.Summary{}, results.Summary{}, Options{}), 10,
			[]string{"**urlcheck diff: no changes; 0 still broken**\n", "Old scan `?` (1 lines, 0 broken)"}, []string{"**Newly"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			md := tc.d.Markdown(tc.max)
			rest := md
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("Markdown lacks %q (in order) in:\n%s", w, md)
				}
				rest = rest[i+len(w):]
			}
			for _, a := range tc.avoid {
				if strings.Contains(md, a) {
					t.Errorf("Markdown contains %q:\n%s", a, md)
				}
			}
			if !strings.HasSuffix(md, "\n") {
				t.Errorf("no final newline: %q", md)
			}
		})
	}

	other := Diff{
		RedirectChanged: []Change{{URL: "https://r.example/", Lines: []int{1, 2, 3, 4, 5, 6, 7}, OldFinal: "https://r.example/a"}},
		SlowerLatency:   []Change{{URL: "https://s.example/", Lines: []int{2}, OldLatencyMS: 120, NewLatencyMS: 1500}},
		Removed:         []Change{{URL: "https://t.example/", Lines: []int{9}, OldClass: ok, OldStatus: 200}},
		StatusChanged:   []Change{{URL: "https://u.example/", Lines: []int{3}, OldClass: ok, NewClass: ok, OldStatus: 200, NewStatus: 204}},
	}
	md := other.Markdown(5)
	for _, w := range []string{
		"- `https://r.example/` lines 1, 2, 3, 4, 5 +2: `https://r.example/a` → no redirect\n",
		"- `https://u.example/` line 3: ok 200 → ok 204\n",
		"- `https://s.example/` line 2: 120 ms → 1.5 s\n",
		"- `https://t.example/` line 9: was ok 200\n",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("Markdown lacks %q in:\n%s", w, md)
		}
	}
}

// writeScan writes results and a summary into a new directory under root.
func writeScan(t *testing.T, dir string, rs []results.Result, s results.Summary) {
	t.Helper()
	w, err := results.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteSummary(dir, s); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	root := t.TempDir()
	good := filepath.Join(root, "good")
	rs := []results.Result{o(1, "https://a.example/", ok, 200, "", 12), o(2, "https://b.example/", ce, 404, "", 7)}
	writeScan(t, good, rs, results.Summary{JobID: "good", Total: 2, Broken: 1})

	noSummary := filepath.Join(root, "nosummary")
	if err := os.MkdirAll(noSummary, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(noSummary, results.JSONLFile), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(root, "bad")
	writeScan(t, bad, rs, results.Summary{JobID: "bad"})
	if err := os.WriteFile(filepath.Join(bad, results.JSONLFile), []byte(`{"line":1,"url":"x","class":"ok"}`+"\n\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badSummary := filepath.Join(root, "badsummary")
	writeScan(t, badSummary, rs, results.Summary{})
	if err := os.WriteFile(filepath.Join(badSummary, results.SummaryFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		path    string
		errHas  []string
		notFile bool
	}{
		{"directory", good, nil, false},
		{"summary.json", filepath.Join(good, results.SummaryFile), nil, false},
		{"results.jsonl", filepath.Join(good, results.JSONLFile), nil, false},
		{"missing", filepath.Join(root, "nope"), []string{filepath.Join(root, "nope")}, true},
		{"other file", filepath.Join(good, results.CSVFile), []string{results.CSVFile, "want a result directory"}, false},
		{"no summary", noSummary, []string{noSummary, results.SummaryFile}, true},
		{"bad jsonl names path and line", filepath.Join(bad, results.SummaryFile), []string{filepath.Join(bad, results.JSONLFile), "line 3"}, false},
		{"bad summary", badSummary, []string{filepath.Join(badSummary, results.SummaryFile)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, sum, err := Load(tc.path)
			if tc.errHas == nil {
				if err != nil {
					t.Fatal(err)
				}
				if sum.JobID != "good" || !reflect.DeepEqual(got, rs) {
					t.Fatalf("got %+v %+v", sum, got)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range tc.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if errors.Is(err, fs.ErrNotExist) != tc.notFile {
				t.Errorf("errors.Is(%v, fs.ErrNotExist) = %v", err, !tc.notFile)
			}
		})
	}
}

func TestLoadDiff(t *testing.T) {
	dir := t.TempDir()
	d := Compute([]results.Result{o(1, "https://a.example/", ce, 404, "", 1)}, []results.Result{n(1, "https://a.example/", ce, 404, "", 1)},
		results.Summary{JobID: "a"}, results.Summary{JobID: "b"}, Options{})
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, FileName)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := LoadDiff(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, d) {
		t.Fatalf("got %+v, want %+v", back, d)
	}
	if _, err := LoadDiff(filepath.Join(dir, "nope.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if err := os.WriteFile(p, []byte("[1]"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDiff(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("bad file: %v", err)
	}
}
