// Package check makes one polite HTTP check of one URL and classifies the
// outcome (ok, redirect, client_error, timeout, dns, tls, ...).
//
// A Checker sends HEAD first and falls back to GET for hosts that misanswer
// HEAD, follows redirects by hand (recording every hop), reads at most a
// bounded prefix of any GET body, and by default refuses to connect to
// loopback, private, link-local and other non-public addresses. That refusal
// is enforced at dial time on the resolved address, so redirects to internal
// hosts and DNS rebinding are caught as well as IP-literal URLs.
//
// Retries, rate limiting and scheduling are not done here: Check makes exactly
// one attempt and reports, in Outcome.Requests, how many HTTP requests that
// attempt cost so the caller can charge them to the domain's budget.
package check
