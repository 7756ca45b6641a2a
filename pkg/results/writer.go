package results

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// File names written by Writer inside its directory.
const (
	JSONLFile = "results.jsonl"
	CSVFile   = "results.csv"
)

// CSVHeader is the header row of results.csv, in column order. The redirects
// column joins Result.Redirects with " -> "; status is empty when 0 and
// checked_at is RFC 3339 with nanoseconds (empty for the zero time).
var CSVHeader = []string{
	"line", "url", "domain", "class", "status", "final_url", "redirects",
	"latency_ms", "attempts", "error", "checked_at",
}

// ErrClosed is returned by Writer.Write after Close.
var ErrClosed = errors.New("results: writer is closed")

// indexEntry locates one encoded result in the spool file. It is the only
// per-result state a Writer keeps in memory: 24 bytes.
type indexEntry struct {
	line    int64  // Result.Line
	off     int64  // byte offset of the record in the spool file
	jsonLen uint32 // length of the JSONL line (including '\n'), first in the record
	csvLen  uint32 // length of the CSV row that follows it
}

// Writer streams results to <dir>/results.jsonl and <dir>/results.csv. It
// is safe for concurrent use by multiple goroutines.
//
// Results may be written in any order. Write appends the encoded JSONL line
// and CSV row to a spool file (<dir>/.results-*.spool) and keeps in memory
// only a 24-byte index entry (line, offset, two lengths) per result, plus
// a 64 KiB write buffer. Close sorts that index by line and copies the
// records into the two final files in line order, reading one record at a
// time, so a job of n results holds about 24·n bytes (2.4 MB for 100,000
// results) plus the largest single record; the slice doubling while it
// grows may briefly need up to 2x that.
//
// The final files are written to temporary names and renamed into place by
// Close, so until Close returns neither exists (or an old copy remains).
// If a line number is written more than once (for example when a queue
// redelivers a message), only the first result written for it is kept,
// matching Tally.Add.
type Writer struct {
	dir string

	mu       sync.Mutex
	spool    *os.File
	buf      *bufio.Writer
	off      int64
	index    []indexEntry
	closed   bool
	err      error // first spool write error; sticky
	closeErr error // result of the first Close
}

// Create makes dir (and parents) if needed and returns a Writer that will
// produce dir/results.jsonl and dir/results.csv when closed. It returns an
// error if dir or the spool file cannot be created.
func Create(dir string) (*Writer, error) {
	if dir == "" {
		return nil, errors.New("results: create writer: empty directory name")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("results: create writer: %w", err)
	}
	spool, err := os.CreateTemp(dir, ".results-*.spool")
	if err != nil {
		return nil, fmt.Errorf("results: create writer: spool file: %w", err)
	}
	return &Writer{dir: dir, spool: spool, buf: bufio.NewWriterSize(spool, 64<<10)}, nil
}

// recordEncoder encodes a Result as a JSONL line followed by a CSV row into
// buf. Encoders are pooled because csv.Writer allocates a 4 KiB buffer.
type recordEncoder struct {
	buf bytes.Buffer
	je  *json.Encoder
	cw  *csv.Writer
}

func newRecordEncoder() *recordEncoder {
	e := &recordEncoder{}
	e.je = json.NewEncoder(&e.buf)
	e.je.SetEscapeHTML(false) // keep '&' in URLs readable
	e.cw = csv.NewWriter(&e.buf)
	return e
}

var encPool = sync.Pool{New: func() any { return newRecordEncoder() }}

// encodeRecord appends r's JSONL line and then its CSV row to b and returns
// the length of the JSONL line.
func encodeRecord(b *bytes.Buffer, r Result) (int, error) {
	e := encPool.Get().(*recordEncoder)
	defer encPool.Put(e)
	jl, err := e.encode(r)
	if err != nil {
		return 0, err
	}
	b.Write(e.buf.Bytes())
	return jl, nil
}

// Write records r. It returns an error if r is invalid (Line < 1, empty
// Class, non-finite LatencyMS), if the Writer is closed (ErrClosed) or if
// the spool file cannot be written; after a spool write error every later
// Write fails with the same error.
func (w *Writer) Write(r Result) error {
	if err := validate(r); err != nil {
		return fmt.Errorf("results: write line %d: %w", r.Line, err)
	}
	e := encPool.Get().(*recordEncoder)
	defer encPool.Put(e)
	jsonLen, err := e.encode(r)
	b := &e.buf
	if err != nil {
		return fmt.Errorf("results: write line %d: %w", r.Line, err)
	}
	csvLen := b.Len() - jsonLen
	if jsonLen > math.MaxUint32 || csvLen > math.MaxUint32 {
		return fmt.Errorf("results: write line %d: record of %d bytes is too large", r.Line, b.Len())
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if _, err := w.buf.Write(b.Bytes()); err != nil {
		w.err = fmt.Errorf("results: write spool %s: %w", w.spool.Name(), err)
		return w.err
	}
	w.index = append(w.index, indexEntry{
		line: int64(r.Line), off: w.off, jsonLen: uint32(jsonLen), csvLen: uint32(csvLen),
	})
	w.off += int64(b.Len())
	return nil
}

// validate rejects results that cannot be written faithfully.
func validate(r Result) error {
	switch {
	case r.Line < 1:
		return fmt.Errorf("line number %d is not positive", r.Line)
	case r.Class == "":
		return errors.New("empty class")
	case math.IsNaN(r.LatencyMS) || math.IsInf(r.LatencyMS, 0):
		return fmt.Errorf("latency_ms %v is not finite", r.LatencyMS)
	}
	return nil
}

// encode replaces e.buf's contents with r's JSONL line followed by its CSV
// row and returns the length of the JSONL line.
func (e *recordEncoder) encode(r Result) (int, error) {
	e.buf.Reset()
	if err := e.je.Encode(r); err != nil {
		return 0, fmt.Errorf("encode json: %w", err)
	}
	jsonLen := e.buf.Len()
	if err := e.cw.Write(csvRow(r)); err != nil {
		return 0, fmt.Errorf("encode csv: %w", err)
	}
	e.cw.Flush()
	if err := e.cw.Error(); err != nil {
		return 0, fmt.Errorf("encode csv: %w", err)
	}
	return jsonLen, nil
}

// csvRow renders r in CSVHeader column order.
func csvRow(r Result) []string {
	status, checked := "", ""
	if r.Status != 0 {
		status = strconv.Itoa(r.Status)
	}
	if !r.CheckedAt.IsZero() {
		checked = r.CheckedAt.Format(time.RFC3339Nano)
	}
	return []string{
		strconv.Itoa(r.Line), r.URL, r.Domain, r.Class, status, r.FinalURL,
		strings.Join(r.Redirects, " -> "),
		strconv.FormatFloat(r.LatencyMS, 'f', -1, 64),
		strconv.Itoa(r.Attempts), r.Error, checked,
	}
}

// Close sorts everything written so far by line and writes
// <dir>/results.jsonl and <dir>/results.csv (with header row), each via a
// temporary file renamed into place, then removes the spool file. Later
// calls return the first call's result. On error the spool file is left in
// place (its name is in the error) and the final files are not replaced.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		w.closeErr = w.close()
	}
	return w.closeErr
}

