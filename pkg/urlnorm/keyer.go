package urlnorm

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// Overrides adjust the keys a Keyer hands out. Host and domain names may be
// given in any case and as Unicode or punycode; NewKeyer canonicalizes them
// the way Normalize canonicalizes hosts.
type Overrides struct {
	// OwnSite lists hosts that are a site of their own: such a host keys on
	// itself instead of its registrable domain, e.g. "blog.example.com" gets a
	// limit apart from the rest of example.com. Matching is exact: a
	// subdomain of an OwnSite host is not affected.
	OwnSite []string
	// Shared maps a domain to a host whose limit it shares, e.g.
	// "githubusercontent.com" -> "github.com": every host that is the domain
	// or a subdomain of it (raw.githubusercontent.com) gets the key that the
	// target host gets. The longest matching domain wins. Matching is by
	// domain suffix, not only on the eTLD+1, because some domains one wants
	// to merge are themselves public suffixes (githubusercontent.com is in
	// the private section of the Public Suffix List, so every subdomain is
	// its own registrable domain). Sharing is transitive: with a -> b and
	// b -> c, hosts under a, b and c all share c's key; domains that form a
	// cycle all share the key of the smallest (byte-wise) domain in it.
	Shared map[string]string
}

// Keyer maps a host to the key under which its rate limit is shared. The
// zero value and a nil *Keyer apply no overrides. A Keyer is immutable after
// NewKeyer and safe for concurrent use.
type Keyer struct {
	own    map[string]struct{}
	shared map[string]string // shared domain -> final key
}

// NewKeyer returns a Keyer applying o. Names in o that are not valid host
// names are used lower-cased as given (ParseOverrides rejects them instead).
func NewKeyer(o Overrides) *Keyer {
	k := &Keyer{own: make(map[string]struct{}, len(o.OwnSite))}
	for _, h := range o.OwnSite {
		k.own[overrideName(h)] = struct{}{}
	}
	raw := make(map[string]string, len(o.Shared))
	for d, t := range o.Shared {
		raw[overrideName(d)] = overrideName(t)
	}
	k.shared = make(map[string]string, len(raw))
	for d := range raw {
		k.shared[d] = k.resolve(d, raw)
	}
	return k
}

// resolve returns the final key of the hosts under shared domain d by
// following the Shared chain.
func (k *Keyer) resolve(d string, raw map[string]string) string {
	seen := []string{d}
	for cur := d; ; {
		t := raw[cur]
		if _, own := k.own[t]; own {
			return t
		}
		next, ok := sharedSuffix(t, raw)
		if !ok {
			return registrable(t)
		}
		if i := slices.Index(seen, next); i >= 0 {
			return slices.Min(seen[i:])
		}
		seen = append(seen, next)
		cur = next
	}
}

// sharedSuffix returns the longest domain in m that is h or a parent domain
// of h. An IP address only matches itself.
func sharedSuffix(h string, m map[string]string) (string, bool) {
	if _, ok := m[h]; ok {
		return h, true
	}
	if isIP(h) {
		return "", false
	}
	for s := h; ; {
		i := strings.IndexByte(s, '.')
		if i < 0 {
			return "", false
		}
		s = s[i+1:]
		if _, ok := m[s]; ok {
			return s, true
		}
	}
}

// overrideName canonicalizes a host or domain name from Overrides, falling
// back to lower case when it is not a valid host name.
func overrideName(s string) string {
	s = strings.TrimPrefix(strings.TrimSuffix(strings.TrimSpace(s), "]"), "[")
	if h, err := canonicalHost(s); err == nil {
		return h
	}
	return strings.ToLower(s)
}

// Key returns the key for host, which should be the Hostname() of a URL
// returned by Normalize (lower case, punycode, IPv6 without brackets; a
// bracketed IPv6 literal, upper case and a trailing dot are tolerated). The
// key is, in order of precedence:
//   - host itself when it is an OwnSite override (exact match);
//   - the target's key when a Shared override names host or one of its parent
//     domains (the longest such domain wins);
//   - host itself when it is an IP address (v4 or v6) or "localhost";
//   - host itself when it is a public suffix (publicsuffix.EffectiveTLDPlusOne
//     fails, e.g. "com" or "github.io");
//   - otherwise its registrable domain, the eTLD+1 per the Public Suffix List
//     (https://publicsuffix.org/), including the list's private section, so
//     alice.github.io and bob.github.io differ while www.example.com and
//     cdn.example.com share example.com.
//
// Key of "" is "".
func (k *Keyer) Key(host string) string {
	h := keyHost(host)
	if h == "" {
		return ""
	}
	if k != nil {
		if _, ok := k.own[h]; ok {
			return h
		}
	}
	if k != nil && len(k.shared) > 0 {
		if d, ok := sharedSuffix(h, k.shared); ok {
			return k.shared[d]
		}
	}
	return registrable(h)
}

