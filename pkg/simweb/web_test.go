package simweb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/urlcheck/urlcheck/pkg/clock"
)

// newPathWeb is a started web with two unlimited domains on a manual clock.
func newPathWeb(t *testing.T) (*Web, *manualClock) {
	t.Helper()
	clk := newManualClock()
	w := New(clk)
	w.AddHost(Host{Name: "www.a.test", Domain: "a.test"})
	w.AddHost(Host{Name: "docs.b.test", Domain: "b.test"})
	w.AddHost(Host{Name: "slow.b.test", Domain: "b.test", Latency: 250 * time.Millisecond})
	w.AddHost(Host{Name: "head.a.test", Domain: "a.test", HeadHostile: true})
	startWeb(t, w)
	return w, clk
}

func TestPathBehaviour(t *testing.T) {
	w, clk := newPathWeb(t)
	c := rawClient(t, w)
	tests := []struct {
		name, method, url string
		status            int
		location          string
		header            map[string]string
		bodyHas           string
		advance           time.Duration // clock time the request must take
	}{
		{"root", "GET", "http://www.a.test/", 200, "", nil, "<html>", 0},
		{"ok GET", "GET", "http://www.a.test/ok/x/y.html", 200, "", map[string]string{"Content-Type": "text/html; charset=utf-8"}, "<html>", 0},
		{"ok https", "GET", "https://www.a.test/ok", 200, "", nil, "<html>", 0},
		{"ok HEAD", "HEAD", "http://www.a.test/ok/x", 200, "", nil, "", 0},
		{"host case and dot", "GET", "http://WWW.A.TEST./ok", 200, "", nil, "", 0},
		{"404", "GET", "http://www.a.test/status/404", 404, "", nil, "Not Found", 0},
		{"410 with suffix", "GET", "http://www.a.test/status/410/page-3", 410, "", nil, "", 0},
		{"500", "GET", "http://docs.b.test/status/500", 500, "", nil, "", 0},
		{"204 no body", "GET", "http://docs.b.test/status/204", 204, "", nil, "", 0},
		{"status too small", "GET", "http://www.a.test/status/99", 400, "", nil, "200..599", 0},
		{"status not a number", "GET", "http://www.a.test/status/abc", 400, "", nil, "abc", 0},
		{"redirect n", "GET", "http://www.a.test/redirect/2/x/y?q=1", 301, "/redirect/1/x/y?q=1", nil, "", 0},
		{"redirect 0", "GET", "http://www.a.test/redirect/0/x", 200, "", nil, "", 0},
		{"redirect bad n", "GET", "http://www.a.test/redirect/-1/x", 400, "", nil, "", 0},
		{"to http", "GET", "http://www.a.test/to/docs.b.test/ok/z", 302, "http://docs.b.test/ok/z", nil, "", 0},
		{"to https", "GET", "https://www.a.test/to/docs.b.test/ok/z", 302, "https://docs.b.test/ok/z", nil, "", 0},
		{"to no host", "GET", "http://www.a.test/to/", 400, "", nil, "missing host", 0},
		{"loop a", "GET", "http://www.a.test/loop/a", 302, "/loop/b", nil, "", 0},
		{"loop b", "GET", "http://www.a.test/loop/b", 302, "/loop/a", nil, "", 0},
		{"loop id", "GET", "http://www.a.test/loop/c7/a", 302, "/loop/c7/b", nil, "", 0},
		{"bot", "GET", "http://www.a.test/bot/x", 403, "", map[string]string{"Cf-Mitigated": "challenge"}, "", 0},
		{"slow", "GET", "http://www.a.test/slow/1500", 200, "", nil, "", 1500 * time.Millisecond},
		{"slow bad", "GET", "http://www.a.test/slow/x", 400, "", nil, "", 0},
		{"host latency", "GET", "http://slow.b.test/ok", 200, "", nil, "", 250 * time.Millisecond},
		{"unknown path", "GET", "http://www.a.test/nope", 404, "", nil, "", 0},
		{"head hostile HEAD", "HEAD", "http://head.a.test/ok", 405, "", map[string]string{"Allow": "GET"}, "", 0},
		{"head hostile GET", "GET", "http://head.a.test/ok", 200, "", nil, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := clk.Now()
			resp, body := do(t, c, tc.method, tc.url)
			if resp.StatusCode != tc.status {
				t.Fatalf("status = %d, want %d (body %q)", resp.StatusCode, tc.status, body)
			}
			if got := resp.Header.Get("Location"); got != tc.location {
				t.Errorf("Location = %q, want %q", got, tc.location)
			}
			for k, v := range tc.header {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if !strings.Contains(body, tc.bodyHas) {
				t.Errorf("body %q does not contain %q", body, tc.bodyHas)
			}
			if tc.method == "HEAD" && body != "" {
				t.Errorf("HEAD got body %q", body)
			}
			if got := clk.Now().Sub(before); got != tc.advance {
				t.Errorf("request took %v of clock time, want %v", got, tc.advance)
			}
			if got, want := resp.Header.Get("Date"), clk.Now().UTC().Format(http.TimeFormat); got != want {
				t.Errorf("Date = %q, want the clock's %q", got, want)
			}
		})
	}
	// Every request was logged with its status, none left in flight.
	log := w.Log()
	if len(log) != len(tests) {
		t.Fatalf("log has %d entries, want %d", len(log), len(tests))
	}
	for i, r := range log {
		if r.Status != tests[i].status || r.InFlight != 1 {
			t.Errorf("log[%d] = %+v, want status %d in flight 1", i, r, tests[i].status)
		}
	}
	st := w.Stats()
	if st["a.test"].Requests+st["b.test"].Requests != len(tests) {
		t.Errorf("stats %+v do not add up to %d requests", st, len(tests))
	}
}

