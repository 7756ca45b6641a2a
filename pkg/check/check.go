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
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/urlcheck/urlcheck/pkg/clock"
)

// Version is the program version, set at link time with
// -ldflags "-X github.com/urlcheck/urlcheck/pkg/check.Version=v1.2.3".
// It is used in DefaultUserAgent.
var Version = "dev"

// DefaultUserAgent returns the User-Agent sent when Config.UserAgent is empty:
// "urlcheck/<Version> (+https://github.com/urlcheck/urlcheck)". It identifies
// the tool and where to learn about it, as RFC 9110 §10.1.5 recommends.
func DefaultUserAgent() string {
	return "urlcheck/" + Version + " (+https://github.com/urlcheck/urlcheck)"
}

// Defaults applied by New to zero Config fields.
const (
	DefaultConnectTimeout = 10 * time.Second // Config.ConnectTimeout
	DefaultTLSTimeout     = 10 * time.Second // Config.TLSTimeout
	DefaultHeaderTimeout  = 20 * time.Second // Config.HeaderTimeout
	DefaultTotalTimeout   = 30 * time.Second // Config.TotalTimeout
	DefaultMaxRedirects   = 10               // Config.MaxRedirects
	DefaultMaxBodyBytes   = 16 << 10         // Config.MaxBodyBytes, bytes
	DefaultMaxHeaderBytes = 64 << 10         // Config.MaxHeaderBytes, bytes
)

// headlessMax bounds how many hosts the HEAD-unsupported memory holds.
const headlessMax = 4096

// hopDrainBytes is how much of a redirect or HEAD-fallback body is read
// before closing it, so that small bodies leave the connection reusable.
const hopDrainBytes = 4 << 10

// Config configures a Checker. The zero value is usable: every zero field
// takes the default named in its comment.
type Config struct {
	// ConnectTimeout bounds name resolution plus the TCP connect (over all
	// resolved addresses) for one connection. Default 10s.
	ConnectTimeout time.Duration
	// TLSTimeout bounds the TLS handshake. Default 10s.
	TLSTimeout time.Duration
	// HeaderTimeout bounds the wait for response headers after the request
	// is written (http.Transport.ResponseHeaderTimeout). Default 20s.
	HeaderTimeout time.Duration
	// TotalTimeout bounds the whole check, all redirects and the HEAD->GET
	// fallback included. Default 30s.
	TotalTimeout time.Duration
	// UserAgent is the User-Agent header value. Default DefaultUserAgent().
	UserAgent string
	// MaxRedirects is how many redirects are followed before the check
	// fails with ClassTooManyRedirects. 0 means the default 10; a negative
	// value follows none.
	MaxRedirects int
	// MaxBodyBytes is how many bytes of a final GET response body are read
	// before the body is closed. 0 means the default 16 KiB; negative reads
	// none.
	MaxBodyBytes int64
	// MaxHeaderBytes limits the response header size in bytes
	// (http.Transport.MaxResponseHeaderBytes). Default 64 KiB.
	MaxHeaderBytes int64
	// AllowPrivate disables the Forbidden address check, allowing loopback
	// and private targets (tests, demos).
	AllowPrivate bool
	// Resolver resolves a host name to addresses. Default
	// net.DefaultResolver.LookupNetIP(ctx, "ip", host). It is not called for
	// IP-literal hosts. Any error it returns is reported as ClassDNS.
	Resolver func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial opens a connection to an address that has already passed the
	// Forbidden check. Default net.Dialer{Timeout: ConnectTimeout}. The ctx
	// carries the ConnectTimeout deadline.
	Dial func(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error)
	// RootCAs are the trusted roots for https. nil means the system roots.
	RootCAs *x509.CertPool
	// Clock measures Outcome.Latency. nil means clock.Real{}. Timeouts
	// always run on the wall clock, since they guard real network I/O.
	Clock clock.Clock
	// BeforeFollowUp, when set, is called before every request of a check
	// but its first: each redirect hop and each HEAD->GET fallback, with the
	// check's first URL (whose domain's slot the caller holds) and the URL
	// about to be requested. The scheduler uses it to pay for those requests
	// with a token from the target's registrable domain, and for a hop to
	// another domain also to hold one of that domain's concurrency slots, so
	// a redirect chain never bursts past a host's limits. release, if not
	// nil, is called once the response headers arrive or the request fails.
	// An error ends the check: it is classified like a transport error (a
	// context deadline is a timeout).
	BeforeFollowUp func(ctx context.Context, origin, target *url.URL) (release func(), err error)
}

