package results

import (
	"bytes"
	"encoding/csv"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// mkResult returns a deterministic, varied result for line i, including
// text that needs CSV quoting and JSON escaping.
func mkResult(i int) Result {
	r := Result{
		Line:      i,
		URL:       "https://example" + strconv.Itoa(i%7) + ".com/p?id=" + strconv.Itoa(i) + "&x=<y>",
		Domain:    "example" + strconv.Itoa(i%7) + ".com",
		Class:     Classes[i%len(Classes)],
		LatencyMS: float64(i%1000) + 0.25,
		Attempts:  1 + i%3,
		CheckedAt: time.Date(2025, 3, 1, 12, 0, 0, i*1000+7, time.UTC),
	}
	switch i % 5 {
	case 0:
		r.Status = 200
	case 1:
		r.Status = 301
		r.FinalURL = "https://example.com/final"
		r.Redirects = []string{"301 https://example.com/a", "302 https://example.com/final"}
	case 2:
		r.Error = "dial tcp: \"quoted\", comma,\nnewline ünïcode"
	case 3:
		r.Status = 404
	case 4:
		r.URL = "=HYPERLINK(\"x\")\t raw line " + strconv.Itoa(i)
		r.Domain = ""
		r.Class = ClassInvalid
		r.Attempts = 0
		r.LatencyMS = 0
		r.CheckedAt = time.Time{}
	}
	return r
}

// sameResult compares results, with times compared by instant.
func sameResult(a, b Result) bool {
	if !a.CheckedAt.Equal(b.CheckedAt) {
		return false
	}
	a.CheckedAt, b.CheckedAt = time.Time{}, time.Time{}
	if len(a.Redirects) == 0 && len(b.Redirects) == 0 {
		a.Redirects, b.Redirects = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

// wantRow is the CSV row for r, built independently of csvRow.
func wantRow(r Result) []string {
	status := ""
	if r.Status != 0 {
		status = strconv.Itoa(r.Status)
	}
	checked := ""
	if !r.CheckedAt.IsZero() {
		checked = r.CheckedAt.UTC().Format("2006-01-02T15:04:05.999999999Z07:00")
	}
	return []string{strconv.Itoa(r.Line), r.URL, r.Domain, r.Class, status, r.FinalURL,
		strings.Join(r.Redirects, " -> "), strconv.FormatFloat(r.LatencyMS, 'f', -1, 64),
		strconv.Itoa(r.Attempts), r.Error, checked}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return rows
}

// onlyFinalFiles fails unless dir holds exactly the named files (no spool
// or temporary file left behind).
func onlyFinalFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if !reflect.DeepEqual(got, names) {
		t.Errorf("files in %s = %v, want %v", dir, got, names)
	}
}

func TestWriterConcurrentOutOfOrder(t *testing.T) {
	for _, n := range []int{0, 1, 2, 37, 3000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out") // Create makes it
			w, err := Create(dir)
			if err != nil {
				t.Fatal(err)
			}
			lines := rand.New(rand.NewPCG(1, uint64(n))).Perm(n)
			const workers = 8
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for k := range workers {
				wg.Go(func() {
					for j := k; j < n; j += workers {
						if err := w.Write(mkResult(lines[j] + 1)); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			onlyFinalFiles(t, dir, CSVFile, JSONLFile)

			got, err := ReadJSONL(filepath.Join(dir, JSONLFile))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("jsonl has %d results, want %d", len(got), n)
			}
			for i, r := range got {
				if want := mkResult(i + 1); !sameResult(r, want) {
					t.Fatalf("jsonl result %d = %+v, want %+v", i, r, want)
				}
			}

			rows := readCSV(t, filepath.Join(dir, CSVFile))
			if len(rows) != n+1 {
				t.Fatalf("csv has %d rows, want header + %d", len(rows), n)
			}
			if !reflect.DeepEqual(rows[0], CSVHeader) {
				t.Errorf("csv header = %v, want %v", rows[0], CSVHeader)
			}
			for i, row := range rows[1:] {
				if want := wantRow(mkResult(i + 1)); !reflect.DeepEqual(row, want) {
					t.Fatalf("csv row %d = %q, want %q", i+1, row, want)
				}
			}
		})
	}
}

func TestCSVHeaderColumns(t *testing.T) {
	want := "line,url,domain,class,status,final_url,redirects,latency_ms,attempts,error,checked_at"
	if got := strings.Join(CSVHeader, ","); got != want {
		t.Errorf("CSVHeader = %s, want %s", got, want)
	}
}

func TestWriterJSONFieldNames(t *testing.T) {
	var b bytes.Buffer
	r := mkResult(1) // has status, final_url, redirects
	r.Error = "boom"
	jl, err := encodeRecord(&b, r)
	if err != nil {
		t.Fatal(err)
	}
	line := b.String()[:jl]
	for _, k := range []string{`"line":1,`, `"url":`, `"domain":`, `"class":`, `"status":301`, `"final_url":`,
		`"redirects":["301 https://example.com/a"`, `"latency_ms":`, `"attempts":`, `"error":"boom"`, `"checked_at":"2025-`, `&x=<y>`} {
		if !strings.Contains(line, k) {
			t.Errorf("json line %s lacks %s", line, k)
		}
	}
	b.Reset()
	r = Result{Line: 2, URL: "u", Class: ClassTimeout}
	jl, _ = encodeRecord(&b, r)
	for _, k := range []string{"status", "final_url", "redirects", "error"} {
		if strings.Contains(b.String()[:jl], `"`+k+`"`) {
			t.Errorf("json line %s should omit empty %s", b.String()[:jl], k)
		}
	}
}

func TestWriterDuplicateLineKeepsFirst(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Result{
		{Line: 2, URL: "b", Class: ClassOK},
		{Line: 1, URL: "first", Class: ClassTimeout},
		{Line: 1, URL: "second", Class: ClassOK},
		{Line: 3, URL: "c", Class: ClassOK},
	} {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSONL(filepath.Join(dir, JSONLFile))
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, r := range got {
		urls = append(urls, r.URL)
	}
	if want := []string{"first", "b", "c"}; !reflect.DeepEqual(urls, want) {
		t.Errorf("urls = %v, want %v", urls, want)
	}
	if rows := readCSV(t, filepath.Join(dir, CSVFile)); len(rows) != 4 || rows[1][1] != "first" {
		t.Errorf("csv rows = %q, want header + 3 with line 1 = first", rows)
	}
}

func TestWriterRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		r       Result
		wantErr string
	}{
		{"zero line", Result{Line: 0, Class: ClassOK}, "line number 0 is not positive"},
		{"negative line", Result{Line: -3, Class: ClassOK}, "line number -3 is not positive"},
		{"empty class", Result{Line: 1}, "empty class"},
		{"NaN latency", Result{Line: 1, Class: ClassOK, LatencyMS: math.NaN()}, "latency_ms NaN is not finite"},
		{"Inf latency", Result{Line: 1, Class: ClassOK, LatencyMS: math.Inf(1)}, "latency_ms +Inf is not finite"},
	}
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := w.Write(tc.r)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Write(%+v) error = %v, want containing %q", tc.r, err, tc.wantErr)
			}
		})
	}
	// A rejected write leaves the writer usable and writes nothing.
	if err := w.Write(Result{Line: 9, URL: "ok", Class: ClassOK}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSONL(filepath.Join(dir, JSONLFile))
	if err != nil || len(got) != 1 || got[0].Line != 9 {
		t.Errorf("ReadJSONL = %+v, %v; want just line 9", got, err)
	}
}

