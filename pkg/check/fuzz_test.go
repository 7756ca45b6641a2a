package check

import (
	"net/netip"
	"net/url"
	"testing"
)

// checkTargetInvariants asserts what Check relies on for any accepted URL.
func checkTargetInvariants(t *testing.T, u *url.URL) {
	t.Helper()
	if u.Scheme != "http" && u.Scheme != "https" {
		t.Fatalf("accepted scheme %q", u.Scheme)
	}
	if u.Hostname() == "" {
		t.Fatalf("accepted empty host in %q", u)
	}
	if u.Fragment != "" {
		t.Fatalf("fragment kept in %q", u)
	}
	// The normalised form is a fixed point, so visited-URL comparison is
	// stable across hops.
	again, err := url.Parse(u.String())
	if err == nil {
		err = validateTarget(again)
	}
	if err != nil {
		t.Fatalf("normalised %q no longer parses: %v", u, err)
	}
	if again.String() != u.String() {
		t.Fatalf("normalisation not idempotent: %q -> %q", u, again)
	}
}

func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{
		"http://example.com/", "HTTPS://Example.COM:8443/a?b=c#frag", "ftp://x/",
		"http://", "http:///p", "http://a.test:0/", "http://a.test:65536/",
		"http://[::1]:80/", "http://[fe80::1%25eth0]/", "http://user:pw@host/",
		" http://a.test/ ", "//a.test/", "mailto:a@b", "http://a.test:/x",
		"http://%41.test/", "http://a b/", "\x00", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := parseTarget(raw)
		if err != nil {
			if u != nil {
				t.Fatalf("error %v with non-nil URL", err)
			}
			return
		}
		checkTargetInvariants(t, u)
	})
}

func FuzzResolveLocation(f *testing.F) {
	for _, s := range []string{
		"", "/x", "x", "../../x", "?q=1", "#f", "//other.test/p", "http://a.test:8080/",
		"https://b.test", "ftp://c/", "javascript:alert(1)", "http://[::1", "%zz",
		"http:relative", "///x", "HTTP://UPPER.TEST/",
	} {
		f.Add(s)
	}
	base, err := parseTarget("http://base.test/dir/page?x=1")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, loc string) {
		next, err := resolveLocation(base, loc)
		if err != nil {
			return
		}
		checkTargetInvariants(t, next)
		if base.String() != "http://base.test/dir/page?x=1" {
			t.Fatalf("base modified: %q", base)
		}
	})
}

func FuzzForbidden(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1", "::ffff:10.1.2.3", "169.254.169.254", "100.64.0.1", "fd00::1",
		"0.0.0.0", "224.0.0.1", "93.184.216.34", "2606:4700::1", "64:ff9b::a00:1",
	} {
		a := netip.MustParseAddr(s).As16()
		f.Add(a[:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != 16 {
			return
		}
		ip := netip.AddrFrom16([16]byte(b))
		reason, bad := Forbidden(ip)
		if bad == (reason == "") {
			t.Fatalf("Forbidden(%s) = %q, %v: reason must be set exactly when bad", ip, reason, bad)
		}
		// An IPv4-mapped address is judged exactly like the IPv4 address.
		if ip.Is4In6() {
			r4, bad4 := Forbidden(ip.Unmap())
			if r4 != reason || bad4 != bad {
				t.Fatalf("Forbidden(%s) = %q,%v but Forbidden(%s) = %q,%v", ip, reason, bad, ip.Unmap(), r4, bad4)
			}
		}
		// Every address the standard library calls non-public is refused.
		if (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsMulticast() ||
			ip.IsUnspecified() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast()) && !bad {
			t.Fatalf("Forbidden(%s) allowed a non-public address", ip)
		}
	})
}
