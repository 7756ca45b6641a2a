package check

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/urlcheck/urlcheck/pkg/clock"
)

// router serves the behaviours the table tests need. Every path is answered
// on every Host, so one server stands in for several host names.
func router(log *reqLog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		p := r.URL.Path
		switch {
		case p == "/ok":
			w.WriteHeader(200)
		case p == "/404", p == "/410", p == "/500", p == "/502", p == "/300":
			code, _ := strconv.Atoi(p[1:])
			w.WriteHeader(code)
		case p == "/429":
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(429)
		case p == "/503ra":
			w.Header().Set("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT")
			w.WriteHeader(503)
		case p == "/503":
			w.WriteHeader(503)
		case p == "/cf":
			w.Header().Set("Cf-Mitigated", "challenge")
			w.WriteHeader(403)
		case p == "/999":
			w.WriteHeader(999)
		case p == "/awschallenge":
			w.Header().Set("X-Amzn-Waf-Action", "challenge")
			w.WriteHeader(202)
		case p == "/awscaptcha":
			w.Header().Set("X-Amzn-Waf-Action", "captcha")
			w.WriteHeader(405)
		case p == "/rel":
			w.Header().Set("Location", "ok")
			w.WriteHeader(302)
		case p == "/abs":
			w.Header().Set("Location", "http://"+r.Host+"/ok")
			w.WriteHeader(301)
		case p == "/cross":
			_, port, _ := net.SplitHostPort(r.Host)
			w.Header().Set("Location", "http://b.test:"+port+"/ok")
			w.WriteHeader(307)
		case p == "/cross404":
			_, port, _ := net.SplitHostPort(r.Host)
			w.Header().Set("Location", "//b.test:"+port+"/404")
			w.WriteHeader(308)
		case strings.HasPrefix(p, "/chain/"):
			n, _ := strconv.Atoi(strings.TrimPrefix(p, "/chain/"))
			if n == 0 {
				w.WriteHeader(200)
				return
			}
			w.Header().Set("Location", fmt.Sprintf("/chain/%d", n-1))
			w.WriteHeader(302)
		case p == "/loop":
			w.Header().Set("Location", "/loop2")
			w.WriteHeader(301)
		case p == "/loop2":
			w.Header().Set("Location", "http://"+r.Host+"/loop#frag")
			w.WriteHeader(301)
		case p == "/self":
			w.Header().Set("Location", "/self")
			w.WriteHeader(302)
		case p == "/noloc":
			w.WriteHeader(302)
		case p == "/badloc":
			w.Header().Set("Location", "http://[::1")
			w.WriteHeader(302)
		case p == "/ftp":
			w.Header().Set("Location", "ftp://files.test/x")
			w.WriteHeader(302)
		case p == "/mailto":
			w.Header().Set("Location", "mailto:someone@example.com")
			w.WriteHeader(301)
		case strings.HasPrefix(p, "/head405/"):
			if r.Method == http.MethodHead {
				w.WriteHeader(405)
				return
			}
			w.WriteHeader(200)
		case strings.HasPrefix(p, "/head403/"):
			if r.Method == http.MethodHead {
				w.WriteHeader(403)
				return
			}
			w.WriteHeader(200)
		case strings.HasPrefix(p, "/head501/"):
			if r.Method == http.MethodHead {
				w.WriteHeader(501)
				return
			}
			w.WriteHeader(200)
		case strings.HasPrefix(p, "/both400/"):
			w.WriteHeader(400)
		case strings.HasPrefix(p, "/both403/"):
			w.WriteHeader(403)
		case p == "/redir-head405":
			w.Header().Set("Location", "/head405/x")
			w.WriteHeader(302)
		default:
			w.WriteHeader(404)
		}
	})
}

