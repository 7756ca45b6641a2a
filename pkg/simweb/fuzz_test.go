package simweb

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func FuzzRoute(f *testing.F) {
	for _, s := range []string{"/", "/ok/x", "/status/404", "/status/abc", "/redirect/3/a/b", "/redirect/01",
		"/redirect/0", "/to/h.test/x", "/to//x", "/loop/a", "/loop", "/loop/c/b", "/slow/10", "/slow/-1",
		"/hang", "/reset/1", "/bot", "//", "/nope", "/status/204"} {
		f.Add(s)
	}
	clk := newManualClock()
	w := New(clk)
	w.AddHost(Host{Name: "www.a.test"})
	f.Fuzz(func(t *testing.T, path string) {
		a := route(path)
		switch a.kind {
		case actStatus:
			if a.status < 200 || a.status > 599 {
				t.Fatalf("route(%q) status %d", path, a.status)
			}
		case actRedirect:
			if !strings.HasPrefix(a.location, "/") || strings.HasPrefix(a.location, "//") {
				t.Fatalf("route(%q) location %q is not an absolute path on the same host", path, a.location)
			}
			next := route(a.location)
			if strings.HasPrefix(path, "/redirect/") {
				// One hop closer to /redirect/0.
				n, _ := strconv.Atoi(strings.Split(path, "/")[2])
				if n == 1 && next.kind != actOK || n > 1 && !strings.HasPrefix(next.location, "/redirect/"+strconv.Itoa(n-2)) {
					t.Fatalf("route(%q) -> %q -> %+v: not counting down", path, a.location, next)
				}
			} else if back := route(next.location); next.kind != actRedirect || back.location != a.location {
				t.Fatalf("loop %q -> %q -> %q -> %q is not a 2-cycle", path, a.location, next.location, back.location)
			}
		case actTo:
			if a.toHost == "" || strings.ContainsAny(a.toHost, "/?#@ ") {
				t.Fatalf("route(%q) target host %q", path, a.toHost)
			}
		case actSlow:
			if a.delay < 0 || a.delay > maxSlow {
				t.Fatalf("route(%q) delay %v", path, a.delay)
			}
		case actHang, actReset:
			return // need a real connection
		}
		// The handler answers with the status the route promised.
		want := map[actionKind]int{actOK: 200, actStatus: a.status, actRedirect: a.status, actTo: 302, actBot: 403, actSlow: 200}[a.kind]
		req := httptest.NewRequest("GET", "http://www.a.test/", nil)
		req.URL.Path = path
		rec := httptest.NewRecorder()
		w.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Fatalf("ServeHTTP(%q) = %d, want %d", path, rec.Code, want)
		}
		if rec.Header().Get("Date") == "" {
			t.Fatalf("ServeHTTP(%q): no Date header", path)
		}
	})
}

func FuzzNormalizeHost(f *testing.F) {
	for _, s := range []string{"www.a.test", "WWW.A.TEST.", "a.test:443", "[::1]:80", "", ".", "a..", "Ünï.test"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := normalizeHost(s)
		if strings.HasSuffix(got, ".") || strings.ContainsAny(got, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			t.Fatalf("normalizeHost(%q) = %q: trailing dot or upper case", s, got)
		}
		// A plain host name is a fixed point, whatever its case, trailing
		// dot or port.
		name := strings.Trim(strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
				return r
			}
			return -1
		}, strings.ToLower(s)), ".")
		if name == "" {
			return
		}
		for _, v := range []string{name, strings.ToUpper(name) + ".", name + ":443", strings.ToUpper(name) + ".:80"} {
			if got := normalizeHost(v); got != name {
				t.Fatalf("normalizeHost(%q) = %q, want %q", v, got, name)
			}
		}
		_ = http.MethodGet
	})
}
