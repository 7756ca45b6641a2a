package urlnorm

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/net/idna"
)

func TestNormalize(t *testing.T) {
	long := "http://example.com/" + strings.Repeat("a", MaxURLBytes-len("http://example.com/"))
	tests := []struct {
		name, raw string
		want      string // canonical URL; "" when an error is expected
		wantErr   string // substring of the error reason
	}{
		{"plain", "http://example.com/a/b?x=1", "http://example.com/a/b?x=1", ""},
		{"https", "https://example.com/", "https://example.com/", ""},
		{"upper scheme and host", "HTTPS://WWW.Example.COM/Path?Q=A", "https://www.example.com/Path?Q=A", ""},
		{"mixed case scheme", "hTTp://example.com", "http://example.com/", ""},
		{"empty path", "http://example.com", "http://example.com/", ""},
		{"empty path with query", "http://example.com?a=b", "http://example.com/?a=b", ""},
		{"empty query kept", "http://example.com/?", "http://example.com/?", ""},
		{"fragment dropped", "http://example.com/a#frag", "http://example.com/a", ""},
		{"empty fragment dropped", "http://example.com/a#", "http://example.com/a", ""},
		{"query kept as is", "http://example.com/?b=2&a=1&a=%41", "http://example.com/?b=2&a=1&a=%41", ""},
		{"path escapes kept", "http://example.com/a%2Fb/%7euser", "http://example.com/a%2Fb/%7euser", ""},
		{"dot segments kept", "http://example.com/a/../b/./c", "http://example.com/a/../b/./c", ""},
		{"trailing dot", "http://example.com./x", "http://example.com/x", ""},
		{"default http port", "http://example.com:80/x", "http://example.com/x", ""},
		{"default https port", "https://example.com:443/x", "https://example.com/x", ""},
		{"443 on http kept", "http://example.com:443/", "http://example.com:443/", ""},
		{"80 on https kept", "https://example.com:80/", "https://example.com:80/", ""},
		{"other port kept", "http://example.com:8080", "http://example.com:8080/", ""},
		{"port leading zeros", "http://example.com:0080/", "http://example.com/", ""},
		{"port leading zeros kept", "http://example.com:08080/", "http://example.com:8080/", ""},
		{"empty port", "http://example.com:/", "http://example.com/", ""},
		{"idn to punycode", "http://bücher.example/", "http://xn--bcher-kva.example/", ""},
		{"idn upper case", "http://BÜCHER.de/", "http://xn--bcher-kva.de/", ""},
		{"idn percent-encoded", "http://b%C3%BCcher.de/", "http://xn--bcher-kva.de/", ""},
		{"punycode kept", "http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/", ""},
		{"ideographic full stop", "http://例え.jp。/", "http://xn--r8jz45g.jp/", ""},
		{"ipv4", "http://192.0.2.1:8080/x", "http://192.0.2.1:8080/x", ""},
		{"ipv6 brackets kept", "http://[2001:DB8::1]/", "http://[2001:db8::1]/", ""},
		{"ipv6 canonical form", "http://[2001:db8:0:0::1]:443/", "http://[2001:db8::1]:443/", ""},
		{"ipv6 default port", "https://[::1]:443", "https://[::1]/", ""},
		{"surrounding space", "  http://example.com/ \t", "http://example.com/", ""},
		{"hyphenated labels", "http://a-b.c-d.example/", "http://a-b.c-d.example/", ""},
		{"localhost", "http://localhost:3000/", "http://localhost:3000/", ""},
		{"exactly max bytes", long, long, ""},

		{"ftp", "ftp://example.com/", "", `scheme "ftp" is not http or https`},
		{"mailto", "mailto:a@example.com", "", `scheme "mailto" is not http or https`},
		{"no scheme", "example.com/path", "", "no scheme"},
		{"scheme relative", "//example.com/path", "", "no scheme"},
		{"empty", "", "", "empty"},
		{"blank", "   ", "", "empty"},
		{"opaque", "http:example.com", "", "URL has no host"},
		{"no host", "http:///path", "", "URL has no host"},
		{"only port", "http://:8080/", "", "URL has no host"},
		{"credentials", "http://user:pass@example.com/", "", "credentials"},
		{"user only", "http://user@example.com/", "", "credentials"},
		{"empty userinfo", "http://@example.com/", "", "credentials"},
		{"too long", long + "b", "", "URL is 8001 bytes, longer than the 8000-byte limit"},
		{"grows too long", "http://example.com/" + strings.Repeat(" ", MaxURLBytes/2) + "x", "", "normalized URL is"},
		{"control char", "http://example.com/\x00", "", "cannot parse"},
		{"bad port", "http://example.com:abc/", "", "cannot parse"},
		{"port out of range", "http://example.com:65536/", "", "out of range"},
		{"port zero", "http://example.com:0/", "", "out of range"},
		{"unclosed ipv6", "http://[::1/", "", "cannot parse"},
		{"ipv6 zone", "http://[fe80::1%25eth0]/", "", "zone"},
		{"underscore", "http://my_host.example.com/", "", "is not a valid IDN"},
		{"space in host", "http://exa mple.com/", "", "cannot parse"},
		{"leading hyphen", "http://-example.com/", "", "is not a valid IDN"},
		{"bad punycode", "http://xn--a.com/", "", "is not a valid IDN"},
		{"empty label", "http://a..example.com/", "", "empty label"},
		{"leading dot", "http://.example.com/", "", "empty label"},
		{"two trailing dots", "http://example.com../", "", "empty label"},
		{"only dot", "http://./", "", "no host"},
		{"colons without brackets", "http://a:b:c/", "", "cannot parse"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := Normalize(tc.raw)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("Normalize(%q) = %q, want error containing %q", tc.raw, u, tc.wantErr)
				}
				var ie *InvalidError
				if !errors.As(err, &ie) {
					t.Fatalf("error %v is %T, want *InvalidError", err, err)
				}
				if !strings.Contains(ie.Reason, tc.wantErr) || ie.Error() != ie.Reason {
					t.Fatalf("Normalize(%q) error %q, want it to contain %q", tc.raw, ie.Reason, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Normalize(%q): unexpected error %v", tc.raw, err)
			}
			if got := u.String(); got != tc.want {
				t.Fatalf("Normalize(%q) = %q, want %q", tc.raw, got, tc.want)
			}
			checkNormalized(t, u.String())
		})
	}
}

