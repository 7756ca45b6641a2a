package simweb

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/urlcheck/urlcheck/pkg/clock"
)

// Host is one simulated host name.
type Host struct {
	// Name is the host name, e.g. "docs.site12.com". It is matched
	// case-insensitively and without a trailing dot.
	Name string
	// Domain is the registrable domain (eTLD+1) whose Limit the host shares,
	// e.g. "site12.com". Empty means Name itself.
	Domain string
	// Latency is the clock time every request to the host takes after it has
	// passed the domain's limit and before the path behaviour runs. <= 0 means
	// none.
	Latency time.Duration
	// HeadHostile makes the host answer every HEAD with 405 Method Not
	// Allowed (RFC 9110 §15.5.6), after the limit check.
	HeadHostile bool
	// BadCert makes the HTTPS listener present, for this host, a certificate
	// signed by a CA that CertPool does not contain, so TLS verification fails.
	BadCert bool
}

// Request is one entry of the request log.
type Request struct {
	// At is the clock time the request arrived.
	At time.Time
	// Host is the normalised Host header; Domain is its registrable domain,
	// or "" for a host the web does not know (answered 421).
	Host, Domain string
	// Method is the HTTP method; Path is the URL path (without query).
	Method, Path string
	// Status is the status code sent, or 0 if no response was sent: the
	// connection was reset (/reset) or the client went away first.
	Status int
	// InFlight is the number of the domain's requests in flight when this one
	// arrived, including this one.
	InFlight int
}

// DomainStats is the traffic one registrable domain saw.
type DomainStats struct {
	// Requests counts every request that reached the domain, whatever its
	// answer.
	Requests int
	// Throttled counts the requests refused by the token bucket (429 or 503
	// per the Limit's Mode).
	Throttled int
	// Violations counts the requests that arrived while MaxConcurrent others
	// were in flight (answered 503).
	Violations int
	// PeakInFlight is the most requests in flight at once, violations
	// included; it exceeds Limit.MaxConcurrent exactly when Violations > 0.
	PeakInFlight int
	// Limit is the domain's hidden limit.
	Limit Limit
}

// domainState is the live state of one registrable domain; guarded by Web.mu.
type domainState struct {
	limit    Limit
	bucket   bucket
	inFlight int
	stats    DomainStats
}

// Web is a simulated web: a table of hosts grouped into registrable domains
// with hidden limits, served by one HTTP and one HTTPS listener on loopback.
// All methods are safe for concurrent use.
//
// Every request first passes its domain's Limit (concurrency cap, then token
// bucket), then sleeps the host's Latency on the clock, then a HEAD to a
// HeadHostile host gets 405; otherwise the path decides:
//
//	/ and /ok[/...]          200 with a small HTML body
//	/status/{code}[/...]     that status (200..599)
//	/redirect/{n}[/...]      301 to /redirect/{n-1}/...; /redirect/0/... is 200
//	/to/{host}/{rest}        302 to http(s)://{host}/{rest}, same scheme
//	/loop[/...]/{x}          302 to the same path ending in "b", or "a" if x is "b"
//	/hang[/...]              no answer until the client gives up (wall cap 10 min, then 504)
//	/reset[/...]             connection closed with RST, no answer
//	/bot[/...]               403 with "cf-mitigated: challenge"
//	/slow/{ms}[/...]         200 after ms milliseconds of clock time
//	anything else            404
//
// A malformed number in a path gets 400; a Host header naming no simulated
// host gets 421 Misdirected Request (RFC 9110 §15.5.20). Every response
// carries a Date header from the clock.
type Web struct {
	clk   clock.Clock
	ca    *authority // trusted: in CertPool
	rogue *authority // untrusted: signs BadCert hosts
	pool  *x509.CertPool

	mu      sync.Mutex
	hosts   map[string]Host
	domains map[string]*domainState
	log     []Request
	certs   map[certKey]*certEntry
	status  map[string]int // host+path -> status set by SetStatus

	started, closed   bool
	httpLn, httpsLn   net.Listener
	httpSrv, httpsSrv *http.Server
	refused           netip.AddrPort // a closed loopback port
	done              chan struct{}  // closed by Close
}

