// Package bucket holds urlcheck's politeness state for one registrable domain:
// a lazy, greedy-refill token bucket (rate in tokens/s, burst in tokens), the
// learned rate that AIMD moves up and down from what the host answers, and the
// in-flight leases that cap concurrency. The state lives behind Store, a small
// compare-and-swap interface, so the same Limiter runs on the in-memory store
// here and on DynamoDB conditional writes in the serverless pipeline.
//
// Time is always a parameter or an injected clock.Clock, never read directly,
// so every rule is tested deterministically.
package bucket

import (
	"math"
	"time"
)

// Bucket is a lazy token bucket: it stores only the token count and the time
// it was last refilled, and computes the refill on use (greedy refill: tokens
// accrue continuously at the rate, not in whole-window steps). Tokens may be
// negative: a reservation of future tokens, or a debt for extra requests, is
// repaid by later refill before anything else can be granted.
type Bucket struct {
	Tokens   float64   // tokens held at Refilled; may be negative (debt)
	Refilled time.Time // time of the last refill; zero means never used (full)
}

// Refill returns the bucket as of now: tokens grown by elapsed seconds × rate
// (tokens/s), capped at burst (tokens). A zero Refilled starts full. A now
// before Refilled (clock skew between writers) adds nothing.
func (b Bucket) Refill(now time.Time, rate, burst float64) Bucket {
	if b.Refilled.IsZero() {
		return Bucket{Tokens: burst, Refilled: now}
	}
	el := now.Sub(b.Refilled).Seconds()
	if el <= 0 {
		return b
	}
	b.Tokens = math.Min(burst, b.Tokens+el*rate)
	b.Refilled = now
	return b
}

// Wait returns how long from now until n tokens are available at rate
// (tokens/s) with the given burst: 0 if they are available now, and
// math.MaxInt64 nanoseconds if n exceeds burst or rate is not positive (never).
func (b Bucket) Wait(now time.Time, n, rate, burst float64) time.Duration {
	b = b.Refill(now, rate, burst)
	if b.Tokens >= n {
		return 0
	}
	if n > burst || rate <= 0 {
		return time.Duration(math.MaxInt64)
	}
	return secs((n - b.Tokens) / rate)
}

// TakeN takes n tokens at once if all are available now, as x/time/rate's
// AllowN(now, n) does. It returns the new bucket and true, or the refilled but
// untouched bucket, false and how long until n would be available (see Wait).
func (b Bucket) TakeN(now time.Time, n, rate, burst float64) (Bucket, bool, time.Duration) {
	b = b.Refill(now, rate, burst)
	if b.Tokens >= n {
		b.Tokens -= n
		return b, true, 0
	}
	return b, false, b.Wait(now, n, rate, burst)
}

// Reserve grants up to want tokens whose release times fall within horizon of
// now, as x/time/rate's ReserveN does for a single token at a time: token j
// (0-based) may be spent at now + Offset(j). It returns the new bucket and the
// number granted (0..want). With nothing grantable within horizon it returns
// 0 and the bucket unchanged but refilled. rate is in tokens/s, burst in tokens.
func (b Bucket) Reserve(now time.Time, want int, rate, burst float64, horizon time.Duration) (Bucket, int) {
	b = b.Refill(now, rate, burst)
	if want <= 0 || rate <= 0 {
		return b, 0
	}
	// Token j is released when tokens+elapsed*rate >= j+1.
	n := 0
	for n < want {
		if secs((float64(n)+1-b.Tokens)/rate) > horizon {
			break
		}
		n++
	}
	b.Tokens -= float64(n)
	return b, n
}

// Offset returns when the j-th token (0-based) of a reservation made on a
// bucket that held tokens (before the reservation) is released, relative to
// the reservation time, at rate tokens/s.
func Offset(tokens float64, j int, rate float64) time.Duration {
	d := secs((float64(j) + 1 - tokens) / rate)
	if d < 0 {
		return 0
	}
	return d
}

func secs(s float64) time.Duration {
	if s <= 0 {
		return 0
	}
	if s > float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	// Round up: a release reported 1 ns early would break the bucket's
	// guarantee (rate × t + burst) at the boundary.
	return time.Duration(math.Ceil(s * float64(time.Second)))
}
