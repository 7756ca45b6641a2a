package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urlcheck/urlcheck/pkg/results"
)

// reportScan writes a result directory (results.jsonl, results.csv,
// summary.json with a timeline) for the report command tests.
func reportScan(t *testing.T, dir, jobID string, rs []results.Result) {
	t.Helper()
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	w, err := results.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	ta := results.NewTally(start)
	for i, r := range rs {
		r.CheckedAt = start.Add(time.Duration(i) * time.Second)
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		ta.Add(r)
		ta.RequestAt(r.Domain, r.Status, false, r.CheckedAt)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteSummary(dir, ta.Summary(jobID, start.Add(time.Minute), nil)); err != nil {
		t.Fatal(err)
	}
}

func TestReportCommand(t *testing.T) {
	base := t.TempDir()
	oldDir, newDir := filepath.Join(base, "old"), filepath.Join(base, "new")
	for _, d := range []string{oldDir, newDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	reportScan(t, oldDir, "job-old", []results.Result{
		{Line: 1, URL: "https://a.example/", Domain: "a.example", Class: results.ClassOK, Status: 200},
		{Line: 2, URL: "https://b.example/x", Domain: "b.example", Class: results.ClassOK, Status: 200},
	})
	reportScan(t, newDir, "job-new", []results.Result{
		{Line: 1, URL: "https://a.example/", Domain: "a.example", Class: results.ClassOK, Status: 200},
		{Line: 2, URL: "https://b.example/x", Domain: "b.example", Class: results.ClassClientError, Status: 404},
	})
	custom := filepath.Join(base, "custom.html")
	tests := []struct {
		name    string
		args    []string
		code    int
		file    string   // report file expected
		want    []string // in the report
		notWant []string
		stderr  string
	}{
		{"no dir", []string{"report"}, 2, "", nil, nil, "one result DIR"},
		{"missing dir", []string{"report", filepath.Join(base, "nope")}, 2, "", nil, nil, "nope"},
		{"missing baseline", []string{"report", "-baseline", filepath.Join(base, "nope"), newDir}, 2, "", nil, nil, "baseline"},
		{"default output", []string{"report", newDir}, 0, filepath.Join(newDir, "report.html"),
			[]string{"job job-new", `id="broken-table"`, "https://b.example/x", `<svg id="timeline-chart"`}, []string{`id="diff"`}, ""},
		{"summary path, -o and -baseline", []string{"report", "-o", custom, "-baseline", oldDir, filepath.Join(newDir, "summary.json")}, 0, custom,
			[]string{`id="diff"`, `id="diff-newly-broken"`, "job-old"}, nil, ""},
		{"help report", []string{"help", "report"}, 0, "", nil, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
				t.Fatalf("exit %d, want %d; stderr %q, want it to contain %q", code, tc.code, stderr.String(), tc.stderr)
			}
			if tc.file == "" {
				return
			}
			if got := strings.TrimSpace(stdout.String()); got != tc.file {
				t.Errorf("stdout %q, want the report path %q", got, tc.file)
			}
			data, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(data), w) {
					t.Errorf("report lacks %q", w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(string(data), w) {
					t.Errorf("report contains %q", w)
				}
			}
		})
	}
	if matches, _ := filepath.Glob(filepath.Join(newDir, ".report-*")); len(matches) != 0 {
		t.Errorf("temporary files left behind: %v", matches)
	}
}
