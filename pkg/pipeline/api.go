package pipeline

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/urlcheck/urlcheck/pkg/jobs"
	"github.com/urlcheck/urlcheck/pkg/report"
	"github.com/urlcheck/urlcheck/pkg/results"
	"github.com/urlcheck/urlcheck/pkg/urllist"
)

// API error codes, the "code" of an error response
// {"error":{"code","message","line"}} (see infra/openapi.yaml).
const (
	CodeEmptyBody      = "empty_body"             // 400
	CodeInvalidJSON    = "invalid_json"           // 400, with the line
	CodeBinaryBody     = "binary_body"            // 400
	CodeNoValidURLs    = "no_valid_urls"          // 400, with the first bad line
	CodeInvalidJobID   = "invalid_job_id"         // 400
	CodeTooLarge       = "body_too_large"         // 413
	CodeMediaType      = "unsupported_media_type" // 415
	CodeMissingAPIKey  = "missing_api_key"        // 401
	CodeInvalidAPIKey  = "invalid_api_key"        // 403
	CodeJobNotFound    = "job_not_found"          // 404
	CodeRouteNotFound  = "route_not_found"        // 404 (the API front answers unknown routes first on AWS)
	CodeJobNotDone     = "job_not_done"           // 409
	CodeJobFinished    = "job_finished"           // 409
	CodeUnavailable    = "unavailable"            // 503, retry later
	maxRejectedListed  = 100
	presignTTL         = time.Hour
	resultsContentType = "application/json"
)

// apiError is an error answer.
type apiError struct {
	status int
	Code   string     `json:"code"`
	Msg    string     `json:"message"`
	Line   int        `json:"line,omitempty"`
	state  jobs.State // job_not_done: the job's state, answered next to the error
}

func (e *apiError) Error() string { return e.Code + ": " + e.Msg }

