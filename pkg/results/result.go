package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Class names, in the order in which reports list them. They mirror the
// check.Class constants of pkg/check.
const (
	ClassOK                     = "ok"
	ClassRedirect               = "redirect"
	ClassClientError            = "client_error"
	ClassServerError            = "server_error"
	ClassRateLimited            = "rate_limited"
	ClassBlockedByBotProtection = "blocked_by_bot_protection"
	ClassTimeout                = "timeout"
	ClassDNS                    = "dns"
	ClassTLS                    = "tls"
	ClassRefused                = "refused"
	ClassReset                  = "reset"
	ClassTooManyRedirects       = "too_many_redirects"
	ClassInvalid                = "invalid"
	ClassForbiddenTarget        = "forbidden_target"
)

// Classes lists every known result class in canonical report order (14
// entries). Reports iterate over it so that their output order is stable.
// Callers must not modify it.
var Classes = []string{
	ClassOK, ClassRedirect, ClassClientError, ClassServerError, ClassRateLimited,
	ClassBlockedByBotProtection, ClassTimeout, ClassDNS, ClassTLS, ClassRefused,
	ClassReset, ClassTooManyRedirects, ClassInvalid, ClassForbiddenTarget,
}

// Broken reports whether a result of the given class counts as a broken
// link: every class except "ok" and "redirect" (including unknown and empty
// class names) is broken.
func Broken(class string) bool {
	return class != ClassOK && class != ClassRedirect
}

// Result is the outcome of checking one input line. Its JSON form is one line
// of results.jsonl; field names are snake_case.
type Result struct {
	// Line is the 1-based line number in the input file.
	Line int `json:"line"`
	// URL is the normalized URL, or the raw line text for invalid lines.
	URL string `json:"url"`
	// Domain is the URL's registrable domain (eTLD+1); empty for invalid lines.
	Domain string `json:"domain"`
	// Class is one of Classes (see Broken).
	Class string `json:"class"`
	// Status is the final HTTP status code, 0 when no response arrived.
	Status int `json:"status,omitempty"`
	// FinalURL is the URL after following redirects, empty if there were none.
	FinalURL string `json:"final_url,omitempty"`
	// Redirects lists each hop as "<status> <location>", e.g.
	// "301 https://example.com/new", in the order they were followed.
	Redirects []string `json:"redirects,omitempty"`
	// LatencyMS is the duration of the final attempt in milliseconds; must
	// be finite (JSON has no NaN or Inf).
	LatencyMS float64 `json:"latency_ms"`
	// Attempts is the number of attempts made (1 + retries); 0 for lines
	// that were never requested.
	Attempts int `json:"attempts"`
	// Error is the text of the last error, if any.
	Error string `json:"error,omitempty"`
	// CheckedAt is when the final attempt finished.
	CheckedAt time.Time `json:"checked_at"`
}

// ReadJSONL reads a results.jsonl file: one JSON-encoded Result per line,
// blank lines ignored, unknown fields ignored. Lines may be of any length.
// It returns the results in file order, or an error naming the path and the
// 1-based line of the file that could not be read or decoded.
func ReadJSONL(path string) ([]Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("results: read jsonl: %w", err)
	}
	defer f.Close()
	out, err := decodeJSONL(f)
	if err != nil {
		return nil, fmt.Errorf("results: read jsonl %s: %w", path, err)
	}
	return out, nil
}

// decodeJSONL decodes one Result per non-blank line of r.
func decodeJSONL(r io.Reader) ([]Result, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []Result
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			if trimmed[0] != '{' {
				return nil, fmt.Errorf("line %d: want a JSON object, got %q", lineNo, clip(trimmed))
			}
			var res Result
			if derr := json.Unmarshal(trimmed, &res); derr != nil {
				return nil, fmt.Errorf("line %d: %w", lineNo, derr)
			}
			out = append(out, res)
		}
		if err != nil { // io.EOF
			return out, nil
		}
	}
}

// clip shortens b for use in an error message.
func clip(b []byte) string {
	const max = 40
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
