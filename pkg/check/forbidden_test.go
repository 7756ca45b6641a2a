package check

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestForbidden(t *testing.T) {
	tests := []struct {
		ip     string
		bad    bool
		reason string // substring of the reason when bad
	}{
		{"127.0.0.1", true, "loopback"},
		{"127.255.0.9", true, "loopback"},
		{"::1", true, "loopback"},
		{"::ffff:127.0.0.1", true, "loopback"},
		{"10.0.0.1", true, "private"},
		{"172.16.0.1", true, "private"},
		{"172.31.255.255", true, "private"},
		{"192.168.1.1", true, "private"},
		{"::ffff:192.168.1.1", true, "private"},
		{"fd00::1", true, "private"},
		{"fc00::1", true, "private"},
		{"fec0::1", true, "private"},
		{"169.254.169.254", true, "metadata"},
		{"::ffff:169.254.169.254", true, "metadata"},
		{"169.254.1.1", true, "link-local"},
		{"fe80::1", true, "link-local"},
		{"fe80::1%eth0", true, "link-local"},
		{"100.64.1.1", true, "CGNAT"},
		{"100.127.255.255", true, "CGNAT"},
		{"0.0.0.0", true, "unspecified"},
		{"0.1.2.3", true, "unspecified"},
		{"::", true, "unspecified"},
		{"224.0.0.1", true, "multicast"},
		{"239.255.255.250", true, "multicast"},
		{"ff02::1", true, "multicast"},
		{"255.255.255.255", true, "broadcast"},
		{"240.0.0.1", true, "reserved"},
		{"198.18.0.1", true, "benchmarking"},
		{"64:ff9b::7f00:1", true, "NAT64-embedded loopback"},
		{"64:ff9b::a00:1", true, "NAT64-embedded private"},
		// Allowed.
		{"93.184.216.34", false, ""},
		{"::ffff:93.184.216.34", false, ""},
		{"2606:4700::1", false, ""},
		{"8.8.8.8", false, ""},
		{"100.63.255.255", false, ""}, // just below CGNAT
		{"100.128.0.0", false, ""},    // just above CGNAT
		{"172.32.0.1", false, ""},     // just above 172.16/12
		{"64:ff9b::5db8:d822", false, ""},
		{"2001:4860:4860::8888", false, ""},
	}
	for _, tc := range tests {
		reason, bad := Forbidden(netip.MustParseAddr(tc.ip))
		if bad != tc.bad || !strings.Contains(reason, tc.reason) || (!bad && reason != "") {
			t.Errorf("Forbidden(%s) = %q, %v; want bad=%v reason containing %q", tc.ip, reason, bad, tc.bad, tc.reason)
		}
	}
	if _, bad := Forbidden(netip.Addr{}); !bad {
		t.Error("Forbidden(zero Addr) allowed it")
	}
}

// TestForbiddenTargets runs real checks with AllowPrivate false. The names
// *.pub resolve to 93.184.216.34, which the test dialer quietly sends to the
// loopback server, standing in for a public web server.
func TestForbiddenTargets(t *testing.T) {
	var log reqLog
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		if loc := r.URL.Query().Get("to"); loc != "" {
			http.Redirect(w, r, loc, http.StatusFound)
		}
	}))
	defer srv.Close()
	p := port(t, srv)
	public := netip.MustParseAddr("93.184.216.34")
	resolve := testResolver(map[string][]netip.Addr{
		"site.pub":   {public},
		"rebind.pub": {netip.MustParseAddr("10.0.0.5")},
		"meta.pub":   {netip.MustParseAddr("::ffff:169.254.169.254")},
		"mixed.pub":  {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("fd00::1"), public},
	})

	tests := []struct {
		name      string
		url       string
		class     Class
		errHas    string
		redirects int
	}{
		{"public name", hostURL("http", "site.pub", p, "/"), ClassOK, "", 0},
		{"loopback literal", hostURL("http", "127.0.0.1", p, "/"), ClassForbiddenTarget, "dial tcp 127.0.0.1:" + p + ": refusing loopback address 127.0.0.1", 0},
		{"mapped loopback literal", hostURL("http", "::ffff:127.0.0.1", p, "/"), ClassForbiddenTarget, "refusing loopback address 127.0.0.1", 0},
		{"metadata literal", "http://169.254.169.254/latest/meta-data/", ClassForbiddenTarget, "cloud metadata", 0},
		{"private literal", "http://10.0.0.1/", ClassForbiddenTarget, "dial tcp 10.0.0.1:80: refusing private address 10.0.0.1", 0},
		{"CGNAT literal", "http://100.64.1.1/", ClassForbiddenTarget, "CGNAT", 0},
		{"unspecified literal", hostURL("http", "0.0.0.0", p, "/"), ClassForbiddenTarget, "unspecified", 0},
		{"IPv6 ULA literal", "http://[fd00::1]/", ClassForbiddenTarget, "private", 0},
		{"name resolving to private (rebinding)", "http://rebind.pub/", ClassForbiddenTarget, "refusing private address 10.0.0.5 (resolved from rebind.pub)", 0},
		{"name resolving to mapped metadata", "http://meta.pub/", ClassForbiddenTarget, "169.254.169.254", 0},
		{"mixed answer uses only the public address", hostURL("http", "mixed.pub", p, "/"), ClassOK, "", 0},
		{"redirect to loopback literal", hostURL("http", "site.pub", p, "/?to=http://127.0.0.1:"+p+"/"), ClassForbiddenTarget, "refusing loopback", 1},
		{"redirect to rebinding name", hostURL("http", "site.pub", p, "/?to=http://rebind.pub:"+p+"/"), ClassForbiddenTarget, "refusing private", 1},
		{"redirect to public name", hostURL("http", "site.pub", p, "/?to=http://mixed.pub:"+p+"/"), ClassRedirect, "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &dialRecorder{remap: map[netip.Addr]bool{public: true}}
			cfg := testConfig()
			cfg.AllowPrivate = false
			cfg.Resolver = resolve
			cfg.Dial = d.Dial
			c := New(cfg)
			defer c.Close()
			got := c.Check(context.Background(), tc.url)
			if got.Class != tc.class || !strings.Contains(got.Error, tc.errHas) {
				t.Errorf("got %q %q, want %q containing %q", got.Class, got.Error, tc.class, tc.errHas)
			}
			if len(got.Redirects) != tc.redirects {
				t.Errorf("Redirects = %v, want %d hops", got.Redirects, tc.redirects)
			}
			for _, ap := range d.dialed() {
				if reason, bad := Forbidden(ap.Addr()); bad {
					t.Errorf("Dial was called with %s (%s); only vetted addresses may reach it", ap, reason)
				}
			}
			if tc.class == ClassForbiddenTarget && got.Status != 0 {
				t.Errorf("Status = %d, want 0", got.Status)
			}
		})
	}
}
