package urlnorm

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// MaxURLBytes is the longest URL, in bytes, that Normalize accepts, both as
// given and after normalization. RFC 9110 §4.1 recommends that senders and
// recipients support URIs of at least 8000 octets.
const MaxURLBytes = 8000

// InvalidError is the error Normalize returns for input that is not an
// acceptable http or https URL. Reason is short human-readable text naming
// what was wrong, for example `scheme "ftp" is not http or https`.
type InvalidError struct {
	// Reason says what was wrong with the URL; it does not repeat the URL.
	Reason string
}

// Error returns Reason.
func (e *InvalidError) Error() string { return e.Reason }

func invalid(format string, args ...any) *InvalidError {
	return &InvalidError{Reason: fmt.Sprintf(format, args...)}
}

// Normalize parses raw and returns it in canonical form; the canonical string
// is the returned URL's String(). Leading and trailing white space is ignored.
//
// Rules: the scheme must be http or https (any case) and is lower-cased; the
// URL must have a host (RFC 9110 §4.2.1 and §4.2.2 forbid an empty host) and
// no userinfo (RFC 9110 §4.2.4 deprecates credentials in http(s) URIs); the
// host is lower-cased and an internationalized name converted to punycode
// with the idna.Lookup profile (RFC 5891 §5, UTS #46), and one trailing dot is
// removed; empty labels are rejected; an IP literal is written in its
// canonical form (IPv6 in brackets per RFC 3986 §3.2.2, zones are rejected);
// the port is written without leading zeros and dropped when it is the
// scheme's default (80 for http, 443 for https: RFC 9110 §4.2.3); the fragment
// is dropped (it is never sent to the server, RFC 9110 §4.2.5); an empty path
// becomes "/" (RFC 9110 §4.2.3); the path and the query are otherwise kept
// exactly as given. Input or output longer than MaxURLBytes is rejected.
//
// Normalize is idempotent: Normalize(u.String()) yields u.String() again.
// Every error it returns is an *InvalidError.
func Normalize(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if len(raw) > MaxURLBytes {
		return nil, invalid("URL is %d bytes, longer than the %d-byte limit", len(raw), MaxURLBytes)
	}
	if raw == "" {
		return nil, invalid("URL is empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, invalid("cannot parse: %v", err)
	}
	switch u.Scheme { // url.Parse lower-cases the scheme
	case "http", "https":
	case "":
		return nil, invalid("URL has no scheme (want http:// or https://)")
	default:
		return nil, invalid("scheme %q is not http or https", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, invalid("URL has no host")
	}
	if u.User != nil {
		return nil, invalid("URL contains credentials (user:password@)")
	}
	host, err := canonicalHostPort(u)
	if err != nil {
		return nil, err
	}
	u.Host = host
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path, u.RawPath = "/", ""
	}
	// String() escapes each byte of the path to at most 3 bytes and writes the
	// scheme, "://", host, path and query; below this bound it cannot exceed
	// the limit, and the common case skips building the string twice.
	if bound := len(u.Scheme) + 3 + len(u.Host) + 3*len(raw); bound > MaxURLBytes {
		if n := len(u.String()); n > MaxURLBytes {
			return nil, invalid("normalized URL is %d bytes, longer than the %d-byte limit", n, MaxURLBytes)
		}
	}
	return u, nil
}

// canonicalHostPort returns the canonical "host[:port]" of u.
func canonicalHostPort(u *url.URL) (string, error) {
	hostname, port := u.Hostname(), u.Port()
	var host string
	if strings.HasPrefix(u.Host, "[") {
		addr, err := netip.ParseAddr(hostname)
		switch {
		case err != nil:
			return "", invalid("host %q is not a valid IPv6 address: %v", hostname, err)
		case addr.Zone() != "":
			return "", invalid("host %q has an IPv6 zone, which is not supported", hostname)
		case addr.Is4():
			return "", invalid("host %q is an IPv4 address in brackets", hostname)
		}
		host = "[" + addr.String() + "]"
	} else {
		h, err := canonicalHost(hostname)
		if err != nil {
			return "", err
		}
		if strings.Contains(h, ":") {
			return "", invalid("host %q is an IPv6 address without brackets", hostname)
		}
		host = h
	}
	if port == "" {
		return host, nil
	}
	n, err := strconv.Atoi(port) // url.Parse has checked that port is all digits
	if err != nil || n < 1 || n > 65535 {
		return "", invalid("port %s is out of range 1-65535", port)
	}
	if (u.Scheme == "http" && n == 80) || (u.Scheme == "https" && n == 443) {
		return host, nil
	}
	return host + ":" + strconv.Itoa(n), nil
}

// canonicalHost returns the canonical form of a host name or IP address
// without port or brackets: an IP address in its canonical text form (IPv6
// without brackets, no zone), otherwise the name converted with
// idna.Lookup.ToASCII (lower case, punycode; RFC 5891 §5) with one trailing
// dot removed. It returns an *InvalidError for an empty host, a name the
// idna.Lookup profile rejects (for example one containing '_' or '*'), or a
// name with an empty label ("a..b", ".a").
func canonicalHost(hostname string) (string, error) {
	if hostname == "" {
		return "", invalid("URL has no host")
	}
	if !mayBeIP(hostname) {
		// not an IP address: skip the parse
	} else if addr, err := netip.ParseAddr(hostname); err == nil {
		if addr.Zone() != "" {
			return "", invalid("host %q has an IPv6 zone, which is not supported", hostname)
		}
		return addr.String(), nil
	}
	h, ok := fastASCIIHost(hostname)
	if !ok {
		if !utf8.ValidString(hostname) {
			return "", invalid("host %q is not valid UTF-8", hostname)
		}
		var err error
		h, err = idna.Lookup.ToASCII(hostname)
		if err != nil {
			return "", invalid("host %q is not a valid IDN: %v", hostname, err)
		}
		h = strings.TrimSuffix(h, ".")
		// Accept only a fixed point so that Normalize stays idempotent even
		// where idna maps a name to one it would itself reject.
		if again, err := idna.Lookup.ToASCII(h); err != nil || again != h {
			return "", invalid("host %q is not a valid IDN: its ASCII form %q does not convert to itself", hostname, h)
		}
	}
	if h == "" {
		return "", invalid("URL has no host")
	}
	if h[0] == '.' || h[len(h)-1] == '.' || strings.Contains(h, "..") {
		return "", invalid("host %q has an empty label", hostname)
	}
	return h, nil
}

// fastASCIIHost handles the common case of a plain ASCII host name without
// calling into idna. It reports ok only when idna.Lookup.ToASCII would accept
// h unchanged apart from lower-casing (letters, digits and hyphens; no hyphen
// at the start or end of a label nor in the third and fourth positions, which
// covers "xn--" labels, which idna must check), and then returns the
// lower-cased name without its trailing dot.
func fastASCIIHost(h string) (string, bool) {
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return "", false
	}
	upper := false
	start := 0
	for i := 0; i <= len(h); i++ {
		if i == len(h) || h[i] == '.' {
			n := i - start
			if n == 0 || h[start] == '-' || h[i-1] == '-' || (n > 4 && h[start+2] == '-' && h[start+3] == '-') {
				return "", false
			}
			start = i + 1
			continue
		}
		switch c := h[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-':
		case 'A' <= c && c <= 'Z':
			upper = true
		default:
			return "", false
		}
	}
	if upper {
		h = strings.ToLower(h)
	}
	return h, true
}