func TestUnknownHostHeader(t *testing.T) {
	w, _ := newPathWeb(t)
	// Dial the listener directly with a Host the web does not know.
	resp, err := http.Get("http://" + w.HTTPAddr() + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("status = %d, want 421", resp.StatusCode)
	}
	if l := w.Log(); len(l) != 1 || l[0].Domain != "" || l[0].Status != 421 {
		t.Errorf("log = %+v, want one 421 without domain", l)
	}
}

func TestRedirectsFollowed(t *testing.T) {
	w, _ := newPathWeb(t)
	tr := w.Transport()
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	tests := []struct {
		url      string
		finalURL string // "" means an error is expected
	}{
		{"http://www.a.test/redirect/3/x", "http://www.a.test/redirect/0/x"},
		{"https://www.a.test/to/docs.b.test/ok/z", "https://docs.b.test/ok/z"},
		{"http://www.a.test/loop/a", ""},
	}
	for _, tc := range tests {
		resp, err := c.Get(tc.url)
		if tc.finalURL == "" {
			if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
				t.Errorf("GET %s: err = %v, want a redirect loop", tc.url, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("GET %s: %v", tc.url, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Request.URL.String() != tc.finalURL {
			t.Errorf("GET %s ended at %s with %d, want %s with 200", tc.url, resp.Request.URL, resp.StatusCode, tc.finalURL)
		}
	}
}

func TestResetAndHang(t *testing.T) {
	w, _ := newPathWeb(t)
	c := rawClient(t, w)
	for _, scheme := range []string{"http", "https"} {
		_, err := c.Get(scheme + "://www.a.test/reset/1")
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("%s /reset: err = %v, want ECONNRESET", scheme, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, "GET", scheme+"://www.a.test/hang/1", nil)
		_, err = c.Do(req)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s /hang: err = %v, want deadline exceeded", scheme, err)
		}
	}
	waitFor(t, "hung requests to end", func() bool { return w.inFlightOf("a.test") == 0 })
	for _, r := range w.Log() {
		if r.Status != 0 {
			t.Errorf("log %+v: want status 0 (no response)", r)
		}
	}
}

func TestCloseEndsHang(t *testing.T) {
	w := New(newManualClock())
	w.AddHost(Host{Name: "www.a.test"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	tr := w.Transport()
	defer tr.CloseIdleConnections()
	errc := make(chan error, 1)
	go func() {
		_, err := (&http.Client{Transport: tr}).Get("http://www.a.test/hang")
		errc <- err
	}()
	waitFor(t, "hang to start", func() bool { return w.inFlightOf("www.a.test") == 1 })
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err == nil {
		t.Error("hung GET succeeded after Close, want an error")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if err := w.Start(); err == nil {
		t.Error("Start after Close succeeded, want already-started error")
	}
}

func TestThrottleModes(t *testing.T) {
	tests := []struct {
		mode       ThrottleMode
		status     int
		dateHeader bool
		noHeader   bool
	}{
		{Throttle429Seconds, 429, false, false},
		{Throttle429Date, 429, true, false},
		{Throttle429None, 429, false, true},
		{Throttle503, 503, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.mode.String(), func(t *testing.T) {
			clk := newManualClock()
			w := New(clk)
			w.AddHost(Host{Name: "www.a.test", Domain: "a.test"})
			w.AddHost(Host{Name: "api.a.test", Domain: "a.test"})
			w.SetLimit("a.test", Limit{Rate: 0.5, Burst: 2, Mode: tc.mode})
			startWeb(t, w)
			c := rawClient(t, w)
			// The burst is shared by both hosts of the domain.
			for _, u := range []string{"http://www.a.test/ok", "https://api.a.test/ok"} {
				if resp, _ := do(t, c, "GET", u); resp.StatusCode != 200 {
					t.Fatalf("GET %s within burst = %d", u, resp.StatusCode)
				}
			}
			// Each refused request: advance, expected Retry-After seconds.
			steps := []struct {
				advance time.Duration
				secs    string
			}{
				{0, "2"},                      // empty bucket: 1 token / 0.5 r/s
				{time.Second, "1"},            // 0.5 token
				{250 * time.Millisecond, "1"}, // 0.625 token: 0.75 s rounds up
			}
			for i, s := range steps {
				clk.Advance(s.advance)
				resp, _ := do(t, c, "GET", "http://api.a.test/ok")
				if resp.StatusCode != tc.status {
					t.Fatalf("step %d: status %d, want %d", i, resp.StatusCode, tc.status)
				}
				ra := resp.Header.Get("Retry-After")
				switch {
				case tc.noHeader:
					if ra != "" {
						t.Errorf("step %d: Retry-After %q, want none", i, ra)
					}
				case tc.dateHeader:
					at, err := http.ParseTime(ra)
					now := clk.Now()
					wait, _ := time.ParseDuration(s.secs + "s")
					if err != nil || at.Before(now) || at.Sub(now) > wait+time.Second {
						t.Errorf("step %d: Retry-After %q (err %v) is not an HTTP-date within %v of %v", i, ra, err, wait+time.Second, now)
					}
				default:
					if ra != s.secs {
						t.Errorf("step %d: Retry-After %q, want %q", i, ra, s.secs)
					}
				}
			}
			// Honest: after waiting what Retry-After said, a request is admitted.
			clk.Advance(time.Second)
			if resp, _ := do(t, c, "GET", "http://www.a.test/ok"); resp.StatusCode != 200 {
				t.Errorf("after Retry-After: status %d, want 200", resp.StatusCode)
			}
			st := w.Stats()["a.test"]
			if st.Requests != 6 || st.Throttled != 3 || st.Violations != 0 || st.Limit.Mode != tc.mode {
				t.Errorf("stats = %+v, want 6 requests, 3 throttled", st)
			}
		})
	}
}

func TestConcurrencyCap(t *testing.T) {
	clk := newManualClock()
	w := New(clk)
	w.AddHost(Host{Name: "www.a.test", Domain: "a.test"})
	w.AddHost(Host{Name: "docs.a.test", Domain: "a.test"})
	// The clock never moves: only the 2 burst tokens exist.
	w.SetLimit("a.test", Limit{Rate: 0.001, Burst: 2, MaxConcurrent: 1})
	startWeb(t, w)
	c := rawClient(t, w)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://www.a.test/hang", nil)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "hang in flight", func() bool { return w.inFlightOf("a.test") == 1 })

	resp, _ := do(t, c, "GET", "https://docs.a.test/ok")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("over the cap: %d Retry-After %q, want 503 with 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	cancel()
	wg.Wait()
	waitFor(t, "hang to end", func() bool { return w.inFlightOf("a.test") == 0 })

	// The violation cost no token: one is left, then the bucket is empty.
	for i, want := range []int{200, 429} {
		if resp, _ := do(t, c, "GET", "http://docs.a.test/ok"); resp.StatusCode != want {
			t.Errorf("request %d after the hang: %d, want %d", i, resp.StatusCode, want)
		}
	}
	st := w.Stats()["a.test"]
	want := DomainStats{Requests: 4, Throttled: 1, Violations: 1, PeakInFlight: 2, Limit: st.Limit}
	if st != want {
		t.Errorf("stats = %+v, want %+v", st, want)
	}
	var sawViolation bool
	for _, r := range w.Log() {
		if r.Status == 503 {
			sawViolation = r.InFlight == 2 && r.Host == "docs.a.test" && r.Domain == "a.test"
		}
	}
	if !sawViolation {
		t.Errorf("log %+v has no 503 entry with 2 in flight", w.Log())
	}
}

// TestRateWindow counts 200 vs 429 over a fixed window of clock time on a
// manual clock, requests every step: the bucket admits exactly Burst at once
// and then Rate per second. Steps and rates are binary fractions, so the
// float arithmetic is exact.
func TestRateWindow(t *testing.T) {
	tests := []struct {
		rate, burst  float64
		step, window time.Duration
		wantOK       int
	}{
		{rate: 8, burst: 5, step: time.Second / 32, window: 3 * time.Second, wantOK: 5 + 8*3},
		{rate: 4, burst: 1, step: time.Second / 16, window: 2 * time.Second, wantOK: 1 + 4*2},
		{rate: 0.5, burst: 2, step: time.Second / 4, window: 10 * time.Second, wantOK: 2 + 5},
		{rate: 2, burst: 3, step: time.Second, window: 6 * time.Second, wantOK: 7}, // 1 r/s under a 2 r/s limit: all admitted
	}
	for _, tc := range tests {
		clk := newManualClock()
		w := New(clk)
		w.AddHost(Host{Name: "www.r.test", Domain: "r.test"})
		w.SetLimit("r.test", Limit{Rate: tc.rate, Burst: tc.burst})
		startWeb(t, w)
		c := rawClient(t, w)
		ok, total := 0, 0
		for el := time.Duration(0); el <= tc.window; el += tc.step {
			resp, _ := do(t, c, "GET", "http://www.r.test/ok")
			if resp.StatusCode == 200 {
				ok++
			}
			total++
			clk.Advance(tc.step)
		}
		if ok != tc.wantOK {
			t.Errorf("rate %v burst %v every %v for %v: %d of %d admitted, want %d", tc.rate, tc.burst, tc.step, tc.window, ok, total, tc.wantOK)
		}
		if st := w.Stats()["r.test"]; st.Throttled != total-ok {
			t.Errorf("stats %+v, want %d throttled", st, total-ok)
		}
	}
}

// TestRateWindowScaled drives the hidden bucket over a real listener on a
// scaled clock, as integration tests will. Every answer must match a replay
// of the bucket at the logged arrival times, and the count admitted must not
// exceed Burst + Rate*span. Whether it comes close to that depends on the
// machine not stalling the loop (a stall overflows the bucket), so the lower
// bound (-2) is checked only when no gap exceeded Burst/Rate of clock time.
func TestRateWindowScaled(t *testing.T) {
	tests := []struct {
		rate, burst float64
		window      time.Duration // simulated
	}{
		{10, 5, 3 * time.Second},
		{4, 2, 3 * time.Second},
	}
	for _, tc := range tests {
		clk := clock.NewScaled(epoch, 20)
		w := New(clk)
		w.AddHost(Host{Name: "www.r.test", Domain: "r.test"})
		w.SetLimit("r.test", Limit{Rate: tc.rate, Burst: tc.burst, Mode: Throttle429Seconds})
		startWeb(t, w)
		c := rawClient(t, w)
		ok, throttled := 0, 0
		start := clk.Now()
		for clk.Now().Sub(start) < tc.window {
			resp, _ := do(t, c, "GET", "http://www.r.test/ok")
			switch resp.StatusCode {
			case 200:
				ok++
			case 429:
				throttled++
			default:
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
		log := w.Log()
		ref := newBucket(tc.rate, tc.burst)
		stalled := false
		for i, r := range log {
			if admitted, _ := ref.take(r.At); admitted != (r.Status == 200) {
				t.Fatalf("request %d at +%v: status %d, replayed bucket says admitted=%v", i, r.At.Sub(log[0].At), r.Status, admitted)
			}
			if i > 0 && r.At.Sub(log[i-1].At).Seconds() > tc.burst/tc.rate {
				stalled = true
			}
		}
		span := log[len(log)-1].At.Sub(log[0].At).Seconds()
		want := tc.burst + tc.rate*span
		if float64(ok) > want {
			t.Errorf("rate %v burst %v: %d admitted over %.2f s, more than a token bucket allows (%.2f)", tc.rate, tc.burst, ok, span, want)
		}
		if stalled {
			t.Logf("rate %v: the request loop stalled; lower bound not checked (%d admitted, bound %.1f)", tc.rate, ok, want)
		} else if float64(ok) < want-2 {
			t.Errorf("rate %v burst %v: %d admitted over %.2f s, want %.1f (-2)", tc.rate, tc.burst, ok, span, want)
		}
		if throttled == 0 || ok < int(tc.burst) {
			t.Errorf("rate %v: %d admitted, %d throttled; want the burst admitted and some throttled", tc.rate, ok, throttled)
		}
		if st := w.Stats()["r.test"]; st.Requests != ok+throttled || st.Throttled != throttled {
			t.Errorf("stats %+v, want %d requests %d throttled", st, ok+throttled, throttled)
		}
	}
}

func TestLatencyScaled(t *testing.T) {
	clk := clock.NewScaled(epoch, 50)
	w := New(clk)
	w.AddHost(Host{Name: "www.l.test", Latency: 500 * time.Millisecond})
	startWeb(t, w)
	c := rawClient(t, w)
	start := clk.Now()
	if resp, _ := do(t, c, "GET", "http://www.l.test/slow/1000"); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if el := clk.Now().Sub(start); el < 1500*time.Millisecond {
		t.Errorf("latency 500ms + /slow/1000 took %v of simulated time, want >= 1.5s", el)
	}
}

func TestResolver(t *testing.T) {
	w := New(newManualClock())
	w.AddHost(Host{Name: "www.a.test"})
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		ctx      context.Context
		host     string
		want     string // address, or "" for an error
		notFound bool
	}{
		{context.Background(), "www.a.test", "127.0.0.1", false},
		{context.Background(), "WWW.A.Test.", "127.0.0.1", false},
		{context.Background(), "127.0.0.1", "127.0.0.1", false},
		{context.Background(), "nope.a.test", "", true},
		{context.Background(), "a.test", "", true},
		{canceled, "www.a.test", "", false},
	}
	for _, tc := range tests {
		addrs, err := w.Resolver(tc.ctx, tc.host)
		if tc.want != "" {
			if err != nil || len(addrs) != 1 || addrs[0].String() != tc.want {
				t.Errorf("Resolver(%q) = %v, %v; want [%s]", tc.host, addrs, err, tc.want)
			}
			continue
		}
		var dnsErr *net.DNSError
		if err == nil || errors.As(err, &dnsErr) != tc.notFound || (tc.notFound && !dnsErr.IsNotFound) {
			t.Errorf("Resolver(%q) = %v, %v; want error (not found: %v)", tc.host, addrs, err, tc.notFound)
		}
	}
}

func TestDial(t *testing.T) {
	w := New(newManualClock())
	lo := netip.MustParseAddr("127.0.0.1")
	if _, err := w.Dial(context.Background(), "tcp", netip.AddrPortFrom(lo, 80)); err == nil {
		t.Error("Dial before Start succeeded")
	}
	startWeb(t, w)
	tests := []struct {
		network string
		addr    netip.AddrPort
		want    string // remote address, or "" for an error
		refused bool
	}{
		{"tcp", netip.AddrPortFrom(lo, 80), w.HTTPAddr(), false},
		{"tcp4", netip.AddrPortFrom(lo, 443), w.HTTPSAddr(), false},
		{"tcp", netip.AddrPortFrom(lo, 8080), "", true},
		{"tcp", netip.MustParseAddrPort("10.0.0.1:80"), "", false},
		{"udp", netip.AddrPortFrom(lo, 80), "", false},
	}
	for _, tc := range tests {
		conn, err := w.Dial(context.Background(), tc.network, tc.addr)
		if tc.want != "" {
			if err != nil || conn.RemoteAddr().String() != tc.want {
				t.Errorf("Dial(%s, %v) = %v, %v; want a conn to %s", tc.network, tc.addr, conn, err, tc.want)
			}
			if conn != nil {
				conn.Close()
			}
			continue
		}
		if err == nil {
			conn.Close()
			t.Errorf("Dial(%s, %v) succeeded, want an error", tc.network, tc.addr)
		} else if errors.Is(err, syscall.ECONNREFUSED) != tc.refused {
			t.Errorf("Dial(%s, %v) = %v; connection refused: want %v", tc.network, tc.addr, err, tc.refused)
		}
	}
}

func TestSetupPanics(t *testing.T) {
	w := New(newManualClock())
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"empty host", func() { w.AddHost(Host{}) }, "empty host name"},
		{"bad host char", func() { w.AddHost(Host{Name: "a b.test"}) }, "invalid character"},
		{"empty domain", func() { w.SetLimit("", Limit{}) }, "empty domain"},
		{"negative rate", func() { w.SetLimit("a.test", Limit{Rate: -1}) }, "Rate"},
	}
	for _, tc := range tests {
		func() {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tc.want) {
					t.Errorf("%s: panic %v, want one mentioning %q", tc.name, r, tc.want)
				}
			}()
			tc.f()
		}()
	}
}

// TestSetStatus: a page can be broken and fixed between two scans.
func TestSetStatus(t *testing.T) {
	w, _ := newPathWeb(t)
	c := rawClient(t, w)
	get := func(u string) int {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	steps := []struct {
		name      string
		host      string
		path      string
		status    int // to set; -1 = set nothing
		url, want string
	}{
		{"own behaviour", "", "", -1, "http://www.a.test/ok/page", "200"},
		{"broken", "www.a.test", "/ok/page", 404, "http://www.a.test/ok/page", "404"},
		{"host case ignored", "", "", -1, "http://WWW.A.TEST/ok/page", "404"},
		{"other path unaffected", "", "", -1, "http://www.a.test/ok/other", "200"},
		{"other host unaffected", "", "", -1, "http://docs.b.test/ok/page", "200"},
		{"fixed", "www.a.test", "/ok/page", 0, "http://www.a.test/ok/page", "200"},
		{"a failing path made to work", "docs.b.test", "/status/500", 200, "http://docs.b.test/status/500", "200"},
	}
	for _, s := range steps {
		if s.status >= 0 {
			w.SetStatus(s.host, s.path, s.status)
		}
		if got := get(s.url); fmt.Sprint(got) != s.want {
			t.Errorf("%s: %s answered %d, want %s", s.name, s.url, got, s.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("SetStatus(700) did not panic")
		}
	}()
	w.SetStatus("www.a.test", "/x", 700)
}