// close does the work of Close; w.mu is held.
func (w *Writer) close() error {
	if w.err != nil {
		w.spool.Close()
		return w.err
	}
	if err := w.buf.Flush(); err != nil {
		w.spool.Close()
		return fmt.Errorf("results: close: flush spool %s: %w", w.spool.Name(), err)
	}
	if err := w.rewrite(); err != nil {
		w.spool.Close()
		return fmt.Errorf("results: close (records kept in %s): %w", w.spool.Name(), err)
	}
	w.index = nil
	name := w.spool.Name()
	if err := w.spool.Close(); err != nil {
		return fmt.Errorf("results: close spool: %w", err)
	}
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("results: remove spool: %w", err)
	}
	return nil
}

// rewrite copies the spooled records into the final files in line order.
func (w *Writer) rewrite() error {
	// Stable, so that among duplicates of a line the first written comes first.
	slices.SortStableFunc(w.index, func(a, b indexEntry) int {
		switch {
		case a.line < b.line:
			return -1
		case a.line > b.line:
			return 1
		}
		return 0
	})

	jf, err := newAtomicFile(w.dir, JSONLFile)
	if err != nil {
		return err
	}
	defer jf.abort()
	cf, err := newAtomicFile(w.dir, CSVFile)
	if err != nil {
		return err
	}
	defer cf.abort()

	hw := csv.NewWriter(cf.w)
	if err := hw.Write(CSVHeader); err != nil {
		return fmt.Errorf("write csv header: %w", err)
	}
	hw.Flush()
	if err := hw.Error(); err != nil {
		return fmt.Errorf("write csv header: %w", err)
	}

	var rec []byte
	prev := int64(0) // lines are >= 1
	for _, e := range w.index {
		if e.line == prev {
			continue // duplicate: keep the first written
		}
		prev = e.line
		n := int(e.jsonLen) + int(e.csvLen)
		if cap(rec) < n {
			rec = make([]byte, n)
		}
		rec = rec[:n]
		if _, err := w.spool.ReadAt(rec, e.off); err != nil {
			return fmt.Errorf("read spool at offset %d: %w", e.off, err)
		}
		if _, err := jf.w.Write(rec[:e.jsonLen]); err != nil {
			return fmt.Errorf("write %s: %w", JSONLFile, err)
		}
		if _, err := cf.w.Write(rec[e.jsonLen:]); err != nil {
			return fmt.Errorf("write %s: %w", CSVFile, err)
		}
	}
	// Finish both before renaming either, so that a failure leaves neither
	// final file replaced.
	if err := jf.finish(); err != nil {
		return err
	}
	if err := cf.finish(); err != nil {
		return err
	}
	if err := jf.rename(); err != nil {
		return err
	}
	return cf.rename()
}

// atomicFile is a buffered temporary file in dir that commit renames to
// dir/name.
type atomicFile struct {
	f    *os.File
	w    *bufio.Writer
	path string
	done bool
}

func newAtomicFile(dir, name string) (*atomicFile, error) {
	f, err := os.CreateTemp(dir, "."+name+"-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("create temporary %s: %w", name, err)
	}
	return &atomicFile{f: f, w: bufio.NewWriterSize(f, 64<<10), path: filepath.Join(dir, name)}, nil
}

// finish flushes, syncs and closes the temporary file, making it readable
// by all (mode 0644).
func (a *atomicFile) finish() error {
	if err := a.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	if err := a.f.Chmod(0o644); err != nil {
		return fmt.Errorf("chmod %s: %w", a.f.Name(), err)
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", a.f.Name(), err)
	}
	if err := a.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", a.f.Name(), err)
	}
	return nil
}

// rename moves the finished file into place.
func (a *atomicFile) rename() error {
	if err := os.Rename(a.f.Name(), a.path); err != nil {
		return fmt.Errorf("rename into %s: %w", a.path, err)
	}
	a.done = true
	return nil
}

// abort removes the temporary file unless rename succeeded.
func (a *atomicFile) abort() {
	if a.done {
		return
	}
	a.f.Close()
	os.Remove(a.f.Name())
}