func errf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// HandleAPI is the HTTP API handler (API Gateway HTTP API, payload format
// 2.0). Routes: POST /jobs, POST /uploads, GET /jobs/{id},
// GET /jobs/{id}/results, DELETE /jobs/{id} (Routes; infra/openapi.yaml
// documents them). Errors are JSON {"error":{"code","message","line"}} with
// the status codes of the Code* constants. The returned error is always nil:
// failures become 5xx answers.
func (d *Deps) HandleAPI(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	status, body := d.route(ctx, req)
	b, err := json.Marshal(body)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"encoding the answer failed"}}`)
	}
	resp := events.APIGatewayV2HTTPResponse{StatusCode: status, Body: string(b),
		Headers: map[string]string{"content-type": "application/json"}}
	if status == http.StatusServiceUnavailable {
		resp.Headers["retry-after"] = "5"
	}
	return resp, nil
}

func (d *Deps) route(ctx context.Context, req events.APIGatewayV2HTTPRequest) (int, any) {
	if err := d.authorize(req); err != nil {
		return errBody(err)
	}
	id := req.PathParameters["id"]
	var (
		status int
		out    any
		err    error
	)
	switch req.RouteKey {
	case "POST /jobs":
		status, out, err = d.postJob(ctx, req)
	case "POST /uploads":
		status, out, err = d.postUpload(ctx, req)
	case "GET /jobs/{id}":
		status, out, err = d.getJob(ctx, id)
	case "GET /jobs/{id}/results":
		status, out, err = d.getResults(ctx, id)
	case "DELETE /jobs/{id}":
		status, out, err = d.deleteJob(ctx, id)
	default:
		err = errf(http.StatusNotFound, CodeRouteNotFound, "no route %q; see the API description", req.RouteKey)
	}
	if err != nil {
		return errBody(err)
	}
	return status, out
}

func errBody(err error) (int, any) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{status: http.StatusServiceUnavailable, Code: CodeUnavailable, Msg: "a backing service failed; retry later"}
	}
	body := map[string]any{"error": ae}
	if ae.state != "" {
		body["state"] = ae.state
	}
	return ae.status, body
}

func (d *Deps) authorize(req events.APIGatewayV2HTTPRequest) error {
	if d.APIKey == "" {
		return nil
	}
	key := header(req, "x-api-key")
	if key == "" {
		return errf(http.StatusUnauthorized, CodeMissingAPIKey, "this API needs an x-api-key header")
	}
	if subtle.ConstantTimeCompare([]byte(key), []byte(d.APIKey)) != 1 {
		return errf(http.StatusForbidden, CodeInvalidAPIKey, "the x-api-key header is not valid")
	}
	return nil
}

func header(req events.APIGatewayV2HTTPRequest, name string) string {
	for k, v := range req.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// listFormat maps a request content type to a list format and file
// extension.
func listFormat(contentType string) (urllist.Format, string, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if contentType == "" || err != nil {
		return 0, "", errf(http.StatusUnsupportedMediaType, CodeMediaType,
			"content type %q: send text/plain (one URL per line), text/csv or application/json", contentType)
	}
	switch mt {
	case "text/plain":
		return urllist.FormatText, ".txt", nil
	case "text/csv":
		return urllist.FormatCSV, ".csv", nil
	case "application/json":
		return urllist.FormatJSON, ".json", nil
	}
	return 0, "", errf(http.StatusUnsupportedMediaType, CodeMediaType,
		"content type %q: send text/plain (one URL per line), text/csv or application/json", mt)
}

// newJobID returns a fresh random job ID ("j-" and 16 base-32 digits).
func newJobID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return "j-" + strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

func (d *Deps) postJob(ctx context.Context, req events.APIGatewayV2HTTPRequest) (int, any, error) {
	format, ext, err := listFormat(header(req, "content-type"))
	if err != nil {
		return 0, nil, err
	}
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(req.Body); err != nil {
			return 0, nil, errf(http.StatusBadRequest, CodeBinaryBody, "the body is not valid base64: %v", err)
		}
	}
	switch {
	case len(body) > MaxBodyBytes:
		return 0, nil, errf(http.StatusRequestEntityTooLarge, CodeTooLarge,
			"the body is %d bytes, more than the %d-byte limit of POST /jobs; upload larger lists (up to %d bytes) through POST /uploads",
			len(body), MaxBodyBytes, MaxUploadBytes)
	case len(bytes.TrimSpace(body)) == 0:
		return 0, nil, errf(http.StatusBadRequest, CodeEmptyBody, "the body is empty; send the list of URLs")
	case bytes.IndexByte(body, 0) >= 0 || !utf8.Valid(body):
		return 0, nil, errf(http.StatusBadRequest, CodeBinaryBody, "the body is not UTF-8 text")
	}
	name := ""
	if format == urllist.FormatJSON {
		if body, name, err = unwrapJobRequest(body); err != nil {
			return 0, nil, err
		}
	}
	type rejected struct {
		Line  int    `json:"line"`
		Error string `json:"error"`
	}
	var rej []rejected
	accepted, nrej := 0, 0
	err = urllist.Read(bytes.NewReader(body), urllist.Options{Format: format, Keyer: d.Keyer}, func(e urllist.Entry) error {
		if e.Err != "" {
			nrej++
			if len(rej) < maxRejectedListed {
				rej = append(rej, rejected{Line: e.Line, Error: e.Err})
			}
			return nil
		}
		accepted++
		return nil
	})
	if err != nil {
		ae := errf(http.StatusBadRequest, CodeInvalidJSON, "the list does not parse: %v", err)
		if format != urllist.FormatJSON {
			ae.Code = CodeNoValidURLs
		}
		ae.Line = lineOf(err)
		return 0, nil, ae
	}
	if accepted == 0 {
		ae := errf(http.StatusBadRequest, CodeNoValidURLs, "the list has no valid URL (%d rejected)", nrej)
		if len(rej) > 0 {
			ae.Line = rej[0].Line
			ae.Msg += fmt.Sprintf("; line %d: %s", rej[0].Line, rej[0].Error)
		}
		return 0, nil, ae
	}
	id := newJobID()
	key := JobKeyPrefix + id + ext
	now := d.clock().Now()
	if name == "" {
		name = key
	}
	if _, _, err := d.Jobs.Create(ctx, jobs.Job{ID: id, State: jobs.Splitting, Source: "api", Key: key,
		Name: name, Lines: accepted + nrej, Rejected: nrej, Expires: now.Add(d.jobTTL())}); err != nil {
		return 0, nil, fmt.Errorf("creating job: %w", err)
	}
	if err := d.Objects.Put(ctx, key, bytes.NewReader(body), header(req, "content-type")); err != nil {
		_ = d.Jobs.Fail(context.WithoutCancel(ctx), id, "storing the list failed")
		return 0, nil, fmt.Errorf("storing the list: %w", err)
	}
	if rej == nil {
		rej = []rejected{}
	}
	return http.StatusAccepted, map[string]any{
		"job_id": id, "urls_accepted": accepted, "urls_rejected": nrej, "rejected": rej,
		"status_url": "/jobs/" + id,
	}, nil
}

// unwrapJobRequest accepts the JSON object form of a list,
// {"urls": [...], "name": "..."}, and returns the array alone, preceded by
// as many newlines as came before it so that line numbers still point into
// the body as sent; an array body is returned as it is.
func unwrapJobRequest(body []byte) ([]byte, string, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n\ufeff")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return body, "", nil
	}
	var req struct {
		URLs json.RawMessage `json:"urls"`
		Name string          `json:"name"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		ae := errf(http.StatusBadRequest, CodeInvalidJSON, "the body is not a JSON array of URLs nor an object {\"urls\": [...]}: %v", err)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			ae.Line = 1 + bytes.Count(body[:min(int(se.Offset), len(body))], []byte("\n"))
		}
		return nil, "", ae
	}
	if len(req.URLs) == 0 || req.URLs[0] != '[' {
		return nil, "", errf(http.StatusBadRequest, CodeInvalidJSON, `the object has no "urls" array`)
	}
	at := bytes.Index(body, req.URLs)
	lines := 0
	if at > 0 {
		lines = bytes.Count(body[:at], []byte("\n"))
	}
	out := append(bytes.Repeat([]byte("\n"), lines), req.URLs...)
	return out, req.Name, nil
}