func TestCheckResponses(t *testing.T) {
	var log reqLog
	srv := httptest.NewServer(router(&log))
	defer srv.Close()
	p := port(t, srv)
	a := func(path string) string { return hostURL("http", "a.test", p, path) }
	b := func(path string) string { return hostURL("http", "b.test", p, path) }
	chain := func(from, to int) []Hop {
		var hops []Hop
		for n := from; n > to; n-- {
			hops = append(hops, Hop{URL: a(fmt.Sprintf("/chain/%d", n)), Status: 302})
		}
		return hops
	}

	tests := []struct {
		name       string
		url        string
		class      Class
		status     int
		finalURL   string // "" means the input URL
		redirects  []Hop
		method     string
		requests   int
		retryAfter string
		errHas     string
	}{
		{"ok", a("/ok"), ClassOK, 200, "", nil, "HEAD", 1, "", ""},
		{"404", a("/404"), ClassClientError, 404, "", nil, "HEAD", 1, "", "404 Not Found"},
		{"410", a("/410"), ClassClientError, 410, "", nil, "HEAD", 1, "", "410 Gone"},
		{"500", a("/500"), ClassServerError, 500, "", nil, "HEAD", 1, "", "500 Internal Server Error"},
		{"502", a("/502"), ClassServerError, 502, "", nil, "HEAD", 1, "", "502"},
		{"300 not followed", a("/300"), ClassServerError, 300, "", nil, "HEAD", 1, "", "not a followable redirect"},
		{"429 retry-after", a("/429"), ClassRateLimited, 429, "", nil, "HEAD", 1, "120", "429"},
		{"503 with retry-after", a("/503ra"), ClassRateLimited, 503, "", nil, "HEAD", 1, "Wed, 21 Oct 2015 07:28:00 GMT", "503"},
		{"503 without retry-after", a("/503"), ClassServerError, 503, "", nil, "HEAD", 1, "", "503"},
		{"cloudflare challenge no GET fallback", a("/cf"), ClassBotProtection, 403, "", nil, "HEAD", 1, "", "cf-mitigated"},
		{"linkedin 999", a("/999"), ClassBotProtection, 999, "", nil, "HEAD", 1, "", "999"},
		{"aws waf challenge 202", a("/awschallenge"), ClassBotProtection, 202, "", nil, "HEAD", 1, "", "AWS WAF challenge"},
		{"aws waf captcha 405 no GET fallback", a("/awscaptcha"), ClassBotProtection, 405, "", nil, "HEAD", 1, "", "captcha"},
		{"relative redirect", a("/rel"), ClassRedirect, 200, a("/ok"), []Hop{{a("/rel"), 302}}, "HEAD", 2, "", ""},
		{"absolute redirect", a("/abs"), ClassRedirect, 200, a("/ok"), []Hop{{a("/abs"), 301}}, "HEAD", 2, "", ""},
		{"cross-host redirect", a("/cross"), ClassRedirect, 200, b("/ok"), []Hop{{a("/cross"), 307}}, "HEAD", 2, "", ""},
		{"cross-host scheme-relative to 404", a("/cross404"), ClassClientError, 404, b("/404"), []Hop{{a("/cross404"), 308}}, "HEAD", 2, "", "404"},
		{"chain of 3", a("/chain/3"), ClassRedirect, 200, a("/chain/0"), chain(3, 0), "HEAD", 4, "", ""},
		{"chain of exactly 10", a("/chain/10"), ClassRedirect, 200, a("/chain/0"), chain(10, 0), "HEAD", 11, "", ""},
		{"chain of 11", a("/chain/11"), ClassTooManyRedirects, 302, a("/chain/1"), chain(11, 1), "HEAD", 11, "", "stopped after 10 redirects"},
		{"loop", a("/loop"), ClassTooManyRedirects, 301, a("/loop2"), []Hop{{a("/loop"), 301}, {a("/loop2"), 301}}, "HEAD", 2, "", "redirect loop: " + a("/loop") + " revisited"},
		{"self loop", a("/self"), ClassTooManyRedirects, 302, "", []Hop{{a("/self"), 302}}, "HEAD", 1, "", "redirect loop"},
		{"redirect without Location", a("/noloc"), ClassServerError, 302, "", nil, "HEAD", 1, "", "without Location"},
		{"unparsable Location", a("/badloc"), ClassServerError, 302, "", nil, "HEAD", 1, "", "unparsable Location"},
		{"redirect to ftp", a("/ftp"), ClassInvalid, 302, "", nil, "HEAD", 1, "", `scheme "ftp"`},
		{"redirect to mailto", a("/mailto"), ClassInvalid, 301, "", nil, "HEAD", 1, "", `scheme "mailto"`},
		{"HEAD 405 -> GET", a("/head405/1"), ClassOK, 200, "", nil, "GET", 2, "", ""},
		{"HEAD 403 -> GET", a("/head403/1"), ClassOK, 200, "", nil, "GET", 2, "", ""},
		{"HEAD 501 -> GET", a("/head501/1"), ClassOK, 200, "", nil, "GET", 2, "", ""},
		{"400 on both", a("/both400/1"), ClassClientError, 400, "", nil, "GET", 2, "", "400"},
		{"404 has no GET fallback", a("/head404-is-plain-404"), ClassClientError, 404, "", nil, "HEAD", 1, "", "404"},
		{"redirect then HEAD 405", a("/redir-head405"), ClassRedirect, 200, a("/head405/x"), []Hop{{a("/redir-head405"), 302}}, "GET", 3, "", ""},
		{"fragment dropped", a("/ok#section"), ClassOK, 200, a("/ok"), nil, "HEAD", 1, "", ""},
		{"invalid: ftp scheme", "ftp://a.test/x", ClassInvalid, 0, "", nil, "", 0, "", `scheme "ftp"`},
		{"invalid: no host", "http:///path", ClassInvalid, 0, "", nil, "", 0, "", "missing host"},
		{"invalid: relative", "/just/a/path", ClassInvalid, 0, "", nil, "", 0, "", "missing scheme"},
		{"invalid: bad port", "http://a.test:99999/", ClassInvalid, 0, "", nil, "", 0, "", "port"},
		{"invalid: empty", "  ", ClassInvalid, 0, "", nil, "", 0, "", "empty URL"},
		{"invalid: unparsable", "http://a b.test/", ClassInvalid, 0, "", nil, "", 0, "", "invalid URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New(testConfig())
			defer c.Close()
			got := c.Check(context.Background(), tc.url)
			want := tc.finalURL
			if want == "" {
				want = tc.url
			}
			if got.Class != tc.class {
				t.Errorf("Class = %q, want %q (Error %q)", got.Class, tc.class, got.Error)
			}
			if got.Status != tc.status {
				t.Errorf("Status = %d, want %d", got.Status, tc.status)
			}
			if got.FinalURL != want {
				t.Errorf("FinalURL = %q, want %q", got.FinalURL, want)
			}
			if !reflect.DeepEqual(got.Redirects, tc.redirects) {
				t.Errorf("Redirects = %v, want %v", got.Redirects, tc.redirects)
			}
			if got.Method != tc.method {
				t.Errorf("Method = %q, want %q", got.Method, tc.method)
			}
			if got.Requests != tc.requests {
				t.Errorf("Requests = %d, want %d", got.Requests, tc.requests)
			}
			if got.RetryAfter != tc.retryAfter {
				t.Errorf("RetryAfter = %q, want %q", got.RetryAfter, tc.retryAfter)
			}
			if tc.errHas == "" && got.Error != "" {
				t.Errorf("Error = %q, want none", got.Error)
			}
			if !strings.Contains(got.Error, tc.errHas) {
				t.Errorf("Error = %q, want it to contain %q", got.Error, tc.errHas)
			}
			if len(got.Redirects) > DefaultMaxRedirects {
				t.Errorf("len(Redirects) = %d > %d", len(got.Redirects), DefaultMaxRedirects)
			}
		})
	}
}

