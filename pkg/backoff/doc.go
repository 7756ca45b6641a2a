// Package backoff decides when urlcheck tries a request again.
//
// It holds three pieces, all free of hidden time and randomness so that tests
// are exact:
//
//   - ParseRetryAfter reads a server's Retry-After field (RFC 9110 §10.2.3)
//     against an explicit "now" and clamps it to a sane range.
//   - Policy turns a retry number into a wait: a usable Retry-After wins,
//     otherwise exponential backoff with full jitter (AWS Architecture Blog,
//     "Exponential Backoff And Jitter", 2015), with the random source passed in.
//     Policy also says when to give up after a fixed number of attempts.
//   - Budget caps retries across a whole run at a fraction of first attempts
//     (a retry budget, as in gRPC, Finagle and Envoy), so that a widespread
//     outage does not multiply the load by the per-request attempt count.
//
// The package never sleeps; callers wait with a clock.Clock.
package backoff