// lineOf digs a "line N" out of a urllist error, 0 if none.
func lineOf(err error) int {
	s := err.Error()
	for from := 0; ; {
		i := strings.Index(s[from:], "line ")
		if i < 0 {
			return 0
		}
		i += from
		from = i + 5
		if i > 0 && unicode.IsLetter(rune(s[i-1])) {
			continue // "deadline 5", "headline 3"
		}
		n, digits := 0, 0
		for _, c := range s[i+5:] {
			if c < '0' || c > '9' {
				break
			}
			n, digits = n*10+int(c-'0'), digits+1
		}
		if digits > 0 {
			return n
		}
	}
}

func (d *Deps) postUpload(ctx context.Context, req events.APIGatewayV2HTTPRequest) (int, any, error) {
	var in struct {
		Name        string `json:"name"`
		ContentType string `json:"content_type"`
	}
	body := strings.TrimSpace(req.Body)
	if body != "" {
		if req.IsBase64Encoded {
			b, err := base64.StdEncoding.DecodeString(req.Body)
			if err != nil {
				return 0, nil, errf(http.StatusBadRequest, CodeInvalidJSON, "the body is not valid base64: %v", err)
			}
			body = string(b)
		}
		if err := json.Unmarshal([]byte(body), &in); err != nil {
			return 0, nil, errf(http.StatusBadRequest, CodeInvalidJSON, "the body is not the JSON object {name, content_type}: %v", err)
		}
	}
	if in.ContentType == "" {
		in.ContentType = "text/plain"
	}
	_, ext, err := listFormat(in.ContentType)
	if err != nil {
		return 0, nil, err
	}
	id := newJobID()
	key := UploadKeyPrefix + id + ext
	u, err := d.Objects.PresignPut(ctx, key, in.ContentType, presignTTL)
	if err != nil {
		return 0, nil, fmt.Errorf("presigning the upload: %w", err)
	}
	return http.StatusCreated, map[string]any{
		"job_id": id, "key": key, "upload_url": u, "method": http.MethodPut,
		"headers": map[string]string{"Content-Type": in.ContentType}, "max_bytes": MaxUploadBytes,
		"expires_at": d.clock().Now().Add(presignTTL).UTC().Format(time.RFC3339), "status_url": "/jobs/" + id,
	}, nil
}

// JobStatus is the answer of GET /jobs/{id}.
type JobStatus struct {
	JobID       string         `json:"job_id"`
	State       jobs.State     `json:"state"`
	Done        int            `json:"done"`  // input lines with a result (invalid lines included)
	Total       int            `json:"total"` // input lines
	Lines       int            `json:"lines"`
	Rejected    int            `json:"rejected"`
	URLs        int            `json:"urls"`
	Counts      map[string]int `json:"counts"`
	Source      string         `json:"source"`
	Created     *time.Time     `json:"created"`
	Started     *time.Time     `json:"started"`
	Finished    *time.Time     `json:"finished"`
	Busiest     []BusyDomain   `json:"busiest"`
	Stuck       bool           `json:"stuck"`
	StuckReason string         `json:"stuck_reason,omitempty"`
	Error       string         `json:"error,omitempty"`
}