// SetStatus makes requests for path on host (as the URL has them, e.g.
// "site3.com", "/ok/page") answer status instead of what the path says,
// after the domain's limits, until it is called again; status 0 restores the
// path's own behaviour. It simulates a page that breaks or is fixed between
// two scans. It panics on a status outside 200..599 (other than 0).
func (w *Web) SetStatus(host, path string, status int) {
	if status != 0 && (status < 200 || status > 599) {
		panic(fmt.Sprintf("simweb.SetStatus(%q, %q): status %d not in 200..599", host, path, status))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	key := normalizeHost(host) + path
	if status == 0 {
		delete(w.status, key)
		return
	}
	w.status[key] = status
}

// New returns an empty web whose latency, rates, Retry-After values and Date
// headers all follow clk. It generates the trusted and the rogue CA (ECDSA
// P-256); it panics only if the system's random source fails.
func New(clk clock.Clock) *Web {
	if clk == nil {
		panic("simweb.New: nil clock")
	}
	w := &Web{
		clk:     clk,
		hosts:   make(map[string]Host),
		domains: make(map[string]*domainState),
		status:  make(map[string]int),
		certs:   make(map[certKey]*certEntry),
		done:    make(chan struct{}),
	}
	nb, na := w.validity(10)
	var err error
	if w.ca, err = newAuthority("urlcheck simweb CA", nb, na); err != nil {
		panic(fmt.Sprintf("simweb.New: %v", err))
	}
	if w.rogue, err = newAuthority("urlcheck simweb rogue CA", nb, na); err != nil {
		panic(fmt.Sprintf("simweb.New: %v", err))
	}
	w.pool = x509.NewCertPool()
	w.pool.AddCert(w.ca.cert)
	return w
}

// domainLocked returns the state of domain d, creating it; w.mu must be held.
func (w *Web) domainLocked(d string) *domainState {
	ds := w.domains[d]
	if ds == nil {
		ds = &domainState{}
		w.domains[d] = ds
	}
	return ds
}

// SetLimit sets the hidden limit of registrable domain domain (matched
// case-insensitively) and resets its token bucket to full. It may be called
// before or after Start. It panics with a message naming the problem if
// domain is empty or l has a negative or non-finite Rate or Burst or an
// unknown Mode: those are programming errors in a test setup.
func (w *Web) SetLimit(domain string, l Limit) {
	d := normalizeHost(domain)
	if d == "" {
		panic("simweb.SetLimit: empty domain")
	}
	if err := l.validate(); err != nil {
		panic(fmt.Sprintf("simweb.SetLimit(%q): %v", domain, err))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ds := w.domainLocked(d)
	ds.limit = l
	ds.bucket = newBucket(l.Rate, l.Burst)
	ds.stats.Limit = l
}

// AddHost adds h, or replaces the host of the same name. It may be called
// before or after Start (a changed BadCert affects certificates not yet
// issued for the name). It panics if h.Name is empty or contains a character
// not allowed in a host name, which is a programming error in a test setup.
func (w *Web) AddHost(h Host) {
	name := normalizeHost(h.Name)
	if name == "" {
		panic("simweb.AddHost: empty host name")
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			panic(fmt.Sprintf("simweb.AddHost: host name %q: invalid character %q", h.Name, c))
		}
	}
	h.Name = name
	h.Domain = normalizeHost(h.Domain)
	if h.Domain == "" {
		h.Domain = name
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hosts[name] = h
	w.domainLocked(h.Domain)
}

// Start opens the HTTP and HTTPS listeners on 127.0.0.1 with ports chosen by
// the system and starts serving. It returns an error if the web was already
// started or a listener cannot be opened.
func (w *Web) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return errors.New("simweb: Start: already started")
	}
	// Reserve a port and close it again: dialing it later is refused.
	probe, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("simweb: Start: reserve closed port: %w", err)
	}
	w.refused = probe.Addr().(*net.TCPAddr).AddrPort()
	if err := probe.Close(); err != nil {
		return fmt.Errorf("simweb: Start: close reserved port: %w", err)
	}
	httpLn, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("simweb: Start: HTTP listener: %w", err)
	}
	tcpLn, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		httpLn.Close()
		return fmt.Errorf("simweb: Start: HTTPS listener: %w", err)
	}
	tlsCfg := &tls.Config{
		GetCertificate: w.getCertificate,
		NextProtos:     []string{"http/1.1"}, // HTTP/1.1 only: /reset needs Hijack
		MinVersion:     tls.VersionTLS12,
	}
	quiet := log.New(io.Discard, "", 0) // handshake failures are expected (BadCert)
	w.httpLn, w.httpsLn = httpLn, tls.NewListener(tcpLn, tlsCfg)
	w.httpSrv = &http.Server{Handler: w, ErrorLog: quiet, ReadHeaderTimeout: time.Minute}
	w.httpsSrv = &http.Server{Handler: w, ErrorLog: quiet, ReadHeaderTimeout: time.Minute, TLSConfig: tlsCfg,
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}}
	w.started = true
	go w.httpSrv.Serve(w.httpLn)
	go w.httpsSrv.Serve(w.httpsLn)
	return nil
}

