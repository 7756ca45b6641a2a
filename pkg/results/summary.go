package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// SummaryFile is the name WriteSummary gives the summary inside its
// directory.
const SummaryFile = "summary.json"

// DomainSummary describes one registrable domain (eTLD+1) of a job.
type DomainSummary struct {
	// Domain is the registrable domain.
	Domain string `json:"domain"`
	// URLs is the number of distinct URLs planned for the domain
	// (Tally.SetDomain), or else checked for it.
	URLs int `json:"urls"`
	// Requests is the number of HTTP requests sent, retries included.
	Requests int `json:"requests"`
	// Throttled is how many of those requests the server throttled.
	Throttled int `json:"throttled"`
	// LearnedRate is the domain's learned request rate at the end of the
	// job, in requests/s.
	LearnedRate float64 `json:"learned_rate"`
	// AchievedRate is the rate actually achieved, in requests/s, between
	// the domain's first and last request (see AchievedRate).
	AchievedRate float64 `json:"achieved_rate"`
	// P95MS is the nearest-rank 95th percentile latency of the domain's
	// checked lines, in milliseconds.
	P95MS float64 `json:"p95_ms"`
	// First and Last are the times of the domain's first and last request;
	// zero (and omitted from JSON) when no request was sent.
	First time.Time `json:"first,omitzero"`
	Last  time.Time `json:"last,omitzero"`
}

// LatencySummary holds nearest-rank latency percentiles in milliseconds.
type LatencySummary struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// Summary is the job summary written to summary.json.
type Summary struct {
	// JobID identifies the job.
	JobID string `json:"job_id"`
	// Started and Finished bound the job.
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// MakespanS is Finished - Started in seconds (never negative).
	MakespanS float64 `json:"makespan_s"`
	// Total is the number of input lines with a result.
	Total int `json:"total"`
	// Unique is the number of distinct URLs among non-invalid lines.
	Unique int `json:"unique_urls"`
	// Broken is the number of lines whose class is broken (see Broken).
	Broken int `json:"broken"`
	// ByClass counts lines per class; every class in Classes is present,
	// with 0 if none occurred, plus any unknown class that did occur.
	ByClass map[string]int `json:"by_class"`
	// ByStatus counts lines per final HTTP status code, keyed by its
	// decimal text ("200"); lines without a response are not counted.
	ByStatus map[string]int `json:"by_status"`
	// Requests, Throttled and Retries count HTTP requests sent, those
	// throttled, and retries scheduled.
	Requests  int `json:"requests"`
	Throttled int `json:"throttled"`
	Retries   int `json:"retries"`
	// ThrottledShare is Throttled/Requests, 0 when no request was sent.
	ThrottledShare float64 `json:"throttled_share"`
	// LatencyMS holds percentiles over the latencies of non-invalid lines.
	LatencyMS LatencySummary `json:"latency_ms"`
	// Domains is sorted by URLs descending, then by domain name.
	Domains []DomainSummary `json:"domains"`
	// Timeline holds the requests over time of the TimelineDomains domains
	// with the most requests, sorted by requests descending, then by domain
	// name; empty (and omitted from JSON) when no request was sent, and in
	// summaries written before it existed.
	Timeline []DomainTimeline `json:"timeline,omitempty"`
}

// DomainTimeline is one domain's requests over the job, counted in
// consecutive buckets of BucketSeconds seconds: bucket i covers
// [Start + i*BucketSeconds, Start + (i+1)*BucketSeconds), and the last
// bucket also takes anything at or after its end. Tally.Summary gives every
// timeline of a summary the same Start, BucketSeconds and length, at most
// TimelineMaxBuckets buckets.
type DomainTimeline struct {
	// Domain is the registrable domain.
	Domain string `json:"domain"`
	// Start is the start of the first bucket.
	Start time.Time `json:"start"`
	// BucketSeconds is the width of each bucket in seconds (a whole number
	// >= 1 from Tally.Summary).
	BucketSeconds float64 `json:"bucket_s"`
	// Requests counts the requests sent in each bucket, retries included;
	// Requests[i]/BucketSeconds is the request rate in requests/s.
	Requests []int `json:"requests"`
	// Throttled counts, per bucket, the requests the server throttled; it
	// has the same length as Requests.
	Throttled []int `json:"throttled"`
	// LearnedRate is the domain's learned rate at the end of the job in
	// requests/s, as in DomainSummary.
	LearnedRate float64 `json:"learned_rate"`
}

// WriteSummary writes s as indented JSON to <dir>/summary.json atomically:
// to a temporary file in dir that is synced and then renamed over the
// target, so readers see the old file or the complete new one. It returns
// an error if s cannot be encoded or the file cannot be written.
func WriteSummary(dir string, s Summary) error {
	if dir == "" {
		return errors.New("results: write summary: empty directory name")
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("results: write summary: encode: %w", err)
	}
	data = append(data, '\n')
	a, err := newAtomicFile(dir, SummaryFile)
	if err != nil {
		return fmt.Errorf("results: write summary: %w", err)
	}
	defer a.abort()
	if _, err := a.w.Write(data); err != nil {
		return fmt.Errorf("results: write summary: %w", err)
	}
	if err := a.finish(); err != nil {
		return fmt.Errorf("results: write summary: %w", err)
	}
	if err := a.rename(); err != nil {
		return fmt.Errorf("results: write summary: %w", err)
	}
	return nil
}

// ReadSummary reads a summary.json written by WriteSummary. It returns an
// error naming path if the file cannot be read or decoded.
func ReadSummary(path string) (Summary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Summary{}, fmt.Errorf("results: read summary: %w", err)
	}
	var s Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return Summary{}, fmt.Errorf("results: read summary %s: %w", filepath.Clean(path), err)
	}
	return s, nil
}