// Hop is one redirect response in a chain.
type Hop struct {
	URL    string // URL requested
	Status int    // its 3xx status code
}

// Outcome is the result of one Check.
type Outcome struct {
	// Class is the classified result.
	Class Class
	// Status is the final HTTP status code, 0 when no response arrived.
	Status int
	// FinalURL is the URL of the last request made (for ClassInvalid on the
	// input URL, the input as given).
	FinalURL string
	// Redirects is the redirect chain in order; len <= MaxRedirects.
	Redirects []Hop
	// Method is "HEAD" or "GET": the method of the final request ("" when
	// no request was made).
	Method string
	// Requests counts HTTP requests attempted: every redirect hop and the
	// HEAD->GET fallback, including a request that failed before any
	// response (its connection may still have cost the host a SYN or a TLS
	// handshake). 0 only for ClassInvalid input. The scheduler charges
	// these to the domain's token bucket.
	Requests int
	// Latency runs from the start of the first request to the arrival of the
	// final response headers (or the error), measured with Config.Clock.
	Latency time.Duration
	// RetryAfter is the raw Retry-After header of the final response, ""
	// if none (RFC 9110 §10.2.3: delay-seconds or an HTTP-date).
	RetryAfter string
	// Error is human-readable text for failures, "" for ClassOK and
	// ClassRedirect. Examples: "404 Not Found",
	// "dial tcp 10.0.0.1:80: refusing private address 10.0.0.1".
	Error string
}