// TestRequestsMatchServer checks that Outcome.Requests is what the server
// actually received, since the scheduler charges it to the domain.
func TestRequestsMatchServer(t *testing.T) {
	for _, path := range []string{"/ok", "/chain/4", "/head405/z", "/both400/z", "/loop", "/chain/12", "/redir-head405"} {
		t.Run(path, func(t *testing.T) {
			var log reqLog
			srv := httptest.NewServer(router(&log))
			defer srv.Close()
			c := New(testConfig())
			defer c.Close()
			got := c.Check(context.Background(), hostURL("http", "a.test", port(t, srv), path))
			if n := len(log.get()); got.Requests != n {
				t.Errorf("Requests = %d, server saw %d: %v", got.Requests, n, log.get())
			}
		})
	}
}

func TestMaxRedirectsConfig(t *testing.T) {
	var log reqLog
	srv := httptest.NewServer(router(&log))
	defer srv.Close()
	p := port(t, srv)
	tests := []struct {
		max   int
		path  string
		class Class
		hops  int
	}{
		{2, "/chain/2", ClassRedirect, 2},
		{2, "/chain/3", ClassTooManyRedirects, 2},
		{-1, "/chain/1", ClassTooManyRedirects, 0},
		{-1, "/ok", ClassOK, 0},
	}
	for _, tc := range tests {
		cfg := testConfig()
		cfg.MaxRedirects = tc.max
		c := New(cfg)
		got := c.Check(context.Background(), hostURL("http", "a.test", p, tc.path))
		c.Close()
		if got.Class != tc.class || len(got.Redirects) != tc.hops {
			t.Errorf("max %d %s: got %q with %d hops, want %q with %d", tc.max, tc.path, got.Class, len(got.Redirects), tc.class, tc.hops)
		}
	}
}