// Close stops both listeners, closes all connections (which ends /hang
// requests) and returns the first error from closing a server. Closing a web
// that was never started, or closing twice, returns nil.
func (w *Web) Close() error {
	w.mu.Lock()
	if !w.started || w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	close(w.done)
	w.mu.Unlock()
	err1 := w.httpSrv.Close()
	err2 := w.httpsSrv.Close()
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("simweb: Close: %w", err)
	}
	return nil
}

// HTTPAddr returns the HTTP listener's address ("127.0.0.1:port"), or "" before
// Start.
func (w *Web) HTTPAddr() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.httpLn == nil {
		return ""
	}
	return w.httpLn.Addr().String()
}

// HTTPSAddr returns the HTTPS listener's address ("127.0.0.1:port"), or ""
// before Start.
func (w *Web) HTTPSAddr() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.httpsLn == nil {
		return ""
	}
	return w.httpsLn.Addr().String()
}

// CertPool returns a new pool holding the web's CA certificate, for
// tls.Config.RootCAs. Leaves of BadCert hosts do not verify against it.
func (w *Web) CertPool() *x509.CertPool { return w.pool.Clone() }

// Resolver resolves a simulated host name (case-insensitive, trailing dot
// allowed) to [127.0.0.1]. An IP literal resolves to itself. Any other name
// gets a *net.DNSError with IsNotFound set, as a real resolver reports
// NXDOMAIN; a done ctx gets ctx.Err().
func (w *Web) Resolver(ctx context.Context, host string) ([]netip.Addr, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("simweb: resolve %q: %w", host, err)
	}
	name := normalizeHost(host)
	if a, err := netip.ParseAddr(name); err == nil {
		return []netip.Addr{a}, nil
	}
	w.mu.Lock()
	_, ok := w.hosts[name]
	w.mu.Unlock()
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1})}, nil
}

// Dial connects to a simulated address: port 80 reaches the HTTP listener and
// port 443 the HTTPS listener; any other port dials a closed loopback port,
// so the error is a real "connection refused" (errors.Is(err,
// syscall.ECONNREFUSED)). network must be "tcp" or "tcp4" and addr a loopback
// address (which is all Resolver returns); otherwise, or before Start, Dial
// returns an error without touching the network.
func (w *Web) Dial(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error) {
	if network != "tcp" && network != "tcp4" {
		return nil, fmt.Errorf("simweb: dial %s %v: unsupported network %q (want tcp)", network, addr, network)
	}
	if !addr.Addr().IsLoopback() {
		return nil, fmt.Errorf("simweb: dial %v: not a loopback address; the simulated web lives on 127.0.0.1", addr)
	}
	w.mu.Lock()
	started, httpLn, httpsLn, refused := w.started, w.httpLn, w.httpsLn, w.refused
	w.mu.Unlock()
	if !started {
		return nil, fmt.Errorf("simweb: dial %v: web not started", addr)
	}
	var target string
	switch addr.Port() {
	case 80:
		target = httpLn.Addr().String()
	case 443:
		target = httpsLn.Addr().String()
	default:
		target = refused.String()
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp4", target)
	if err != nil {
		return nil, fmt.Errorf("simweb: dial %v: %w", addr, err)
	}
	return c, nil
}

// Transport returns a new HTTP/1.1 transport wired to Resolver, Dial and
// CertPool, for tests and demos that need a plain http.Client on the web.
func (w *Web) Transport() *http.Transport {
	return &http.Transport{
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(address)
			if err != nil {
				return nil, fmt.Errorf("simweb: dial %q: %w", address, err)
			}
			p, err := strconv.ParseUint(port, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("simweb: dial %q: bad port: %w", address, err)
			}
			addrs, err := w.Resolver(ctx, host)
			if err != nil {
				return nil, err
			}
			return w.Dial(ctx, network, netip.AddrPortFrom(addrs[0], uint16(p)))
		},
		TLSClientConfig:     &tls.Config{RootCAs: w.CertPool()},
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     30 * time.Second,
	}
}

// Log returns a copy of the request log in completion order.
func (w *Web) Log() []Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Request(nil), w.log...)
}

// Stats returns the traffic of every registrable domain the web knows (from
// SetLimit or AddHost), keyed by domain.
func (w *Web) Stats() map[string]DomainStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := make(map[string]DomainStats, len(w.domains))
	for d, ds := range w.domains {
		m[d] = ds.stats
	}
	return m
}