// BusyDomain is one of a job's busiest registrable domains.
type BusyDomain struct {
	Domain      string  `json:"domain"`
	URLs        int     `json:"urls"`
	LearnedRate float64 `json:"learned_rate"` // requests/s
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func checkID(id string) error {
	if !ValidJobID(id) {
		return errf(http.StatusBadRequest, CodeInvalidJobID, "%q is not a job ID", id)
	}
	return nil
}

func notFound(id string, err error) error {
	if errors.Is(err, jobs.ErrNotFound) {
		return errf(http.StatusNotFound, CodeJobNotFound, "no job %q (jobs are kept for 30 days)", id)
	}
	return err
}

// Status returns a job's status. It also repairs what a crash left behind:
// a running job whose every line is counted is moved on and summarized; a
// split or a summary that stalled for StuckAfter is redone (both are
// idempotent); a job without progress for StuckAfter is reported stuck. Errors wrap jobs.ErrNotFound
// or the store's error.
func (d *Deps) Status(ctx context.Context, id string) (JobStatus, error) {
	p, err := d.Jobs.Progress(ctx, id)
	if err != nil {
		return JobStatus{}, err
	}
	j := p.Job
	now := d.clock().Now()
	idle := now.Sub(p.LastProgress)
	switch {
	case j.State == jobs.Running && p.Done >= p.Total:
		// Every line is counted but the completing worker did not move the
		// job on (it crashed, or its answer was lost).
		if err := d.finishJob(ctx, id); err != nil {
			d.log().Error("status: finishing job", "job", id, "err", err)
		}
	case j.State == jobs.Splitting && now.Sub(j.Updated) > d.stuckAfter() && j.Key != "":
		// The ingest gave up (or never ran): it is idempotent and resumes.
		// The claim makes one status check, not every concurrent one, do it.
		if won, err := d.Jobs.Claim(ctx, id, jobs.Splitting, j.Updated); err == nil && won {
			if err := d.IngestObject(ctx, j.Key, j.ETag, 0); err != nil {
				d.log().Error("status: resuming the split", "job", id, "err", err)
			}
		}
	case j.State == jobs.Summarizing && now.Sub(j.Updated) > d.stuckAfter():
		if won, err := d.Jobs.Claim(ctx, id, jobs.Summarizing, j.Updated); err == nil && won {
			if err := d.Summarize(ctx, id); err != nil {
				d.log().Error("status: re-summarizing job", "job", id, "err", err)
			}
		}
	}
	if j2, err := d.Jobs.Get(ctx, id); err == nil {
		j = j2
	}
	st := JobStatus{JobID: id, State: j.State, Done: p.Done + j.Rejected, Total: j.Lines, Lines: j.Lines,
		Rejected: j.Rejected, URLs: j.URLs, Counts: map[string]int{}, Source: j.Source,
		Created: timePtr(j.Created), Started: timePtr(j.Started), Finished: timePtr(j.Finished), Error: j.Error,
		Busiest: []BusyDomain{}}
	for c, n := range p.Classes {
		st.Counts[c] = n
	}
	if j.Rejected > 0 {
		st.Counts["invalid"] += j.Rejected
	}
	d.init()
	for i, dc := range j.Top {
		if i == 5 {
			break
		}
		b := BusyDomain{Domain: dc.Domain, URLs: dc.URLs}
		if l, err := d.checker.lim.Learned(ctx, dc.Domain); err == nil {
			b.LearnedRate = l.Rate
		}
		st.Busiest = append(st.Busiest, b)
	}
	if !j.State.Final() && idle > d.stuckAfter() {
		st.Stuck = true
		st.StuckReason = fmt.Sprintf("no progress for %s (%d of %d lines done); messages may be in the dead-letter queue",
			idle.Round(time.Second), st.Done, st.Total)
	}
	return st, nil
}

func (d *Deps) getJob(ctx context.Context, id string) (int, any, error) {
	if err := checkID(id); err != nil {
		return 0, nil, err
	}
	st, err := d.Status(ctx, id)
	if err != nil {
		return 0, nil, notFound(id, err)
	}
	return http.StatusOK, st, nil
}

func (d *Deps) getResults(ctx context.Context, id string) (int, any, error) {
	if err := checkID(id); err != nil {
		return 0, nil, err
	}
	j, err := d.Jobs.Get(ctx, id)
	if err != nil {
		return 0, nil, notFound(id, err)
	}
	if j.State != jobs.Done {
		ae := errf(http.StatusConflict, CodeJobNotDone, "job %s is %s; results are ready when it is done", id, j.State)
		ae.state = j.State
		return 0, nil, ae
	}
	files := map[string]string{}
	for _, name := range []string{results.JSONLFile, results.CSVFile, results.SummaryFile, report.FileName} {
		u, err := d.Objects.PresignGet(ctx, resultKey(id, name), presignTTL)
		if err != nil {
			return 0, nil, fmt.Errorf("presigning %s: %w", name, err)
		}
		files[name] = u
	}
	return http.StatusOK, map[string]any{"job_id": id, "state": j.State, "files": files,
		"expires_at": d.clock().Now().Add(presignTTL).UTC().Format(time.RFC3339)}, nil
}

func (d *Deps) deleteJob(ctx context.Context, id string) (int, any, error) {
	if err := checkID(id); err != nil {
		return 0, nil, err
	}
	j, err := d.Jobs.Cancel(ctx, id)
	if err != nil {
		if errors.Is(err, jobs.ErrConflict) {
			return 0, nil, errf(http.StatusConflict, CodeJobFinished, "job %s has already finished", id)
		}
		return 0, nil, notFound(id, err)
	}
	return http.StatusAccepted, map[string]any{"job_id": id, "state": j.State}, nil
}
