package check

import (
	"context"
	"net"
	"net/netip"
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