func TestHeadUnsupportedMemory(t *testing.T) {
	var log reqLog
	srv := httptest.NewServer(router(&log))
	defer srv.Close()
	p := port(t, srv)
	c := New(testConfig())
	defer c.Close()

	steps := []struct {
		host, path  string
		method      string
		requests    int
		class       Class
		serverHEADs int // HEADs the server saw for this path
		serverGETs  int
	}{
		// First URL of a.test: HEAD 405, GET fallback, host remembered.
		{"a.test", "/head405/1", "GET", 2, ClassOK, 1, 1},
		// Later URLs of a.test go straight to GET.
		{"a.test", "/head405/2", "GET", 1, ClassOK, 0, 1},
		{"a.test", "/ok", "GET", 1, ClassOK, 0, 1},
		// Another host still starts with HEAD.
		{"b.test", "/ok", "HEAD", 1, ClassOK, 1, 0},
		// A 400 on both HEAD and GET says nothing about HEAD: not remembered.
		{"c.test", "/both400/1", "GET", 2, ClassClientError, 1, 1},
		{"c.test", "/ok", "HEAD", 1, ClassOK, 1, 0},
		// HEAD 403 but GET 200: HEAD misbehaves on d.test, remembered.
		{"d.test", "/head403/1", "GET", 2, ClassOK, 1, 1},
		{"d.test", "/head403/2", "GET", 1, ClassOK, 0, 1},
		// 403 on both: not remembered.
		{"e.test", "/both403/1", "GET", 2, ClassClientError, 1, 1},
		{"e.test", "/head405/3", "GET", 2, ClassOK, 1, 1},
		// Upper-case host name and explicit port map to the same key.
		{"A.TEST", "/head405/4", "GET", 1, ClassOK, 0, 1},
	}
	for i, s := range steps {
		before := len(log.get())
		got := c.Check(context.Background(), hostURL("http", s.host, p, s.path))
		if got.Method != s.method || got.Requests != s.requests || got.Class != s.class {
			t.Errorf("step %d %s%s: got method %s requests %d class %q, want %s %d %q",
				i, s.host, s.path, got.Method, got.Requests, got.Class, s.method, s.requests, s.class)
		}
		var heads, gets int
		for _, l := range log.get()[before:] {
			switch {
			case strings.HasPrefix(l, "HEAD "):
				heads++
			case strings.HasPrefix(l, "GET "):
				gets++
			}
		}
		if heads != s.serverHEADs || gets != s.serverGETs {
			t.Errorf("step %d %s%s: server saw %d HEAD and %d GET, want %d and %d",
				i, s.host, s.path, heads, gets, s.serverHEADs, s.serverGETs)
		}
	}
}