// checkNormalized asserts the properties every Normalize result must have.
func checkNormalized(t *testing.T, s string) {
	t.Helper()
	u, err := Normalize(s)
	if err != nil {
		t.Fatalf("re-normalizing %q: %v", s, err)
	}
	if got := u.String(); got != s {
		t.Fatalf("not idempotent: %q -> %q", s, got)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		t.Fatalf("%q: scheme %q", s, u.Scheme)
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		t.Fatalf("%q has a fragment", s)
	}
	if u.User != nil {
		t.Fatalf("%q has userinfo", s)
	}
	if u.Hostname() == "" || len(s) > MaxURLBytes {
		t.Fatalf("%q: empty host or too long", s)
	}
	if h := u.Hostname(); h != strings.ToLower(h) {
		t.Fatalf("%q: host not lower case", s)
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"http://example.com", "HTTPS://WWW.EXAMPLE.COM:443/a?b#c", "http://bücher.de./",
		"http://[::1]:80/", "http://[fe80::1%25en0]/", "http://user:pw@host/", "ftp://x/",
		"http://xn--bcher-kva.de/", "http://a..b/", "http://example.com/%zz?%zz", "http:opaque",
		"http://example.com:0080/ path with space?q= x", "http://例え.jp。/", "http://1.2.3.4/",
		"http://[::ffff:1.2.3.4]/", "http://ab--c.com/", "http://\u200d.com/", "http://a\u05d0.com/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := Normalize(raw)
		if err != nil {
			var ie *InvalidError
			if !errors.As(err, &ie) || ie.Reason == "" {
				t.Fatalf("Normalize(%q) error %v (%T), want *InvalidError with a reason", raw, err, err)
			}
			return
		}
		checkNormalized(t, u.String())
	})
}

func TestFastASCIIHostMatchesIDNA(t *testing.T) {
	for _, h := range []string{
		"example.com", "EXAMPLE.com.", "a-b.c", "ab--cd.com", "xn--bcher-kva.de", "a--b.com",
		"-a.com", "a-.com", "a_b.com", "", ".", "a..b", "123.45", "r3---sn-abc.googlevideo.com",
	} {
		checkFastPath(t, h)
	}
}

func FuzzHostFastPath(f *testing.F) {
	for _, s := range []string{"example.com", "Ex-Ample.COM.", "xn--abc.de", "ab--c", "a.-b", "a..b"} {
		f.Add(s)
	}
	f.Fuzz(checkFastPath)
}

// checkFastPath asserts that fastASCIIHost agrees with idna.Lookup whenever
// it claims a host.
func checkFastPath(t *testing.T, h string) {
	got, ok := fastASCIIHost(h)
	if !ok {
		return
	}
	want, err := idna.Lookup.ToASCII(h)
	if err != nil {
		t.Fatalf("fastASCIIHost(%q) accepted, idna.Lookup rejects: %v", h, err)
	}
	if want = strings.TrimSuffix(want, "."); got != want {
		t.Fatalf("fastASCIIHost(%q) = %q, idna.Lookup gives %q", h, got, want)
	}
}

func BenchmarkNormalizeAndKey(b *testing.B) {
	urls := []string{
		"https://www.example.com/path/to/page?query=1",
		"http://CDN.Example.co.uk:80/img.png",
		"https://alice.github.io/project/",
		"https://bücher.de/katalog#top",
		"http://192.0.2.7:8080/status",
	}
	k := NewKeyer(Overrides{Shared: map[string]string{"githubusercontent.com": "github.com"}})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		u, err := Normalize(urls[i%len(urls)])
		if err != nil {
			b.Fatal(err)
		}
		if k.Key(u.Hostname()) == "" {
			b.Fatal("empty key")
		}
	}
}