// keyHost tolerates the spellings of a host that Key documents.
func keyHost(h string) string {
	if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
		h = h[1 : len(h)-1]
	}
	h = strings.TrimSuffix(h, ".")
	for i := 0; i < len(h); i++ {
		if c := h[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(h)
		}
	}
	return h
}

// registrable returns the registrable domain of h, or h itself for IP
// addresses, "localhost" and public suffixes.
func registrable(h string) string {
	if h == "localhost" || isIP(h) {
		return h
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(h)
	if err != nil {
		return h
	}
	return d
}

// isIP reports whether h is an IPv4 or IPv6 address.
func isIP(h string) bool {
	if !mayBeIP(h) {
		return false
	}
	_, err := netip.ParseAddr(h)
	return err == nil
}

// mayBeIP is a cheap pre-check for netip.ParseAddr: every IP address starts
// with a hex digit or ':' and an IPv4 address with a decimal digit; IPv6
// addresses contain ':'.
func mayBeIP(h string) bool {
	return h != "" && (('0' <= h[0] && h[0] <= '9') || strings.IndexByte(h, ':') >= 0)
}

// ParseOverrides reads overrides in a line-based text format:
//
//	# comment (also allowed after a rule)
//	own  <host>                  # <host> keys on itself
//	share <domain> <with-host>   # hosts at or under <domain> share <with-host>'s limit
//
// Fields are separated by white space; blank lines are ignored; a UTF-8 BOM
// and CRLF line ends are tolerated. Names are canonicalized like Normalize's
// hosts. It returns an error naming the line number for an unknown directive,
// a wrong number of fields, a name that is not a valid host (no scheme, port,
// path or '_'), or a domain shared twice with different targets; and a
// wrapped error if r fails.
func ParseOverrides(r io.Reader) (Overrides, error) {
	var o Overrides
	sharedLine := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(string(line))
		if len(f) == 0 {
			continue
		}
		switch strings.ToLower(f[0]) {
		case "own":
			if len(f) != 2 {
				return Overrides{}, fmt.Errorf("overrides line %d: \"own\" takes 1 host, got %d fields", n, len(f)-1)
			}
			h, err := overrideHost(f[1])
			if err != nil {
				return Overrides{}, fmt.Errorf("overrides line %d: %w", n, err)
			}
			o.OwnSite = append(o.OwnSite, h)
		case "share":
			if len(f) != 3 {
				return Overrides{}, fmt.Errorf("overrides line %d: \"share\" takes a domain and a host, got %d fields", n, len(f)-1)
			}
			d, err := overrideHost(f[1])
			if err != nil {
				return Overrides{}, fmt.Errorf("overrides line %d: %w", n, err)
			}
			t, err := overrideHost(f[2])
			if err != nil {
				return Overrides{}, fmt.Errorf("overrides line %d: %w", n, err)
			}
			if o.Shared == nil {
				o.Shared = map[string]string{}
			}
			if prev, ok := o.Shared[d]; ok && prev != t {
				return Overrides{}, fmt.Errorf("overrides line %d: %q is already shared with %q on line %d", n, d, prev, sharedLine[d])
			}
			o.Shared[d] = t
			sharedLine[d] = n
		default:
			return Overrides{}, fmt.Errorf("overrides line %d: unknown directive %q (want own or share)", n, f[0])
		}
	}
	if err := sc.Err(); err != nil {
		return Overrides{}, fmt.Errorf("reading overrides: %w", err)
	}
	return o, nil
}

// overrideHost validates and canonicalizes a host name or IP address from an
// overrides file.
func overrideHost(s string) (string, error) {
	bare := strings.TrimPrefix(strings.TrimSuffix(s, "]"), "[")
	if _, err := netip.ParseAddr(bare); err != nil && strings.ContainsAny(s, ":/?#@[]") {
		return "", fmt.Errorf("%q is not a host name (give the bare host, without scheme, port or path)", s)
	}
	h, err := canonicalHost(bare)
	if err != nil {
		return "", fmt.Errorf("%q: %w", s, err)
	}
	return h, nil
}
