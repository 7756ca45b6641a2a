package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/urlcheck/urlcheck/pkg/diff"
	"github.com/urlcheck/urlcheck/pkg/results"
)

// writeScanDir writes a hand-made scan (results.jsonl, results.csv and
// summary.json) to dir.
func writeScanDir(t *testing.T, dir, jobID string, rs []results.Result) {
	t.Helper()
	w, err := results.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	broken := 0
	for _, r := range rs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		if results.Broken(r.Class) {
			broken++
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteSummary(dir, results.Summary{JobID: jobID, Total: len(rs), Broken: broken}); err != nil {
		t.Fatal(err)
	}
}

func scanResult(line int, u, domain, class string, status int, at time.Time) results.Result {
	return results.Result{Line: line, URL: u, Domain: domain, Class: class, Status: status, LatencyMS: 10, Attempts: 1, CheckedAt: at}
}

func TestDiffCommand(t *testing.T) {
	root := t.TempDir()
	t1 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	t2 := t1.Add(7 * 24 * time.Hour)
	a, b, c := "https://a.example/", "https://b.example/", "https://c.example/"
	oldDir, sameDir, newDir := filepath.Join(root, "old"), filepath.Join(root, "same"), filepath.Join(root, "new")
	writeScanDir(t, oldDir, "old", []results.Result{
		scanResult(1, a, "a.example", results.ClassOK, 200, t1),
		scanResult(2, b, "b.example", results.ClassClientError, 404, t1),
	})
	writeScanDir(t, sameDir, "same", []results.Result{
		scanResult(1, a, "a.example", results.ClassOK, 200, t2),
		scanResult(2, b, "b.example", results.ClassClientError, 404, t2),
		scanResult(3, "not a url", "", results.ClassInvalid, 0, t2),
	})
	writeScanDir(t, newDir, "new", []results.Result{
		scanResult(1, a, "a.example", results.ClassServerError, 500, t2),
		scanResult(2, b, "b.example", results.ClassClientError, 404, t2),
		scanResult(3, c, "c.example", results.ClassOK, 200, t2),
	})

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"no changes", []string{"diff", oldDir, sameDir}, 0, []string{"no changes; 1 still broken", "**Still broken (1)**"}, ""},
		{"changes", []string{"diff", oldDir, newDir}, 1, []string{"1 newly broken, 1 added; 1 still broken",
			"**Newly broken (1)**\n- `https://a.example/` line 1: ok 200 → server_error 500\n", "**Added (1)**"}, ""},
		{"file paths", []string{"diff", filepath.Join(oldDir, results.SummaryFile), filepath.Join(newDir, results.JSONLFile)}, 1,
			[]string{"1 newly broken"}, ""},
		{"-max 0", []string{"diff", "-max", "0", oldDir, newDir}, 1, []string{"1 newly broken"}, ""},
		{"-json", []string{"diff", "-json", oldDir, newDir}, 1, []string{`"newly_broken": [`, `"url": "https://a.example/"`}, ""},
		{"one argument", []string{"diff", oldDir}, 2, nil, "two scans"},
		{"bad flag", []string{"diff", "-nope", oldDir, newDir}, 2, nil, "-nope"},
		{"bad latency factor", []string{"diff", "-latency-factor", "0", oldDir, newDir}, 2, nil, "-latency-factor"},
		{"missing scan", []string{"diff", oldDir, filepath.Join(root, "nope")}, 2, nil, filepath.Join(root, "nope")},
		{"help diff", []string{"help", "diff"}, 0, []string{"-json", "OLD NEW"}, ""},
		{"help lists diff", []string{"help"}, 0, []string{"urlcheck diff"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout.String(), stderr.String())
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
				}
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, stderr.String())
			}
			if tc.name == "-max 0" && strings.Contains(stdout.String(), "\n- ") {
				t.Errorf("-max 0 lists items:\n%s", stdout.String())
			}
			if tc.name == "-json" {
				var d diff.Diff
				if err := json.Unmarshal(stdout.Bytes(), &d); err != nil {
					t.Fatal(err)
				}
				if len(d.NewlyBroken) != 1 || len(d.Added) != 1 || len(d.StillBroken) != 1 || d.Old.JobID != "old" || d.New.JobID != "new" {
					t.Errorf("JSON diff %+v", d)
				}
				if !d.StillBroken[0].Since.Equal(t1) {
					t.Errorf("Since = %v, want the old scan's %v", d.StillBroken[0].Since, t1)
				}
			}
		})
	}

	// A diff.json in the old scan (from run -baseline) carries "broken since".
	earlier := t1.Add(-30 * 24 * time.Hour)
	prev := diff.Diff{StillBroken: []diff.Change{{URL: b, Lines: []int{2}, Domain: "b.example", Since: earlier}}}
	data, err := json.Marshal(prev)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(oldDir, diff.FileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"diff", "-json", oldDir, newDir}, nil, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var d diff.Diff
	if err := json.Unmarshal(stdout.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.StillBroken) != 1 || !d.StillBroken[0].Since.Equal(earlier) {
		t.Fatalf("still broken %+v, want since %v", d.StillBroken, earlier)
	}
}

