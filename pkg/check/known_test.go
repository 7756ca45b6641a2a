package check

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func TestNXDOMAINIsLookedUpOnce(t *testing.T) {
	var lookups atomic.Int32
	base := testResolver(nil)
	c := New(Config{AllowPrivate: true, Resolver: func(ctx context.Context, host string) ([]netip.Addr, error) {
		lookups.Add(1)
		return base(ctx, host)
	}})
	defer c.Close()
	if _, ok := c.Known("http://gone.example/a"); ok {
		t.Fatal("Known before any check reported an outcome")
	}
	tests := []struct {
		url      string
		requests int
	}{
		{"http://gone.example/a", 1},
		{"http://GONE.example/b", 0},
		{"https://gone.example/c", 0},
	}
	for _, tc := range tests {
		out := c.Check(context.Background(), tc.url)
		if out.Class != ClassDNS || out.Requests != tc.requests {
			t.Errorf("%s: class %s, %d requests; want dns with %d", tc.url, out.Class, out.Requests, tc.requests)
		}
	}
	if got := lookups.Load(); got != 1 {
		t.Fatalf("%d lookups of one NXDOMAIN host, want 1", got)
	}
	if out, ok := c.Known("http://gone.example/d"); !ok || out.Class != ClassDNS {
		t.Fatalf("Known after NXDOMAIN = %+v, %v", out, ok)
	}
	// A resolver failure that is not NXDOMAIN (a timeout, SERVFAIL) is not remembered.
	c2 := New(Config{Resolver: func(context.Context, string) ([]netip.Addr, error) {
		return nil, &net.DNSError{Err: "server misbehaving", Name: "flaky.example", IsTemporary: true}
	}})
	defer c2.Close()
	c2.Check(context.Background(), "http://flaky.example/")
	if _, ok := c2.Known("http://flaky.example/"); ok {
		t.Fatal("a temporary DNS failure was remembered as final")
	}
}

func TestBeforeFollowUpPaysForHopsAndFallbacks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/a":
			http.Redirect(w, r, "/b", http.StatusMovedPermanently)
		case r.URL.Path == "/b":
			http.Redirect(w, r, "/c", http.StatusFound)
		case r.URL.Path == "/nohead" && r.Method == http.MethodHead:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	}))
	defer srv.Close()
	tests := []struct {
		path  string
		calls []string
		fail  bool
		class Class
	}{
		{"/ok", nil, false, ClassOK},
		{"/a", []string{"/b", "/c"}, false, ClassRedirect},
		{"/nohead", []string{"/nohead"}, false, ClassOK},
		{"/a", []string{"/b"}, true, ClassTimeout},
	}
	for _, tc := range tests {
		var got []string
		released := 0
		c := New(Config{AllowPrivate: true, BeforeFollowUp: func(_ context.Context, origin, target *url.URL) (func(), error) {
			if origin.Path != tc.path {
				t.Errorf("origin %s, want the check's first URL %s", origin.Path, tc.path)
			}
			got = append(got, target.Path)
			if tc.fail {
				return nil, context.DeadlineExceeded
			}
			return func() { released++ }, nil
		}})
		out := c.Check(context.Background(), srv.URL+tc.path)
		c.Close()
		if out.Class != tc.class || strings.Join(got, ",") != strings.Join(tc.calls, ",") {
			t.Errorf("%s (fail=%v): class %s, follow-ups %v; want %s, %v", tc.path, tc.fail, out.Class, got, tc.class, tc.calls)
		}
		if wantRel := len(tc.calls); !tc.fail && released != wantRel {
			t.Errorf("%s: %d releases for %d follow-ups", tc.path, released, wantRel)
		}
	}
}
