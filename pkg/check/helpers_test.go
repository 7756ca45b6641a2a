package check

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var loopback = netip.MustParseAddr("127.0.0.1")

// testResolver resolves names from m, and any other name ending in ".test"
// to 127.0.0.1. Everything else fails like NXDOMAIN. It never touches the
// network.
func testResolver(m map[string][]netip.Addr) func(context.Context, string) ([]netip.Addr, error) {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, ok := m[host]; ok {
			return a, nil
		}
		if strings.HasSuffix(host, ".test") {
			return []netip.Addr{loopback}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
}

// dialRecorder is a Config.Dial that records every address it is asked to
// dial, redirects the addresses in remap to loopback (same port), and counts
// bytes read from its connections.
type dialRecorder struct {
	remap     map[netip.Addr]bool
	mu        sync.Mutex
	addrs     []netip.AddrPort
	bytesRead atomic.Int64
}

func (d *dialRecorder) Dial(ctx context.Context, network string, ap netip.AddrPort) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, ap)
	d.mu.Unlock()
	target := ap
	if d.remap[ap.Addr()] {
		target = netip.AddrPortFrom(loopback, ap.Port())
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, target.String())
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: &d.bytesRead}, nil
}

func (d *dialRecorder) dialed() []netip.AddrPort {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]netip.AddrPort(nil), d.addrs...)
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// reqLog records the requests a test server saw, as "METHOD host path".
type reqLog struct {
	mu  sync.Mutex
	log []string
}

func (l *reqLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, r.Method+" "+r.Host+" "+r.URL.Path)
}

func (l *reqLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.log...)
}

func (l *reqLog) count(prefix string) int {
	n := 0
	for _, s := range l.get() {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// testConfig is a Config for loopback tests: private targets allowed, the
// test resolver, short timeouts so a bug cannot hang the suite.
func testConfig() Config {
	return Config{
		AllowPrivate:   true,
		Resolver:       testResolver(nil),
		ConnectTimeout: 2 * time.Second,
		TLSTimeout:     10 * time.Second, // the first handshake loads system roots, slow under -race
		HeaderTimeout:  2 * time.Second,
		TotalTimeout:   5 * time.Second,
	}
}

// port returns the port of an httptest server.
func port(t testing.TB, srv *httptest.Server) string {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// hostURL builds scheme://host:port/path.
func hostURL(scheme, host, port, path string) string {
	return fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, port), path)
}
