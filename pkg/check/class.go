package check

// Class is the classified outcome of one check. Its string value is stable and
// meant for reports and JSON output.
type Class string

// The outcome classes. Exactly one applies to each Outcome.
const (
	// ClassOK: the first request answered 2xx with no redirect.
	ClassOK Class = "ok"
	// ClassRedirect: at least one redirect was followed and the final target
	// answered 2xx.
	ClassRedirect Class = "redirect"
	// ClassClientError: a final 4xx status other than 429 and bot challenges.
	ClassClientError Class = "client_error"
	// ClassServerError: a final 5xx status (503 only without Retry-After), a
	// 3xx that cannot be followed (no or unparsable Location, or a 3xx status
	// that is not a redirect such as 300 or 304), or a protocol-level failure
	// that fits no other class (for example a malformed response or oversized
	// headers).
	ClassServerError Class = "server_error"
	// ClassRateLimited: 429 Too Many Requests (RFC 6585 §4), or 503 Service
	// Unavailable carrying Retry-After (RFC 9110 §15.6.4, §10.2.3).
	ClassRateLimited Class = "rate_limited"
	// ClassBotProtection: a bot-protection challenge or block answered
	// instead of the resource; see Checker.Check for the signatures.
	ClassBotProtection Class = "blocked_by_bot_protection"
	// ClassTimeout: a connect, TLS handshake, response header or total
	// timeout expired, or the caller's context was cancelled.
	ClassTimeout Class = "timeout"
	// ClassDNS: the host name could not be resolved (any resolver error, or
	// no addresses).
	ClassDNS Class = "dns"
	// ClassTLS: the TLS handshake failed (untrusted or invalid certificate,
	// name mismatch, alert from the peer, non-TLS answer on an https port).
	ClassTLS Class = "tls"
	// ClassRefused: the TCP connection was refused (ECONNREFUSED) or the host
	// or network was unreachable (EHOSTUNREACH, ENETUNREACH).
	ClassRefused Class = "refused"
	// ClassReset: the connection was reset or closed before a complete
	// response header arrived (ECONNRESET, ECONNABORTED, EPIPE, EOF).
	ClassReset Class = "reset"
	// ClassTooManyRedirects: a redirect loop (a URL revisited) or more than
	// Config.MaxRedirects redirects.
	ClassTooManyRedirects Class = "too_many_redirects"
	// ClassInvalid: the URL (or a redirect target) is not a usable http or
	// https URL.
	ClassInvalid Class = "invalid"
	// ClassForbiddenTarget: every address of the target host is one the
	// Checker refuses to connect to; see Forbidden.
	ClassForbiddenTarget Class = "forbidden_target"
)

// Broken reports whether c means the link does not work: true for every class
// except ClassOK and ClassRedirect.
func (c Class) Broken() bool {
	return c != ClassOK && c != ClassRedirect
}

// Transient reports whether a later retry of the same URL may succeed without
// anyone fixing the link: rate_limited, timeout, reset and refused.
//
// refused is included because a refused connection is most often a server
// restarting or a load balancer draining; a port that is closed for good
// costs only a few cheap SYNs to confirm, since the caller bounds retries.
// dns is not included: NXDOMAIN, the common case, is permanent. server_error
// is not included as a class; use Outcome.Transient, which also counts 502,
// 503 and 504 answers.
func (c Class) Transient() bool {
	switch c {
	case ClassRateLimited, ClassTimeout, ClassReset, ClassRefused:
		return true
	}
	return false
}
