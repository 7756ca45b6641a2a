// Package simweb is a simulated web of many hosts served from two loopback
// listeners (one HTTP, one HTTPS), for integration tests, benchmarks and
// `make demo` of urlcheck.
//
// Every simulated host name resolves (through Web.Resolver) to 127.0.0.1, and
// Web.Dial routes port 80 to the HTTP listener and port 443 to the HTTPS
// listener, so a checker configured with Resolver, Dial and CertPool talks to
// thousands of "sites" without ever leaving the machine. The HTTPS listener
// issues an ECDSA P-256 leaf certificate per SNI name on demand, signed by an
// in-memory CA.
//
// Each host belongs to a registrable domain (eTLD+1) that carries a hidden
// Limit: a cap on requests in flight and a token bucket. A checker that is
// polite per registrable domain sees only 200s; one that is not sees 429 or
// 503 answers, which Web.Stats counts. The URL path chooses what a host does
// (see Web for the list), and Scenario builds a whole population of domains,
// hosts and fault URLs together with the expected check class of every URL.
//
// All times (latency, rates, Retry-After, Date headers) are in the time of the
// clock.Clock passed to New, so a clock.Scaled clock runs a simulation faster
// than real time while every rate keeps its meaning in simulated seconds.
package simweb
