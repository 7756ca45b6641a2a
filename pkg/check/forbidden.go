package check

import (
	"fmt"
	"net/netip"
)

var (
	// RFC 6598 shared address space (carrier-grade NAT).
	cgnatPrefix = netip.MustParsePrefix("100.64.0.0/10")
	// RFC 1122 §3.2.1.3 "this host on this network"; Linux routes
	// connections to 0.0.0.0/8 to the local host.
	thisNetPrefix = netip.MustParsePrefix("0.0.0.0/8")
	// RFC 2544 benchmarking range, used by some proxies for fake-IP DNS.
	benchPrefix = netip.MustParsePrefix("198.18.0.0/15")
	// RFC 1112 §4 reserved class E (includes the limited broadcast address).
	reservedPrefix = netip.MustParsePrefix("240.0.0.0/4")
	// RFC 6052 §2.1 NAT64 well-known prefix; the low 32 bits are an IPv4
	// address that the translator would connect to.
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	// RFC 3879 deprecated IPv6 site-local addresses (the old private range).
	siteLocalPrefix = netip.MustParsePrefix("fec0::/10")

	metadataAddr  = netip.MustParseAddr("169.254.169.254")
	broadcastAddr = netip.MustParseAddr("255.255.255.255")
)

// Forbidden reports whether the Checker refuses to connect to ip unless
// Config.AllowPrivate is set, and if so a short reason such as "loopback" or
// "private" (used in error text: "refusing <reason> address <ip>").
//
// IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are unmapped first, and a NAT64
// address (64:ff9b::/96, RFC 6052) is judged by its embedded IPv4 address.
// Refused, with their sources:
//   - invalid (zero) netip.Addr
//   - unspecified 0.0.0.0 and :: (RFC 1122 §3.2.1.3, RFC 4291 §2.5.2), and all
//     of 0.0.0.0/8 ("this network")
//   - loopback 127.0.0.0/8 and ::1 (RFC 1122 §3.2.1.3, RFC 4291 §2.5.3)
//   - private 10/8, 172.16/12, 192.168/16 (RFC 1918) and fc00::/7 (RFC 4193),
//     plus the deprecated site-local fec0::/10 (RFC 3879)
//   - link-local 169.254.0.0/16 (RFC 3927), including the cloud metadata
//     service 169.254.169.254, and fe80::/10 (RFC 4291 §2.5.6)
//   - shared CGNAT space 100.64.0.0/10 (RFC 6598)
//   - multicast 224.0.0.0/4 (RFC 5771) and ff00::/8 (RFC 4291 §2.7)
//   - broadcast 255.255.255.255 (RFC 919) and the rest of reserved
//     240.0.0.0/4 (RFC 1112 §4)
//   - benchmarking 198.18.0.0/15 (RFC 2544)
//
// Any other address, for example 93.184.216.34 or 2606:4700::1, is allowed.
func Forbidden(ip netip.Addr) (reason string, bad bool) {
	if !ip.IsValid() {
		return "invalid", true
	}
	ip = ip.WithZone("").Unmap()
	if nat64Prefix.Contains(ip) {
		b := ip.As16()
		v4 := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		if r, bad := Forbidden(v4); bad {
			return "NAT64-embedded " + r, true
		}
		return "", false
	}
	switch {
	case ip.IsUnspecified() || thisNetPrefix.Contains(ip):
		return "unspecified", true
	case ip.IsLoopback():
		return "loopback", true
	case ip.IsPrivate() || siteLocalPrefix.Contains(ip):
		return "private", true
	case ip == metadataAddr:
		return "cloud metadata (link-local)", true
	case ip.IsLinkLocalUnicast():
		return "link-local", true
	case cgnatPrefix.Contains(ip):
		return "CGNAT shared", true
	case ip.IsMulticast():
		return "multicast", true
	case ip == broadcastAddr:
		return "broadcast", true
	case reservedPrefix.Contains(ip):
		return "reserved", true
	case benchPrefix.Contains(ip):
		return "benchmarking", true
	}
	return "", false
}

// ForbiddenError is the error a Checker's dialer returns when every address
// of the target is refused by Forbidden. Check reports it as
// ClassForbiddenTarget.
type ForbiddenError struct {
	Host   string     // host name or IP literal from the URL
	Addr   netip.Addr // the first refused address
	Reason string     // reason from Forbidden, e.g. "private"
}

// Error returns "refusing <reason> address <addr>" (plus the host name when
// it differs from the address).
func (e *ForbiddenError) Error() string {
	if e.Host != "" && e.Host != e.Addr.String() {
		return fmt.Sprintf("refusing %s address %s (resolved from %s)", e.Reason, e.Addr, e.Host)
	}
	return fmt.Sprintf("refusing %s address %s", e.Reason, e.Addr)
}
