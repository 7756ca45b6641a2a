package urlnorm

import (
	"strings"
	"testing"
)

func TestKeyNoOverrides(t *testing.T) {
	tests := []struct{ host, want string }{
		{"www.example.com", "example.com"},
		{"cdn.example.com", "example.com"},
		{"example.com", "example.com"},
		{"a.b.c.example.co.uk", "example.co.uk"},
		{"alice.github.io", "alice.github.io"}, // private section of the PSL
		{"bob.github.io", "bob.github.io"},
		{"x.alice.github.io", "alice.github.io"},
		{"github.io", "github.io"}, // a public suffix keys on itself
		{"com", "com"},
		{"co.uk", "co.uk"},
		{"192.0.2.1", "192.0.2.1"},
		{"10.0.0.1", "10.0.0.1"},
		{"::1", "::1"},
		{"[2001:db8::1]", "2001:db8::1"},
		{"localhost", "localhost"},
		{"intranet", "intranet"},
		{"WWW.Example.COM.", "example.com"},
		{"xn--bcher-kva.de", "xn--bcher-kva.de"},
		{"shop.xn--bcher-kva.de", "xn--bcher-kva.de"},
		{"", ""},
	}
	var nilKeyer *Keyer
	zero := &Keyer{}
	empty := NewKeyer(Overrides{})
	for _, tc := range tests {
		for name, k := range map[string]*Keyer{"nil": nilKeyer, "zero": zero, "empty": empty} {
			if got := k.Key(tc.host); got != tc.want {
				t.Errorf("%s Keyer: Key(%q) = %q, want %q", name, tc.host, got, tc.want)
			}
		}
	}
}

func TestKeyOverrides(t *testing.T) {
	k := NewKeyer(Overrides{
		OwnSite: []string{"blog.example.com", "WIKI.Example.org.", "bücher.de"},
		Shared: map[string]string{
			"githubusercontent.com": "github.com",
			"a-chain.com":           "b-chain.com",
			"b-chain.com":           "www.c-chain.com",
			"cyc-b.com":             "cyc-a.com",
			"cyc-a.com":             "cyc-b.com",
			"to-own.com":            "blog.example.com",
			"192.0.2.1":             "example.net",
			"2.1":                   "example.org",
			"shop.example.com":      "shop.example.net",
			"example.net":           "example.org",
			"a.shop.example.com":    "blog.example.com",
		},
	})
	tests := []struct{ host, want string }{
		{"blog.example.com", "blog.example.com"},
		{"www.example.com", "example.com"},
		{"x.blog.example.com", "example.com"}, // OwnSite is an exact match
		{"wiki.example.org", "wiki.example.org"},
		{"xn--bcher-kva.de", "xn--bcher-kva.de"},
		{"raw.githubusercontent.com", "github.com"},
		{"githubusercontent.com", "github.com"},
		{"github.com", "github.com"},
		{"www.a-chain.com", "c-chain.com"}, // transitive: a -> b -> c
		{"b-chain.com", "c-chain.com"},
		{"c-chain.com", "c-chain.com"},
		{"cyc-a.com", "cyc-a.com"}, // a cycle shares its smallest member
		{"x.cyc-b.com", "cyc-a.com"},
		{"to-own.com", "blog.example.com"},
		{"192.0.2.1", "example.org"}, // via example.net -> example.org
		{"192.0.2.2", "192.0.2.2"},   // an IP never matches a shared "domain" suffix
		{"shop.example.com", "example.org"},
		{"x.shop.example.com", "example.org"},
		{"x.a.shop.example.com", "blog.example.com"}, // longest match wins
		{"example.com", "example.com"},
		{"xshop.example.com", "example.com"}, // label boundary, not string suffix
		{"www.example.net", "example.org"},
	}
	for _, tc := range tests {
		if got := k.Key(tc.host); got != tc.want {
			t.Errorf("Key(%q) = %q, want %q", tc.host, got, tc.want)
		}
	}
}

func TestParseOverrides(t *testing.T) {
	tests := []struct {
		name, in  string
		wantOwn   []string
		wantShare map[string]string
		wantErr   string
	}{
		{
			name: "full",
			in: "\ufeff# overrides\r\n\r\nown blog.example.com\r\n" +
				"  SHARE  githubusercontent.com   GitHub.com  # raw files\n" +
				"own [::1]\nown Bücher.de.\n",
			wantOwn:   []string{"blog.example.com", "::1", "xn--bcher-kva.de"},
			wantShare: map[string]string{"githubusercontent.com": "github.com"},
		},
		{name: "empty", in: "", wantOwn: nil, wantShare: nil},
		{name: "repeated identical share", in: "share a.com b.com\nshare a.com b.com\n",
			wantShare: map[string]string{"a.com": "b.com"}},
		{name: "unknown directive", in: "own a.com\nmerge a.com b.com\n", wantErr: `line 2: unknown directive "merge"`},
		{name: "own arity", in: "own a.com b.com", wantErr: `line 1: "own" takes 1 host, got 2 fields`},
		{name: "share arity", in: "\n\nshare a.com", wantErr: `line 3: "share" takes a domain and a host, got 1 fields`},
		{name: "url not host", in: "own https://blog.example.com/", wantErr: "line 1: \"https://blog.example.com/\" is not a host name"},
		{name: "host with port", in: "own example.com:8080", wantErr: "line 1: \"example.com:8080\" is not a host name"},
		{name: "invalid host", in: "own my_host.com", wantErr: "line 1: \"my_host.com\": host \"my_host.com\" is not a valid IDN"},
		{name: "bad target", in: "share a.com b..com", wantErr: "line 1: \"b..com\": host \"b..com\" has an empty label"},
		{name: "conflict", in: "share a.com b.com\n# x\nshare A.com c.com\n",
			wantErr: `line 3: "a.com" is already shared with "b.com" on line 1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseOverrides(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(o.OwnSite, ",") != strings.Join(tc.wantOwn, ",") {
				t.Errorf("OwnSite = %q, want %q", o.OwnSite, tc.wantOwn)
			}
			if len(o.Shared) != len(tc.wantShare) {
				t.Errorf("Shared = %v, want %v", o.Shared, tc.wantShare)
			}
			for d, w := range tc.wantShare {
				if o.Shared[d] != w {
					t.Errorf("Shared[%q] = %q, want %q", d, o.Shared[d], w)
				}
			}
		})
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errTest }

var errTest = &InvalidError{Reason: "disk on fire"}

func TestParseOverridesReadError(t *testing.T) {
	_, err := ParseOverrides(errReader{})
	if err == nil || !strings.Contains(err.Error(), "reading overrides: disk on fire") {
		t.Fatalf("error %v, want the read error wrapped", err)
	}
}

func FuzzParseOverrides(f *testing.F) {
	for _, s := range []string{
		"own a.example.com\nshare b.com c.com\n", "# c\n\nshare x.org y.org # z", "own [::1]", "bogus",
		"share a.com b.com\nshare b.com a.com", "own bücher.de.",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		o, err := ParseOverrides(strings.NewReader(in))
		if err != nil {
			return
		}
		k := NewKeyer(o)
		for _, h := range o.OwnSite {
			if got := k.Key(h); got != h {
				t.Fatalf("own host %q keys on %q", h, got)
			}
		}
		for d := range o.Shared {
			// Every domain keys on something that keys on itself.
			key := k.Key(d)
			if key == "" || k.Key(key) != key {
				t.Fatalf("shared %q keys on %q, which keys on %q", d, key, k.Key(key))
			}
		}
	})
}
