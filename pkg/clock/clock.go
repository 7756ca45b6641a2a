// Package clock holds the time source that every time-dependent part of
// urlcheck takes as a parameter: token buckets, the in-memory queue's
// visibility timeouts, backoff delays and the simulated web.
//
// Production code uses Real. Integration tests and benchmarks use Scaled, which
// runs simulated time faster than the wall clock so that a 20-second job at
// real host limits finishes in about one second, while every rate, Retry-After
// and timeout keeps its meaning in simulated seconds. Unit tests pass explicit
// time.Time values to the pure functions and need no clock at all.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and waits. All durations are in the clock's own time:
// for Scaled, a Sleep of one second lasts 1/factor seconds of wall-clock time.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep waits for d or until ctx is done; it returns ctx.Err() in the
	// latter case and nil otherwise. A d <= 0 returns at once.
	Sleep(ctx context.Context, d time.Duration) error
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer created by Clock.NewTimer.
type Timer interface {
	// C is the channel on which the clock's current time is delivered once.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it stopped it.
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// Sleep waits d of wall-clock time or until ctx is done.
func (Real) Sleep(ctx context.Context, d time.Duration) error {
	return sleep(ctx, d)
}

// NewTimer wraps time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Scaled is a clock whose time runs Factor times faster than the wall clock,
// starting at Epoch when it is created. Factor must be >= 1.
type Scaled struct {
	epoch  time.Time
	start  time.Time
	factor float64
}

// NewScaled returns a clock that starts at epoch and advances factor
// simulated seconds per wall-clock second. A factor below 1 is treated as 1.
func NewScaled(epoch time.Time, factor float64) *Scaled {
	if factor < 1 {
		factor = 1
	}
	return &Scaled{epoch: epoch, start: time.Now(), factor: factor}
}

// Factor returns how many simulated seconds pass per wall-clock second.
func (s *Scaled) Factor() float64 { return s.factor }

// Now returns epoch plus the scaled wall-clock time elapsed since creation.
func (s *Scaled) Now() time.Time {
	el := time.Since(s.start)
	return s.epoch.Add(time.Duration(float64(el) * s.factor))
}

// Real converts a simulated duration to wall-clock time.
func (s *Scaled) Real(d time.Duration) time.Duration {
	return time.Duration(float64(d) / s.factor)
}

// Sleep waits d simulated time, that is d/Factor of wall-clock time.
func (s *Scaled) Sleep(ctx context.Context, d time.Duration) error {
	return sleep(ctx, s.Real(d))
}

// NewTimer returns a timer that fires after d simulated time.
func (s *Scaled) NewTimer(d time.Duration) Timer {
	st := &scaledTimer{c: make(chan time.Time, 1)}
	st.t = time.AfterFunc(s.Real(d), func() { st.c <- s.Now() })
	return st
}

type scaledTimer struct {
	t *time.Timer
	c chan time.Time
}

func (s *scaledTimer) C() <-chan time.Time { return s.c }
func (s *scaledTimer) Stop() bool          { return s.t.Stop() }
