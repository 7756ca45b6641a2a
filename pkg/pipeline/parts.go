package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/urlcheck/urlcheck/pkg/results"
)

// A part is one object under results/<job>/parts/ holding what one
// invocation found for one job: JSON lines, each one record. Parts are
// written before the lines they hold are counted (package jobs), so every
// counted line has a result in some part; a line may appear in several
// parts (a message delivered twice) and the summary keeps the first.
type record struct {
	Result  *results.Result `json:"r,omitempty"`
	Request *request        `json:"q,omitempty"`
	Retries int             `json:"n,omitempty"`
}

// request is one HTTP request sent, for the summary's per-domain figures.
type request struct {
	Domain    string `json:"d"`
	Status    int    `json:"s,omitempty"`
	Throttled bool   `json:"t,omitempty"`
	At        int64  `json:"at"` // unix milliseconds
}

// part collects the records of one job within one invocation.
type part struct {
	results  []results.Result
	requests []request
	retries  int
}

func (p *part) empty() bool {
	return len(p.results) == 0 && len(p.requests) == 0 && p.retries == 0
}

func (p *part) add(o *part) {
	p.results = append(p.results, o.results...)
	p.requests = append(p.requests, o.requests...)
	p.retries += o.retries
}

func (p *part) encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range p.results {
		if err := enc.Encode(record{Result: &p.results[i]}); err != nil {
			return nil, fmt.Errorf("encoding the result of line %d: %w", p.results[i].Line, err)
		}
	}
	for i := range p.requests {
		if err := enc.Encode(record{Request: &p.requests[i]}); err != nil {
			return nil, fmt.Errorf("encoding a request record: %w", err)
		}
	}
	if p.retries > 0 {
		if err := enc.Encode(record{Retries: p.retries}); err != nil {
			return nil, fmt.Errorf("encoding the retry count: %w", err)
		}
	}
	return b.Bytes(), nil
}

// decodePart calls fn for each record of a part; it returns an error naming
// the line of a record that does not decode.
func decodePart(r io.Reader, fn func(record) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var rec record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return sc.Err()
}

// partsPrefix is where the parts of job live.
func partsPrefix(job string) string { return ResultsPrefix + job + "/parts/" }

// resultKey is the key of one of job's final files (results.jsonl, ...).
func resultKey(job, name string) string { return ResultsPrefix + job + "/" + name }

// newPartKey returns a fresh part key: time-ordered, so that the summary
// keeps the earliest result of a line, and unique.
func newPartKey(job string, now time.Time) string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%s%019d-%s.jsonl", partsPrefix(job), now.UnixNano(), hex.EncodeToString(r[:]))
}

// putPart writes p as a new part of job.
func (d *Deps) putPart(ctx context.Context, job, key string, p *part) error {
	body, err := p.encode()
	if err != nil {
		return err
	}
	if err := d.Objects.Put(ctx, key, bytes.NewReader(body), "application/x-ndjson"); err != nil {
		return fmt.Errorf("writing results part of job %s: %w", job, err)
	}
	return nil
}