func TestHostSetBounded(t *testing.T) {
	s := hostSet{max: 3}
	for i := range 10 {
		k := fmt.Sprintf("h%d:80", i)
		s.add(k)
		if !s.has(k) {
			t.Fatalf("just-added %s missing", k)
		}
		n := 0
		s.m.Range(func(any, any) bool { n++; return true })
		if n > 3 {
			t.Fatalf("after %d adds the set holds %d keys, bound is 3", i+1, n)
		}
	}
	s.add("h9:80") // re-adding is a no-op
	if n := s.n.Load(); n < 1 || n > 3 {
		t.Fatalf("count %d out of range", n)
	}
}

func TestUserAgent(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.UserAgent())
		mu.Unlock()
	}))
	defer srv.Close()
	p := port(t, srv)

	old := Version
	Version = "v9.8.7"
	defer func() { Version = old }()
	tests := []struct {
		ua   string
		want string
	}{
		{"", "urlcheck/v9.8.7 (+https://github.com/urlcheck/urlcheck)"},
		{"custom-agent/1.0", "custom-agent/1.0"},
	}
	for _, tc := range tests {
		mu.Lock()
		seen = nil
		mu.Unlock()
		cfg := testConfig()
		cfg.UserAgent = tc.ua
		c := New(cfg)
		got := c.Check(context.Background(), hostURL("http", "a.test", p, "/"))
		c.Close()
		mu.Lock()
		s := append([]string(nil), seen...)
		mu.Unlock()
		if got.Class != ClassOK || len(s) != 1 || s[0] != tc.want {
			t.Errorf("UserAgent %q: class %q, server saw %q, want [%q]", tc.ua, got.Class, s, tc.want)
		}
	}
}

// stepClock is a clock.Clock whose time only moves when advance is called.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (s *stepClock) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}
func (s *stepClock) advance(d time.Duration) {
	s.mu.Lock()
	s.now = s.now.Add(d)
	s.mu.Unlock()
}
func (s *stepClock) Sleep(ctx context.Context, d time.Duration) error { s.advance(d); return ctx.Err() }
func (s *stepClock) NewTimer(time.Duration) clock.Timer               { panic("unused") }

func TestLatencyUsesConfigClock(t *testing.T) {
	clk := &stepClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clk.advance(5 * time.Second) // each request "takes" 5 simulated seconds
		if r.URL.Path == "/r" {
			http.Redirect(w, r, "/ok", http.StatusFound)
		}
	}))
	defer srv.Close()
	p := port(t, srv)
	tests := []struct {
		path string
		want time.Duration
	}{
		{"/ok", 5 * time.Second},
		{"/r", 10 * time.Second},
	}
	for _, tc := range tests {
		cfg := testConfig()
		cfg.Clock = clk
		c := New(cfg)
		got := c.Check(context.Background(), hostURL("http", "a.test", p, tc.path))
		c.Close()
		if got.Latency != tc.want {
			t.Errorf("%s: Latency = %v, want %v (class %q)", tc.path, got.Latency, tc.want, got.Class)
		}
	}
}

