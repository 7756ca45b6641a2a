package backoff

import (
	"math/rand/v2"
	"time"
)

// Defaults used by DefaultPolicy and for any Policy field left at zero (or
// set negative).
const (
	// DefaultBase is the first backoff ceiling: 1 s.
	DefaultBase = time.Second
	// DefaultCap is the largest backoff ceiling: 60 s.
	DefaultCap = 60 * time.Second
	// DefaultMaxAttempts is the number of attempts per request, counting the
	// first one: 5 (so at most 4 retries).
	DefaultMaxAttempts = 5
	// DefaultMaxRetryAfter is the longest Retry-After honoured: 10 min.
	DefaultMaxRetryAfter = 10 * time.Minute
)

// Sources reported by Policy.Next, for logs and tests.
const (
	// SourceRetryAfter means the wait came from the server's Retry-After.
	SourceRetryAfter = "retry-after"
	// SourceBackoff means the wait came from jittered exponential backoff.
	SourceBackoff = "backoff"
	// SourceGiveUp means the attempt limit is reached and there is no wait.
	SourceGiveUp = "give-up"
)

// Policy says how long to wait before each retry of one request and when to
// stop. The zero value is usable: every field that is zero or negative takes
// its default. A Policy is a plain value and safe for concurrent use.
type Policy struct {
	// Base is the backoff ceiling for the first retry; it doubles with each
	// further retry. Default DefaultBase (1 s).
	Base time.Duration
	// Cap is the largest backoff ceiling. Default DefaultCap (60 s).
	Cap time.Duration
	// MaxAttempts is the number of attempts in total, including the first.
	// Next reports give-up for retry numbers >= MaxAttempts. Default
	// DefaultMaxAttempts (5); 1 means never retry.
	MaxAttempts int
	// MaxRetryAfter is the clamp applied to a server's Retry-After. Default
	// DefaultMaxRetryAfter (10 min).
	MaxRetryAfter time.Duration
}

// DefaultPolicy returns a Policy with every field set to its default:
// Base 1 s, Cap 60 s, MaxAttempts 5, MaxRetryAfter 10 min.
func DefaultPolicy() Policy {
	return Policy{
		Base:          DefaultBase,
		Cap:           DefaultCap,
		MaxAttempts:   DefaultMaxAttempts,
		MaxRetryAfter: DefaultMaxRetryAfter,
	}
}

// withDefaults fills fields that are zero or negative.
func (p Policy) withDefaults() Policy {
	if p.Base <= 0 {
		p.Base = DefaultBase
	}
	if p.Cap <= 0 {
		p.Cap = DefaultCap
	}
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	return p
}

// Ceiling returns the upper bound (exclusive) of the backoff before the given
// retry number (1 = first retry): min(Cap, Base*2^(retry-1)), computed without
// overflow. A retry below 1 is treated as 1.
func (p Policy) Ceiling(retry int) time.Duration {
	p = p.withDefaults()
	if retry < 1 {
		retry = 1
	}
	shift := retry - 1
	if p.Base >= p.Cap || shift >= 63 || p.Base > p.Cap>>uint(shift) {
		return p.Cap
	}
	return p.Base << uint(shift)
}

// Backoff returns the full-jitter delay before the given retry number
// (1 = first retry): uniform in [0, Ceiling(retry)), that is
// [0, min(Cap, Base*2^(retry-1))), the "Full Jitter" scheme of the AWS
// Architecture Blog post "Exponential Backoff And Jitter" (2015).
//
// rnd must return values in [0, 1), like math/rand/v2's Float64; a value
// below 0 (or NaN) counts as 0 and a value of 1 or more yields the largest
// delay below the ceiling. A nil rnd uses math/rand/v2's global Float64.
func (p Policy) Backoff(retry int, rnd func() float64) time.Duration {
	ceiling := p.Ceiling(retry)
	if rnd == nil {
		rnd = rand.Float64
	}
	r := rnd()
	if !(r > 0) { // also catches NaN
		return 0
	}
	if r >= 1 {
		return ceiling - 1
	}
	d := time.Duration(r * float64(ceiling))
	if d >= ceiling { // float rounding near 1 for large ceilings
		d = ceiling - 1
	}
	return d
}

// Next decides the wait before the given retry number (1 = first retry).
//
// giveUp is true when retry >= MaxAttempts (the attempts, first included,
// are used up); wait is then 0 and source is SourceGiveUp. Otherwise a
// Retry-After value that ParseRetryAfter accepts wins, clamped to
// [0, MaxRetryAfter] relative to now, with source SourceRetryAfter; an empty
// or malformed retryAfter falls back to Backoff(retry, rnd) with source
// SourceBackoff. rnd is called only in the backoff case.
func (p Policy) Next(retry int, retryAfter string, now time.Time, rnd func() float64) (wait time.Duration, source string, giveUp bool) {
	p = p.withDefaults()
	if retry >= p.MaxAttempts {
		return 0, SourceGiveUp, true
	}
	if d, ok := ParseRetryAfter(retryAfter, now, p.MaxRetryAfter); ok {
		return d, SourceRetryAfter, false
	}
	return p.Backoff(retry, rnd), SourceBackoff, false
}