// Transient reports whether a later retry may succeed: Class.Transient, or a
// server_error whose status is 502, 503 or 504 (RFC 9110 §15.6.3-15.6.5:
// gateway and availability failures that describe the server's state, not the
// resource).
func (o Outcome) Transient() bool {
	if o.Class.Transient() {
		return true
	}
	if o.Class == ClassServerError {
		switch o.Status {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
	}
	return false
}

// Checker checks URLs. It holds one shared http.Transport, so connections
// are reused across checks. A Checker is safe for concurrent use.
type Checker struct {
	cfg       Config
	clk       clock.Clock
	transport *http.Transport
	headless  hostSet
	nxdomain  hostSet // hosts whose lookup answered "no such host"
}

// New returns a Checker for cfg with defaults applied. Its transport keeps
// connections alive (at most 4 idle per host, closed after 30 s idle), tries
// HTTP/2 over TLS, and ignores proxy environment variables: a proxy would
// connect on our behalf and bypass the dial-time address check.
func New(cfg Config) *Checker {
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.TLSTimeout <= 0 {
		cfg.TLSTimeout = DefaultTLSTimeout
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = DefaultHeaderTimeout
	}
	if cfg.TotalTimeout <= 0 {
		cfg.TotalTimeout = DefaultTotalTimeout
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent()
	}
	switch {
	case cfg.MaxRedirects == 0:
		cfg.MaxRedirects = DefaultMaxRedirects
	case cfg.MaxRedirects < 0:
		cfg.MaxRedirects = 0
	}
	switch {
	case cfg.MaxBodyBytes == 0:
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	case cfg.MaxBodyBytes < 0:
		cfg.MaxBodyBytes = 0
	}
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if cfg.Resolver == nil {
		cfg.Resolver = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if cfg.Dial == nil {
		d := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
		cfg.Dial = func(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error) {
			return d.DialContext(ctx, network, addr.String())
		}
	}
	c := &Checker{cfg: cfg, clk: cfg.Clock}
	if c.clk == nil {
		c.clk = clock.Real{}
	}
	c.headless.max = headlessMax
	c.nxdomain.max = headlessMax
	c.transport = &http.Transport{
		Proxy:                  nil,
		DialContext:            c.dialContext,
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs},
		TLSHandshakeTimeout:    cfg.TLSTimeout,
		ResponseHeaderTimeout:  cfg.HeaderTimeout,
		MaxResponseHeaderBytes: cfg.MaxHeaderBytes,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        30 * time.Second,
	}
	return c
}

// Close closes the transport's idle connections. The Checker stays usable.
func (c *Checker) Close() { c.transport.CloseIdleConnections() }

// resolveError marks an error from Config.Resolver, so that any resolver's
// errors classify as ClassDNS.
type resolveError struct {
	host string
	err  error
}

func (e *resolveError) Error() string {
	var dnsErr *net.DNSError
	if errors.As(e.err, &dnsErr) {
		return e.err.Error()
	}
	return fmt.Sprintf("lookup %s: %v", e.host, e.err)
}

func (e *resolveError) Unwrap() error { return e.err }

var errNoAddresses = errors.New("no addresses")

// dialContext is the transport's DialContext: it resolves addr's host,
// drops forbidden addresses (unless AllowPrivate) and dials the rest in order.
func (c *Checker) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: bad address %q: %w", network, addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("dial %s: bad port in %q: %w", network, addr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	defer cancel()

	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		ips, err = c.cfg.Resolver(ctx, host)
		if err != nil {
			var dnsErr *net.DNSError
			if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
				c.nxdomain.add(strings.ToLower(host))
			}
			return nil, &resolveError{host: host, err: err}
		}
		if len(ips) == 0 {
			return nil, &resolveError{host: host, err: errNoAddresses}
		}
	}
	var forbidden *ForbiddenError
	var forbiddenAt netip.AddrPort
	var lastErr error
	for _, ip := range ips {
		ip = ip.Unmap()
		ap := netip.AddrPortFrom(ip, uint16(port))
		if !c.cfg.AllowPrivate {
			if reason, bad := Forbidden(ip); bad {
				if forbidden == nil {
					forbidden = &ForbiddenError{Host: host, Addr: ip, Reason: reason}
					forbiddenAt = ap
				}
				continue
			}
		}
		conn, err := c.cfg.Dial(ctx, network, ap)
		if err == nil {
			return conn, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	if lastErr != nil {
		return nil, lastErr
	}
	return nil, &net.OpError{Op: "dial", Net: network, Addr: net.TCPAddrFromAddrPort(forbiddenAt), Err: forbidden}
}

// Known returns rawURL's outcome without sending anything when it is already
// certain: its host answered "no such host" (NXDOMAIN) to an earlier check
// by this Checker. The Outcome is ClassDNS with Requests 0. A job with
// thousands of URLs on a name that does not resolve (or a machine without
// DNS) then looks the name up once, not once per URL, and the scheduler
// spends no tokens on them. ok is false when nothing is known.
func (c *Checker) Known(rawURL string) (Outcome, bool) {
	u, err := parseTarget(rawURL)
	if err != nil {
		return Outcome{}, false
	}
	return c.known(u)
}

func (c *Checker) known(u *url.URL) (Outcome, bool) {
	host := strings.ToLower(u.Hostname())
	if !c.nxdomain.has(host) {
		return Outcome{}, false
	}
	return Outcome{Class: ClassDNS, FinalURL: u.String(),
		Error: fmt.Sprintf("lookup %s: no such host (answered earlier in this job)", host)}, true
}

// hostSet is a bounded concurrent set of host keys. When it grows past max
// it forgets everything: the memory is only an optimisation (a forgotten
// host costs one extra HEAD), so crude eviction is enough.
type hostSet struct {
	m   sync.Map
	n   atomic.Int64
	max int64
}

func (s *hostSet) has(k string) bool {
	_, ok := s.m.Load(k)
	return ok
}

func (s *hostSet) add(k string) {
	if _, loaded := s.m.LoadOrStore(k, struct{}{}); loaded {
		return
	}
	if s.n.Add(1) > s.max {
		s.m.Clear()
		s.n.Store(1)
		s.m.Store(k, struct{}{})
	}
}

// hostKey identifies a server for the HEAD-unsupported memory: lower-case
// host name and port (default port by scheme).
func hostKey(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// Check checks rawURL with one attempt and classifies the outcome. It never
// returns an error: failures are reported in Outcome.Class and Outcome.Error.
// Input that is not an absolute http(s) URL with a host is ClassInvalid with
// Requests 0.
//
// HEAD is sent first and repeated as GET on the same URL when it answers 405
// or 501 (HEAD unsupported, RFC 9110 §15.5.6, §15.6.2), or 400, 403 (without a
// bot-protection signature) or 406, which hosts commonly misuse for HEAD. 404
// does not trigger GET: it is the usual genuine dead-link answer and a second
// request would double what every dead link costs its host. A host:port whose
// HEAD answered 405/501, or whose GET answered differently from its HEAD, is
// remembered (up to 4096 hosts) and later URLs there go straight to GET. A
// GET body is read up to Config.MaxBodyBytes and then closed.
//
// Redirects (301, 302, 303, 307, 308; RFC 9110 §15.4) are followed by hand,
// resolving a relative Location against the current URL (RFC 9110 §10.2.2,
// RFC 3986 §5). A 3xx without Location or with an unparsable one is
// ClassServerError: the server announced a redirect and gave no usable
// target, which is the server's fault, not the link's. A target whose scheme
// is not http or https is ClassInvalid. A URL revisited, or a redirect beyond
// Config.MaxRedirects, is ClassTooManyRedirects.
//
// The final response is classified as: bot-protection signature =>
// ClassBotProtection (header "cf-mitigated: challenge", Cloudflare; header
// "x-amzn-waf-action: challenge" or "captcha", AWS WAF; status 999,
// LinkedIn); 2xx => ClassOK, or ClassRedirect if a redirect was followed;
// 429 => ClassRateLimited; 503 => ClassRateLimited with a Retry-After header,
// otherwise ClassServerError (without Retry-After the server gives no sign
// that slowing down helps); other 4xx => ClassClientError; other 5xx and
// unfollowed 3xx (300, 304) => ClassServerError. Transport failures map to
// ClassForbiddenTarget, ClassTimeout, ClassDNS, ClassTLS, ClassRefused,
// ClassReset, or ClassServerError for anything else (such as a malformed
// response); see the Class constants.
func (c *Checker) Check(ctx context.Context, rawURL string) Outcome {
	u, err := parseTarget(rawURL)
	if err != nil {
		return Outcome{Class: ClassInvalid, FinalURL: rawURL, Error: err.Error()}
	}
	if out, ok := c.known(u); ok {
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.TotalTimeout)
	defer cancel()

	var out Outcome
	start := c.clk.Now()
	visited := map[string]bool{u.String(): true}
	cur := u
	for {
		key := hostKey(cur)
		method := http.MethodHead
		if c.headless.has(key) {
			method = http.MethodGet
		}
		out.Requests++
		var origin *url.URL
		if out.Requests > 1 {
			origin = u
		}
		resp, err := c.do(ctx, method, cur, origin)
		if err == nil && method == http.MethodHead && headFallback(resp.StatusCode, resp.Header) {
			headStatus := resp.StatusCode
			drain(resp, hopDrainBytes)
			method = http.MethodGet
			out.Requests++
			resp, err = c.do(ctx, method, cur, u)
			if err == nil && (headStatus == http.StatusMethodNotAllowed ||
				headStatus == http.StatusNotImplemented || resp.StatusCode != headStatus) {
				c.headless.add(key)
			}
		}
		out.Latency = c.clk.Now().Sub(start)
		out.Method = method
		out.FinalURL = cur.String()
		if err != nil {
			// The final request got no response; earlier hops' status and
			// Retry-After do not describe it.
			out.Status, out.RetryAfter = 0, ""
			out.Class, out.Error = classifyErr(ctx, err)
			return out
		}
		out.Status = resp.StatusCode
		out.RetryAfter = resp.Header.Get("Retry-After")

		if isRedirect(resp.StatusCode) {
			loc := resp.Header.Get("Location")
			drain(resp, min(hopDrainBytes, c.cfg.MaxBodyBytes))
			status := fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
			if len(out.Redirects) >= c.cfg.MaxRedirects {
				out.Class = ClassTooManyRedirects
				out.Error = fmt.Sprintf("%s: stopped after %d redirects (limit %d)", status, len(out.Redirects), c.cfg.MaxRedirects)
				return out
			}
			next, err := resolveLocation(cur, loc)
			if err != nil {
				out.Class = ClassServerError
				if errors.Is(err, errNotHTTP) {
					out.Class = ClassInvalid
				}
				out.Error = fmt.Sprintf("%s: %v", status, err)
				return out
			}
			out.Redirects = append(out.Redirects, Hop{URL: cur.String(), Status: resp.StatusCode})
			if visited[next.String()] {
				out.Class = ClassTooManyRedirects
				out.Error = fmt.Sprintf("%s: redirect loop: %s revisited", status, next)
				return out
			}
			visited[next.String()] = true
			cur = next
			continue
		}

		if method == http.MethodGet {
			drain(resp, c.cfg.MaxBodyBytes)
		} else {
			resp.Body.Close()
		}
		out.Class, out.Error = classifyStatus(resp.StatusCode, resp.Header)
		if out.Class == ClassOK && len(out.Redirects) > 0 {
			out.Class = ClassRedirect
		}
		return out
	}
}

// do sends one request without following redirects. It calls the
// transport directly rather than an http.Client with CheckRedirect returning
// http.ErrUseLastResponse: the client parses Location itself and, when that
// fails, discards the response, losing the status Check must report.
//
// origin is nil for a check's first request, else the check's first URL:
// the request is a follow-up and goes through Config.BeforeFollowUp.
func (c *Checker) do(ctx context.Context, method string, u, origin *url.URL) (*http.Response, error) {
	if origin != nil && c.cfg.BeforeFollowUp != nil {
		release, err := c.cfg.BeforeFollowUp(ctx, origin, u)
		if err != nil {
			return nil, &requestError{method: method, url: u.String(), err: err}
		}
		if release != nil {
			defer release()
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("building %s request for %s: %w", method, u, err)
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	req.Header.Set("Accept", "*/*")
	resp, err := c.transport.RoundTrip(req)
	if err != nil {
		return nil, &requestError{method: method, url: u.String(), err: err}
	}
	return resp, nil
}

// requestError adds the request to a transport error.
type requestError struct {
	method, url string
	err         error
}

func (e *requestError) Error() string { return e.method + " " + e.url + ": " + e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

// drain reads at most n bytes of resp's body and closes it. Read errors are
// ignored: the status line and headers have already arrived and decide the
// outcome.
func drain(resp *http.Response, n int64) {
	if n > 0 {
		_, _ = io.CopyN(io.Discard, resp.Body, n)
	}
	resp.Body.Close()
}

// isRedirect reports whether status is one that Check follows: 301, 302,
// 303, 307 and 308 (RFC 9110 §15.4.2-15.4.9). 300 and 304 are not followed
// (300 leaves the choice to the user; 304 answers a conditional request, which
// Check never sends).
func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}
