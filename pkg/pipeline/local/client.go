package local

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/urlcheck/urlcheck/pkg/pipeline"
	"github.com/urlcheck/urlcheck/pkg/results"
)

// Submit posts a list to the pipeline's POST /jobs with the given content
// type and returns the job ID. It returns an error carrying the status and
// body of any answer other than 202 Accepted.
func (p *Pipeline) Submit(ctx context.Context, list []byte, contentType string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.APIURL+"/jobs", bytes.NewReader(list))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("POST /jobs: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("POST /jobs: %s: %s", resp.Status, b)
	}
	var out struct {
		JobID string `json:"job_id"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return "", fmt.Errorf("POST /jobs: %w", err)
	}
	return out.JobID, nil
}

// Drop puts a list into the drop folder (inbox/<name>) and returns the job
// ID the ingest will give it.
func (p *Pipeline) Drop(ctx context.Context, name string, list []byte) (string, error) {
	key := pipeline.InboxPrefix + name
	if err := p.Deps.Objects.Put(ctx, key, bytes.NewReader(list), "text/plain"); err != nil {
		return "", err
	}
	// The ETag of a single-part, unencrypted upload is the MD5 of the
	// content (S3 API reference, "Common Response Headers").
	sum := md5.Sum(list)
	id, _, _ := pipeline.JobForKey(key, hex.EncodeToString(sum[:]))
	return id, nil
}

// Wait polls the job's status every poll until it is final or ctx ends.
func (p *Pipeline) Wait(ctx context.Context, id string, poll time.Duration) (pipeline.JobStatus, error) {
	for {
		st, err := p.Deps.Status(ctx, id)
		if err == nil && st.State.Final() {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("job %s: %w (last state %s, %d/%d)", id, ctx.Err(), st.State, st.Done, st.Total)
		case <-time.After(poll):
		}
	}
}

// Results reads a done job's results.jsonl and summary.json from S3.
func (p *Pipeline) Results(ctx context.Context, id string) ([]results.Result, results.Summary, error) {
	var sum results.Summary
	rc, err := p.Deps.Objects.Get(ctx, pipeline.ResultsPrefix+id+"/"+results.SummaryFile)
	if err != nil {
		return nil, sum, err
	}
	err = json.NewDecoder(rc).Decode(&sum)
	rc.Close()
	if err != nil {
		return nil, sum, fmt.Errorf("summary of %s: %w", id, err)
	}
	rc, err = p.Deps.Objects.Get(ctx, pipeline.ResultsPrefix+id+"/"+results.JSONLFile)
	if err != nil {
		return nil, sum, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, sum, err
	}
	var rs []results.Result
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var r results.Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, sum, fmt.Errorf("results of %s, line %d: %w", id, i+1, err)
		}
		rs = append(rs, r)
	}
	return rs, sum, nil
}
