// Package urlnorm turns the URLs of an input list into one canonical form and
// maps each host to the key under which its politeness limit is shared.
//
// Normalize accepts only absolute http and https URLs and rewrites them so
// that two spellings of the same resource compare equal as strings: scheme and
// host in lower case, internationalized host names in punycode (RFC 5891 via
// the idna.Lookup profile), no trailing dot on the host, no default port, no
// fragment, and "/" for an empty path. The path and query are kept as given.
//
// A Keyer reduces a host to its registrable domain (eTLD+1, using the Public
// Suffix List including its private section), so that www.example.com and
// cdn.example.com share one rate limit while alice.github.io and
// bob.github.io do not. Overrides, read with ParseOverrides, let an operator
// split a host off into its own site or merge one domain into another's limit.
package urlnorm
