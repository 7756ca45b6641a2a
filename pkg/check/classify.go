package check

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
)

// headFallback reports whether a HEAD answer should be retried as GET on the
// same URL. RFC 9110 §9.1 requires general-purpose servers to support HEAD,
// but many answer it wrongly. The set, and why each is in it:
//   - 405 Method Not Allowed (RFC 9110 §15.5.6): the server says HEAD is not
//     allowed for this resource; GET may well be.
//   - 501 Not Implemented (RFC 9110 §15.6.2): the server does not support HEAD
//     at all.
//   - 400 Bad Request: some frameworks and WAF rules reject HEAD (or any
//     request they cannot route) as malformed.
//   - 403 Forbidden, unless it carries a bot-protection signature: signed
//     object-store URLs (S3, GCS) cover the method, so a HEAD on a URL signed
//     for GET is refused, and some WAF rules deny HEAD. With a bot signature
//     GET would be challenged too, so the extra request is not spent.
//   - 406 Not Acceptable: some servers run content negotiation only for GET
//     and reject HEAD.
//
// 404 is deliberately left out: it is by far the most common genuine
// broken-link answer, so falling back would double the requests charged to
// every dead link's domain, while mainstream frameworks (Go net/http,
// Express, Rails, Django) already answer HEAD wherever they answer GET.
// 429 and 5xx are left out too: repeating a request to an overloaded or
// failing server is impolite and rarely changes the answer.
func headFallback(status int, h http.Header) bool {
	switch status {
	case http.StatusMethodNotAllowed, http.StatusNotImplemented,
		http.StatusBadRequest, http.StatusNotAcceptable, http.StatusForbidden:
		return botSignature(status, h) == ""
	}
	return false
}

// botSignature returns a description of the bot-protection signature in a
// response, or "" if there is none. Recognised:
//   - header "cf-mitigated: challenge" on any status: Cloudflare sets it on
//     every challenge page ("Detect a Challenge Page response", Cloudflare
//     docs); usually with 403.
//   - header "x-amzn-waf-action: challenge" (sent with 202) or "captcha"
//     (sent with 405): AWS WAF's Challenge and CAPTCHA actions ("CAPTCHA and
//     Challenge action behavior", AWS WAF developer guide). Without this rule
//     a challenge would pass as ok.
//   - status 999: LinkedIn's non-standard answer to clients it takes for
//     bots.
func botSignature(status int, h http.Header) string {
	if strings.EqualFold(strings.TrimSpace(h.Get("Cf-Mitigated")), "challenge") {
		return "Cloudflare challenge (cf-mitigated: challenge)"
	}
	switch a := strings.ToLower(strings.TrimSpace(h.Get("X-Amzn-Waf-Action"))); a {
	case "challenge", "captcha":
		return "AWS WAF " + a + " (x-amzn-waf-action: " + a + ")"
	}
	if status == 999 {
		return "status 999 (LinkedIn bot block)"
	}
	return ""
}

// classifyStatus classifies a final (not followed) response. It returns
// ClassOK for 2xx; Check turns that into ClassRedirect when hops were
// followed. The text is "" for 2xx, else the status and the reason.
func classifyStatus(status int, h http.Header) (Class, string) {
	text := fmt.Sprintf("%d %s", status, http.StatusText(status))
	if http.StatusText(status) == "" {
		text = fmt.Sprintf("%d (non-standard status)", status)
	}
	if sig := botSignature(status, h); sig != "" {
		return ClassBotProtection, fmt.Sprintf("%d: %s", status, sig)
	}
	switch {
	case status >= 200 && status <= 299:
		return ClassOK, ""
	case status == http.StatusTooManyRequests:
		return ClassRateLimited, text
	case status == http.StatusServiceUnavailable:
		if h.Get("Retry-After") != "" {
			return ClassRateLimited, text + " with Retry-After"
		}
		return ClassServerError, text
	case status >= 300 && status <= 399:
		return ClassServerError, text + ": not a followable redirect"
	case status >= 400 && status <= 499:
		return ClassClientError, text
	}
	return ClassServerError, text
}

// classifyErr classifies an error from a request made under ctx (the check's
// total-timeout context). Order matters: the address refusal is ours and
// wins; an expired or cancelled check is a timeout whatever the I/O layer
// reported; then DNS (a lookup that timed out included), TLS, network
// timeouts, refusals and resets.
func classifyErr(ctx context.Context, err error) (Class, string) {
	msg := errText(err)
	var forbidden *ForbiddenError
	if errors.As(err, &forbidden) {
		return ClassForbiddenTarget, msg
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.Canceled) {
			return ClassTimeout, "check cancelled: " + msg
		}
		return ClassTimeout, "total timeout exceeded: " + msg
	}
	// A lookup that failed, even by timing out, is a DNS failure: no
	// connection to the host was ever attempted.
	var dnsErr *net.DNSError
	var resErr *resolveError
	if errors.As(err, &dnsErr) || errors.As(err, &resErr) {
		return ClassDNS, msg
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ClassTimeout, msg
	}
	if isTLSError(err) {
		return ClassTLS, msg
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return ClassTimeout, msg
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH):
		return ClassRefused, msg
	case errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		// Fallback for layers that flatten the errno into text (e.g. HTTP/2
		// connection errors).
		strings.Contains(msg, "connection reset"):
		return ClassReset, msg
	}
	return ClassServerError, msg
}

// isTLSError reports whether err comes from certificate verification or the
// TLS handshake.
func isTLSError(err error) bool {
	var (
		verifyErr  *tls.CertificateVerificationError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		rootsErr   x509.SystemRootsError
		recordErr  tls.RecordHeaderError
		alertErr   tls.AlertError
		echErr     *tls.ECHRejectionError
		opErr      *net.OpError
	)
	switch {
	case errors.As(err, &verifyErr), errors.As(err, &unknownCA), errors.As(err, &hostErr),
		errors.As(err, &invalidErr), errors.As(err, &rootsErr), errors.As(err, &recordErr),
		errors.As(err, &alertErr), errors.As(err, &echErr):
		return true
	}
	// crypto/tls reports alerts as *net.OpError with Op "remote error"
	// (received from the peer) or "local error" (sent by us).
	for e := err; errors.As(e, &opErr); e = opErr.Err {
		if opErr.Op == "remote error" || opErr.Op == "local error" {
			return true
		}
	}
	return false
}

// errText is err's message without the request (requestError) or
// *url.Error wrapper: the URL is already in Outcome.FinalURL.
func errText(err error) string {
	var rerr *requestError
	if errors.As(err, &rerr) {
		err = rerr.err
	}
	var uerr *url.Error
	if errors.As(err, &uerr) && uerr.Err != nil {
		return uerr.Err.Error()
	}
	return err.Error()
}