func TestWriterClosed(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v, want nil (the first result)", err)
	}
	if err := w.Write(Result{Line: 1, Class: ClassOK}); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	if rows := readCSV(t, filepath.Join(dir, CSVFile)); len(rows) != 1 {
		t.Errorf("empty job csv = %q, want only the header", rows)
	}
	if fi, err := os.Stat(filepath.Join(dir, JSONLFile)); err != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o644 {
		t.Errorf("empty job jsonl: %v, %v; want empty file with mode 0644", fi, err)
	}
}

func TestCreateErrors(t *testing.T) {
	if _, err := Create(""); err == nil || !strings.Contains(err.Error(), "empty directory") {
		t.Errorf("Create(\"\") = %v, want empty directory error", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(filepath.Join(file, "sub")); err == nil {
		t.Error("Create under a regular file succeeded, want error")
	}
}

func TestIndexEntryIs24Bytes(t *testing.T) {
	if n := unsafe.Sizeof(indexEntry{}); n != 24 {
		t.Errorf("indexEntry is %d bytes, want 24 (documented memory bound)", n)
	}
}

// TestWriterMemory100k checks the documented bound: 100,000 results keep
// the live heap far below 50 MB while writing and the output is sorted.
func TestWriterMemory100k(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,000 results")
	}
	const n = 100_000
	dir := t.TempDir()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Descending order: the worst case for the final sort.
	for i := n; i >= 1; i-- {
		if err := w.Write(mkResult(i)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 10<<20 {
		t.Errorf("live heap grew %d bytes for %d results, want < 10 MiB (index is 24 B/result)", grew, n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.ReuseRecord = true
	if _, err := cr.Read(); err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= n; want++ {
		rec, err := cr.Read()
		if err != nil {
			t.Fatalf("csv row %d: %v", want, err)
		}
		if rec[0] != strconv.Itoa(want) {
			t.Fatalf("csv row %d has line %s", want, rec[0])
		}
	}
}

func BenchmarkWriter100k(b *testing.B) {
	const n = 100_000
	rs := make([]Result, n)
	for i, p := range rand.New(rand.NewPCG(7, 7)).Perm(n) {
		rs[i] = mkResult(p + 1)
	}
	base := b.TempDir()
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		k++
		w, err := Create(filepath.Join(base, strconv.Itoa(k)))
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rs {
			if err := w.Write(r); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/result")
}