func TestBodyPrefixBound(t *testing.T) {
	const total = 10 << 20
	var written atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(405) // force GET
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(total))
		chunk := make([]byte, 32<<10)
		for sent := 0; sent < total; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			written.Add(int64(len(chunk)))
		}
	}))
	defer srv.Close()

	tests := []struct {
		maxBody int64
		limit   int64 // bytes the client may read off the wire
	}{
		{0, 256 << 10}, // default 16 KiB
		{1000, 64 << 10},
	}
	for _, tc := range tests {
		d := &dialRecorder{}
		cfg := testConfig()
		cfg.MaxBodyBytes = tc.maxBody
		cfg.Dial = d.Dial
		c := New(cfg)
		got := c.Check(context.Background(), hostURL("http", "a.test", port(t, srv), "/big"))
		c.Close()
		if got.Class != ClassOK || got.Method != "GET" {
			t.Fatalf("maxBody %d: class %q method %q (%s)", tc.maxBody, got.Class, got.Method, got.Error)
		}
		if n := d.bytesRead.Load(); n > tc.limit {
			t.Errorf("maxBody %d: read %d bytes of a %d-byte body, want <= %d", tc.maxBody, n, total, tc.limit)
		}
	}
}

func TestTimeouts(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers; ends when the client hangs up
	}))
	defer hang.Close()
	hp := port(t, hang)

	// A TCP listener that accepts but never speaks TLS.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	var held []net.Conn
	var heldMu sync.Mutex
	go func() {
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			heldMu.Lock()
			held = append(held, conn)
			heldMu.Unlock()
		}
	}()
	defer func() {
		heldMu.Lock()
		for _, c := range held {
			c.Close()
		}
		heldMu.Unlock()
	}()
	_, sp, _ := net.SplitHostPort(silent.Addr().String())

	blackholeDial := func(ctx context.Context, _ string, _ netip.AddrPort) (net.Conn, error) {
		<-ctx.Done() // a SYN that is never answered
		return nil, ctx.Err()
	}
	const short = 200 * time.Millisecond
	tests := []struct {
		name   string
		url    string
		mod    func(*Config)
		errHas string
	}{
		{"response header timeout", hostURL("http", "a.test", hp, "/"), func(c *Config) { c.HeaderTimeout = short }, "timeout awaiting response headers"},
		{"total timeout", hostURL("http", "a.test", hp, "/"), func(c *Config) { c.TotalTimeout = short }, "total timeout exceeded"},
		{"connect timeout", hostURL("http", "a.test", hp, "/"), func(c *Config) { c.ConnectTimeout = short; c.Dial = blackholeDial }, "deadline exceeded"},
		{"TLS handshake timeout", hostURL("https", "a.test", sp, "/"), func(c *Config) { c.TLSTimeout = short }, "TLS handshake timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			tc.mod(&cfg)
			c := New(cfg)
			defer c.Close()
			start := time.Now()
			got := c.Check(context.Background(), tc.url)
			el := time.Since(start)
			if got.Class != ClassTimeout || !strings.Contains(got.Error, tc.errHas) {
				t.Errorf("got %q %q, want %q containing %q", got.Class, got.Error, ClassTimeout, tc.errHas)
			}
			if el > 3*time.Second {
				t.Errorf("took %v; the %v timeout did not apply", el, short)
			}
			if got.Status != 0 || got.Requests != 1 {
				t.Errorf("Status %d Requests %d, want 0 and 1", got.Status, got.Requests)
			}
		})
	}

	t.Run("caller cancelled", func(t *testing.T) {
		c := New(testConfig())
		defer c.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		got := c.Check(ctx, hostURL("http", "a.test", hp, "/"))
		if got.Class != ClassTimeout || !strings.Contains(got.Error, "cancelled") {
			t.Errorf("got %q %q", got.Class, got.Error)
		}
	})
}

