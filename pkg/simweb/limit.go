package simweb

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// ThrottleMode selects how a domain answers a request that its hidden token
// bucket refuses. The zero value is Throttle429Seconds.
type ThrottleMode int

const (
	// Throttle429Seconds answers 429 Too Many Requests (RFC 6585 §4) with
	// "Retry-After: <delta-seconds>" (RFC 9110 §10.2.3).
	Throttle429Seconds ThrottleMode = iota
	// Throttle429Date answers 429 with "Retry-After: <HTTP-date>" in IMF-fixdate
	// form (RFC 9110 §10.2.3 and §5.6.7), computed from the simulation clock.
	Throttle429Date
	// Throttle429None answers 429 without a Retry-After header.
	Throttle429None
	// Throttle503 answers 503 Service Unavailable (RFC 9110 §15.6.4) with
	// "Retry-After: <delta-seconds>".
	Throttle503
)

// String returns the mode's Go name, e.g. "Throttle429Date".
func (m ThrottleMode) String() string {
	switch m {
	case Throttle429Seconds:
		return "Throttle429Seconds"
	case Throttle429Date:
		return "Throttle429Date"
	case Throttle429None:
		return "Throttle429None"
	case Throttle503:
		return "Throttle503"
	}
	return "ThrottleMode(" + strconv.Itoa(int(m)) + ")"
}

func (m ThrottleMode) valid() bool { return m >= Throttle429Seconds && m <= Throttle503 }

// Limit is the hidden politeness limit of one registrable domain, shared by
// all of its hosts. A domain without a Limit (or with the zero Limit) accepts
// every request.
type Limit struct {
	// Rate is the token refill rate in tokens (requests) per second of clock
	// time. The bucket is refilled lazily and greedily: on each request it
	// gains Rate*(seconds since the previous request), up to Burst.
	// Rate <= 0 disables the token bucket.
	Rate float64
	// Burst is the bucket capacity in tokens; the bucket starts full at the
	// domain's first request. Values below 1 are treated as 1 when Rate > 0.
	Burst float64
	// MaxConcurrent caps the domain's requests in flight. A request that
	// arrives while MaxConcurrent others are in flight gets 503 with
	// "Retry-After: 1", costs no token and counts as a violation.
	// MaxConcurrent <= 0 means no cap.
	MaxConcurrent int
	// Mode is how a request refused by the token bucket is answered.
	Mode ThrottleMode
}

func (l Limit) validate() error {
	if math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) || l.Rate < 0 {
		return fmt.Errorf("Rate %v tokens/s: must be a finite number >= 0", l.Rate)
	}
	if math.IsNaN(l.Burst) || math.IsInf(l.Burst, 0) || l.Burst < 0 {
		return fmt.Errorf("Burst %v tokens: must be a finite number >= 0", l.Burst)
	}
	if !l.Mode.valid() {
		return fmt.Errorf("Mode %v: unknown throttle mode", l.Mode)
	}
	return nil
}

// bucket is a lazily refilled token bucket. It is a pure value: callers pass
// the time explicitly and hold whatever lock protects it.
type bucket struct {
	rate, burst float64 // tokens/s, tokens
	tokens      float64
	last        time.Time
	started     bool
}

func newBucket(rate, burst float64) bucket {
	if burst < 1 {
		burst = 1
	}
	return bucket{rate: rate, burst: burst}
}

// take tries to remove one token at now. If none is available it returns
// false and how long after now a whole token will be available.
func (b *bucket) take(now time.Time) (ok bool, wait time.Duration) {
	if b.rate <= 0 {
		return true, 0
	}
	if !b.started {
		b.started = true
		b.tokens = b.burst
		b.last = now
	}
	if el := now.Sub(b.last); el > 0 {
		b.tokens = math.Min(b.burst, b.tokens+b.rate*el.Seconds())
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	sec := (1 - b.tokens) / b.rate
	return false, time.Duration(math.Ceil(sec * float64(time.Second)))
}

// retryAfterSeconds is the delta-seconds value of Retry-After for a wait: the
// wait rounded up to whole seconds, and at least 1 (RFC 9110 §10.2.3 allows
// only non-negative integers).
func retryAfterSeconds(wait time.Duration) int64 {
	s := int64(math.Ceil(wait.Seconds()))
	if s < 1 {
		s = 1
	}
	return s
}

// retryAfterDate is the HTTP-date value of Retry-After for a wait measured
// from now: the earliest whole second that is at least max(wait, 1 s) after
// now, in IMF-fixdate form (RFC 9110 §5.6.7). Rounding up keeps it honest:
// a token is available at the time it names.
func retryAfterDate(now time.Time, wait time.Duration) string {
	if wait < time.Second {
		wait = time.Second
	}
	t := now.Add(wait)
	if tr := t.Truncate(time.Second); !tr.Equal(t) {
		t = tr.Add(time.Second)
	}
	return t.UTC().Format(http.TimeFormat)
}
