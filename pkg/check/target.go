package check

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// errNotHTTP marks a URL whose scheme is not http or https.
var errNotHTTP = errors.New("not an http or https URL")

// parseTarget parses a URL to check. It accepts absolute http and https URLs
// with a non-empty host and a valid port (1-65535), after trimming
// surrounding ASCII white space. Scheme and host are lower-cased and the
// fragment is dropped: it is never sent (RFC 3986 §3.5).
func parseTarget(raw string) (*url.URL, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return nil, errors.New("empty URL")
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("invalid URL %q: %w", s, err)
	}
	if err := validateTarget(u); err != nil {
		return nil, fmt.Errorf("invalid URL %q: %w", s, err)
	}
	return u, nil
}

// validateTarget checks that u is an absolute http(s) URL with a host and a
// usable port, normalises the scheme to lower case and drops the fragment.
func validateTarget(u *url.URL) error {
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		if u.Scheme == "" {
			return fmt.Errorf("missing scheme: %w", errNotHTTP)
		}
		return fmt.Errorf("scheme %q: %w", u.Scheme, errNotHTTP)
	}
	// "http://host:/" is legal (an empty port means the default, RFC 3986
	// §3.2.3); normalise it so visited-URL comparison sees one form.
	u.Host = strings.TrimSuffix(u.Host, ":")
	if strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("malformed host %q", u.Host+":")
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return errors.New("missing host")
	}
	if strings.Contains(u.Hostname(), ":") && !strings.HasPrefix(u.Host, "[") {
		return fmt.Errorf("malformed host %q (IPv6 literals need brackets)", u.Host)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return fmt.Errorf("bad port %q", p)
		}
	}
	// Host names are case-insensitive (RFC 3986 §6.2.2.1); lower-case them
	// so that loop detection and the per-host memory see one form. An IPv6
	// zone (after '%') is left alone: zone names are case-sensitive.
	if !strings.Contains(u.Host, "%") {
		u.Host = strings.ToLower(u.Host)
	}
	u.Fragment, u.RawFragment = "", ""
	// url.Parse is lenient with references such as "//::1" (an unbracketed
	// IPv6 host); the request is built from the string form, so insist that
	// it parses back.
	if _, err := url.Parse(u.String()); err != nil {
		return fmt.Errorf("malformed host or port: %w", err)
	}
	return nil
}

// resolveLocation resolves a Location header value against the URL that
// answered with it (RFC 9110 §10.2.2; RFC 3986 §5.2). Errors: missing value,
// unparsable value, and (wrapping errNotHTTP) a non-http(s) target.
func resolveLocation(base *url.URL, loc string) (*url.URL, error) {
	if loc == "" {
		return nil, errors.New("redirect without Location header")
	}
	ref, err := url.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("unparsable Location %q: %w", loc, err)
	}
	next := base.ResolveReference(ref)
	if err := validateTarget(next); err != nil {
		return nil, fmt.Errorf("redirect to %q: %w", loc, err)
	}
	return next, nil
}
