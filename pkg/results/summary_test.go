package results

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestWriteSummaryRoundTrip(t *testing.T) {
	ta := NewTally(t0)
	ta.SetDomain("a.com", 2)
	ta.RequestAt("a.com", 200, false, sec(1))
	ta.RequestAt("a.com", 429, true, sec(3))
	ta.Retry()
	ta.Add(Result{Line: 1, URL: "https://a.com/", Domain: "a.com", Class: ClassOK, Status: 200, LatencyMS: 12.3})
	ta.Add(Result{Line: 2, URL: "x", Class: ClassInvalid})
	ta.SetDomain("b.com", 0) // never requested: zero First/Last are omitted
	s := ta.Summary("job-42", sec(9.25), func(string) float64 { return 1.5 })

	dir := t.TempDir()
	if err := WriteSummary(dir, s); err != nil {
		t.Fatal(err)
	}
	// Overwriting works and leaves no temporary files.
	if err := WriteSummary(dir, s); err != nil {
		t.Fatal(err)
	}
	onlyFinalFiles(t, dir, SummaryFile)
	path := filepath.Join(dir, SummaryFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"\n  \"job_id\": \"job-42\"", `"makespan_s": 9.25`, `"unique_urls": 1`,
		`"by_status": {`, `"throttled_share": 0.5`, `"p50": 12.3`, `"learned_rate": 1.5`,
		`"achieved_rate": 0.5`, `"p95_ms": 12.3`, `"first": "2025-03-01T12:00:01Z"`,
		`"timeline": [`, `"bucket_s": 1`} {
		if !strings.Contains(string(raw), k) {
			t.Errorf("summary.json lacks %s:\n%s", k, raw)
		}
	}
	if n := strings.Count(string(raw), `"first"`); n != 1 {
		t.Errorf("summary.json has %d \"first\" keys, want 1 (omitted for b.com)", n)
	}
	if len(s.Timeline) != 1 {
		t.Errorf("Timeline = %+v, want one domain", s.Timeline)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("summary.json stat = %v, %v; want mode 0644", fi, err)
	}
	back, err := ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("round trip mismatch\n got: %+v\nwant: %+v", back, s)
	}
}

func TestReadSummaryWithoutTimeline(t *testing.T) {
	// Summaries written before Summary.Timeline existed still read.
	path := filepath.Join(t.TempDir(), SummaryFile)
	if err := os.WriteFile(path, []byte(`{"job_id":"old","total":1,"domains":[{"domain":"a.com","urls":1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.JobID != "old" || s.Timeline != nil || len(s.Domains) != 1 {
		t.Errorf("ReadSummary = %+v, want job old, one domain, no timeline", s)
	}
	data, err := json.Marshal(Summary{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "timeline") {
		t.Errorf("empty timeline not omitted: %s", data)
	}
}

func TestWriteSummaryErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		dir     string
		s       Summary
		wantErr string
	}{
		{"empty dir", "", Summary{}, "empty directory name"},
		{"missing dir", filepath.Join(dir, "nope"), Summary{}, "nope"},
		{"NaN", dir, Summary{ThrottledShare: math.NaN()}, "encode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteSummary(tc.dir, tc.s)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("WriteSummary error = %v, want containing %q", err, tc.wantErr)
			}
		})
	}
	onlyFinalFiles(t, dir) // nothing left behind
	if _, err := ReadSummary(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("ReadSummary of a missing file succeeded")
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSummary(bad); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("ReadSummary(bad) = %v, want error naming the file", err)
	}
}
