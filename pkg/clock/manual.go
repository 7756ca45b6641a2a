package clock

import (
	"context"
	"sync"
	"time"
)

// Manual is a clock that moves only when told to, for deterministic tests.
// Sleep and timers fire when Advance moves the time past their deadline.
type Manual struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*manualTimer
}

// NewManual returns a Manual clock reading start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now returns the clock's current time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d and fires every timer now due.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	m.now = m.now.Add(d)
	now := m.now
	var due []*manualTimer
	kept := m.waiters[:0]
	for _, w := range m.waiters {
		if !w.at.After(now) {
			due = append(due, w)
		} else {
			kept = append(kept, w)
		}
	}
	m.waiters = kept
	m.mu.Unlock()
	for _, w := range due {
		w.c <- now
	}
}

// Sleep blocks until Advance has moved the clock d forward or ctx is done.
func (m *Manual) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := m.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// NewTimer returns a timer that fires when the clock reaches now + d.
func (m *Manual) NewTimer(d time.Duration) Timer {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &manualTimer{m: m, at: m.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- m.now
		return t
	}
	m.waiters = append(m.waiters, t)
	return t
}

type manualTimer struct {
	m  *Manual
	at time.Time
	c  chan time.Time
}

func (t *manualTimer) C() <-chan time.Time { return t.c }

func (t *manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	for i, w := range t.m.waiters {
		if w == t {
			t.m.waiters = append(t.m.waiters[:i], t.m.waiters[i+1:]...)
			return true
		}
	}
	return false
}