func TestConnectionErrors(t *testing.T) {
	reset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		conn.(*net.TCPConn).SetLinger(0) // Close sends RST
		conn.Close()
	}))
	defer reset.Close()

	hangup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		conn.Close() // orderly FIN before any response
	}))
	defer hangup.Close()

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, refusedPort, _ := net.SplitHostPort(closed.Addr().String())
	closed.Close()

	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer plain.Close()

	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Proto", r.Proto)
	}))
	tlsSrv.EnableHTTP2 = true
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // expected handshake failures
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(tlsSrv.Certificate())
	tp := port(t, tlsSrv)

	failingResolver := func(context.Context, string) ([]netip.Addr, error) {
		return nil, errors.New("resolver exploded")
	}
	emptyResolver := func(context.Context, string) ([]netip.Addr, error) { return nil, nil }

	tests := []struct {
		name   string
		url    string
		mod    func(*Config)
		class  Class
		errHas string
	}{
		{"reset", hostURL("http", "a.test", port(t, reset), "/"), nil, ClassReset, "connection reset"},
		{"closed before response", hostURL("http", "a.test", port(t, hangup), "/"), nil, ClassReset, "EOF"},
		{"refused", hostURL("http", "a.test", refusedPort, "/"), nil, ClassRefused, "connection refused"},
		{"nxdomain", "http://nosuch.invalid/", nil, ClassDNS, "no such host"},
		{"resolver error", "http://a.test/", func(c *Config) { c.Resolver = failingResolver }, ClassDNS, "lookup a.test: resolver exploded"},
		{"no addresses", "http://a.test/", func(c *Config) { c.Resolver = emptyResolver }, ClassDNS, "no addresses"},
		{"untrusted certificate", hostURL("https", "127.0.0.1", tp, "/"), nil, ClassTLS, "certificate"},
		{"certificate name mismatch", hostURL("https", "a.test", tp, "/"), func(c *Config) { c.RootCAs = pool }, ClassTLS, "a.test"},
		{"https to plain http port", hostURL("https", "a.test", port(t, plain), "/"), nil, ClassTLS, "does not look like a TLS handshake"},
		{"trusted certificate (control)", hostURL("https", "example.com", tp, "/"), func(c *Config) {
			c.RootCAs = pool
			c.Resolver = testResolver(map[string][]netip.Addr{"example.com": {loopback}})
		}, ClassOK, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			if tc.mod != nil {
				tc.mod(&cfg)
			}
			c := New(cfg)
			defer c.Close()
			got := c.Check(context.Background(), tc.url)
			if got.Class != tc.class || !strings.Contains(got.Error, tc.errHas) {
				t.Errorf("got %q %q, want %q containing %q", got.Class, got.Error, tc.class, tc.errHas)
			}
			if tc.class != ClassOK && got.Status != 0 {
				t.Errorf("Status = %d, want 0", got.Status)
			}
		})
	}
}

// TestHTTP2 checks that HTTP/2 is negotiated over TLS despite the custom
// dialer (ForceAttemptHTTP2).
func TestHTTP2(t *testing.T) {
	var proto atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto.Store(r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	cfg := testConfig()
	cfg.RootCAs = pool
	c := New(cfg)
	defer c.Close()
	got := c.Check(context.Background(), hostURL("https", "127.0.0.1", port(t, srv), "/"))
	if got.Class != ClassOK || proto.Load() != "HTTP/2.0" {
		t.Errorf("class %q (%s), server saw %v, want ok over HTTP/2.0", got.Class, got.Error, proto.Load())
	}
}

func TestConcurrentChecks(t *testing.T) {
	var log reqLog
	srv := httptest.NewServer(router(&log))
	defer srv.Close()
	p := port(t, srv)
	c := New(testConfig())
	defer c.Close()
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths := []string{"/ok", "/head405/c", "/chain/2", "/404"}
			want := []Class{ClassOK, ClassOK, ClassRedirect, ClassClientError}
			k := i % len(paths)
			host := fmt.Sprintf("h%d.test", i%3)
			if got := c.Check(context.Background(), hostURL("http", host, p, paths[k])); got.Class != want[k] {
				errs <- fmt.Sprintf("%s%s: %q %s", host, paths[k], got.Class, got.Error)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func BenchmarkCheckLoopback(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	c := New(testConfig())
	defer c.Close()
	u := hostURL("http", "a.test", port(b, srv), "/")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if got := c.Check(context.Background(), u); got.Class != ClassOK {
				b.Errorf("class %q: %s", got.Class, got.Error)
				return
			}
		}
	})
}