func TestRunBaseline(t *testing.T) {
	var bBroken atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/b" && bBroken.Load() {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	list1, list2 := filepath.Join(dir, "1.txt"), filepath.Join(dir, "2.txt")
	if err := os.WriteFile(list1, []byte(srv.URL+"/a\n"+srv.URL+"/b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(list2, []byte(srv.URL+"/a\n"+srv.URL+"/b\n"+srv.URL+"/c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	common := []string{"-no-rate-cache", "-allow-private", "-rate", "50"}
	runCmd := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append(append([]string{"run"}, common...), args...), nil, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	// jobDir finds the single job directory under out.
	jobDir := func(t *testing.T, out string) string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(out, "*", results.SummaryFile))
		if err != nil || len(m) != 1 {
			t.Fatalf("job dirs under %s: %v %v", out, m, err)
		}
		return filepath.Dir(m[0])
	}

	out1 := filepath.Join(dir, "out1")
	if code, _, stderr := runCmd(t, "-quiet", "-out", out1, list1); code != 0 {
		t.Fatalf("first run exit %d: %s", code, stderr)
	}
	base := jobDir(t, out1)
	if _, err := os.Stat(filepath.Join(base, diff.FileName)); !os.IsNotExist(err) {
		t.Fatalf("diff.json without -baseline: %v", err)
	}

	bBroken.Store(true)
	tests := []struct {
		name     string
		args     []string
		code     int
		stderr   []string
		noStderr string
		diffFile bool
	}{
		{"baseline", []string{"-baseline", base}, 1,
			[]string{"Changes since " + base, "1 newly broken, 1 added; 0 still broken", "line 2: ok 200 → client_error 404"}, "", true},
		{"quiet baseline from summary.json", []string{"-quiet", "-baseline", filepath.Join(base, results.SummaryFile)}, 1, nil, "Changes since", true},
		{"missing baseline", []string{"-quiet", "-baseline", filepath.Join(dir, "nope")}, 2, []string{"-baseline", filepath.Join(dir, "nope")}, "", false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "run", string(rune('a'+i)))
			code, stdout, stderr := runCmd(t, append(append(tc.args, "-out", out), list2)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if tc.noStderr != "" && strings.Contains(stderr, tc.noStderr) {
				t.Errorf("stderr has %q:\n%s", tc.noStderr, stderr)
			}
			if !tc.diffFile {
				if m, _ := filepath.Glob(filepath.Join(out, "*")); len(m) != 0 {
					t.Errorf("a failed baseline still ran the job: %v", m)
				}
				return
			}
			d, err := diff.LoadDiff(filepath.Join(jobDir(t, out), diff.FileName))
			if err != nil {
				t.Fatal(err)
			}
			if len(d.NewlyBroken) != 1 || !strings.HasSuffix(d.NewlyBroken[0].URL, "/b") ||
				len(d.Added) != 1 || !strings.HasSuffix(d.Added[0].URL, "/c") || len(d.Fixed)+len(d.Removed)+len(d.StillBroken) != 0 {
				t.Errorf("diff.json %+v", d)
			}
			if d.Old.JobID != filepath.Base(base) || d.New.Total != 3 || d.New.Broken != 1 {
				t.Errorf("meta old %+v new %+v", d.Old, d.New)
			}
		})
	}
}
