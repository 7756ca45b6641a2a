package bucket

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/urlcheck/urlcheck/pkg/clock"
)

// Config sets the politeness limits the Limiter applies to every domain.
type Config struct {
	Rate        RateConfig    // learned-rate (AIMD) settings; Rate.Start is the default per-domain rate
	Burst       float64       // token bucket capacity in tokens; default 1 (requests strictly paced)
	MaxInFlight int           // per-domain concurrency cap, independent of the rate; default 2
	Horizon     time.Duration // a grant may reserve tokens released up to this far ahead; default 1s
	LeaseTTL    time.Duration // an unreleased lease frees its slots after this; default 2m
	BusyRetry   time.Duration // wait suggested when every slot is held; default 100ms
	MaxRetries  int           // compare-and-swap attempts per call before giving up; default 64
}

func (c Config) withDefaults() Config {
	c.Rate = c.Rate.withDefaults()
	if c.Burst < 1 {
		c.Burst = 1
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 2
	}
	if c.Horizon <= 0 {
		c.Horizon = time.Second
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 2 * time.Minute
	}
	if c.BusyRetry <= 0 {
		c.BusyRetry = 100 * time.Millisecond
	}
	if c.MaxRetries <= 0 {
		c.MaxRetries = 64
	}
	return c
}

// Limiter applies a per-domain token bucket, concurrency cap and learned rate
// kept in a Store. Every method is one read-modify-compare-and-swap loop, so
// any number of workers (goroutines or Lambda invocations) share a domain's
// limits through the store alone.
type Limiter struct {
	store Store
	cfg   Config
	clk   clock.Clock
	seq   atomic.Uint64
	id    string
}

// NewLimiter returns a Limiter over store. A nil clk means clock.Real{}.
// owner names this process in lease IDs (any string unique per process).
func NewLimiter(store Store, cfg Config, clk clock.Clock, owner string) *Limiter {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Limiter{store: store, cfg: cfg.withDefaults(), clk: clk, id: owner}
}

// Config returns the limiter's configuration with defaults filled in.
func (l *Limiter) Config() Config { return l.cfg }

// Grant is the permission to send N requests to one domain.
type Grant struct {
	Domain string
	At     time.Time     // when the grant was made
	N      int           // requests granted; 0 means come back after Wait
	Slots  int           // requests that may be in flight at once under this grant (<= N)
	Lease  string        // lease to pass back to Settle; "" when N == 0
	Rate   float64       // the domain's rate (requests/s) when granted
	Wait   time.Duration // N == 0: how long until a request could be granted; N > 0: until the token after the grant
	// Keep, set by the caller before Settle, is how many of the grant's
	// slots are still in flight (stragglers): Settle keeps the lease with
	// that many slots instead of releasing it, and a later Settle with Keep
	// 0 releases the rest.
	Keep   int
	tokens float64       // tokens before the reservation, for Offset
	paused time.Duration // release of the first token is delayed by a pause
}

// Offset returns when the j-th granted request (0-based, j < N) may start,
// relative to At: requests are paced at the domain's rate.
func (g Grant) Offset(j int) time.Duration {
	return g.paused + Offset(g.tokens, j, g.Rate)
}

// Acquire asks for up to want requests to domain. It grants the tokens
// released within the horizon, and slots of the concurrency cap, in one
// compare-and-swap. It never blocks waiting for tokens: with nothing to grant
// it returns N == 0 and the Wait after which to ask again, having written
// nothing (one read of the store, no write). Errors come from
// the store, or wrap ErrConflict after Config.MaxRetries lost races.
func (l *Limiter) Acquire(ctx context.Context, domain string, want int) (Grant, error) {
	var g Grant
	err := l.update(ctx, domain, func(s *State, now time.Time) bool {
		g = Grant{Domain: domain, At: now, Rate: s.Learned.Rate}
		busy := pruneLeases(s, now)
		free := l.cfg.MaxInFlight - busy
		if free <= 0 {
			g.Wait = l.cfg.BusyRetry
			return false
		}
		paused := time.Duration(0)
		if s.PausedUntil.After(now) {
			paused = s.PausedUntil.Sub(now)
		}
		if paused > l.cfg.Horizon {
			g.Wait = paused
			return false
		}
		b := s.Bucket.Refill(now, g.Rate, l.cfg.Burst)
		g.tokens = b.Tokens
		g.paused = paused
		nb, n := b.Reserve(now, want, g.Rate, l.cfg.Burst, l.cfg.Horizon-paused)
		s.Bucket = nb
		if n == 0 {
			g.Wait = paused + nb.Wait(now, 1, g.Rate, l.cfg.Burst)
			return false
		}
		g.N = n
		g.Slots = min(n, free)
		g.Lease = l.id + "-" + strconv.FormatUint(l.seq.Add(1), 36)
		g.Wait = paused + Offset(g.tokens, n, g.Rate)
		s.Leases = append(s.Leases, Lease{ID: g.Lease, Slots: g.Slots, Expires: now.Add(l.cfg.LeaseTTL)})
		return true
	})
	return g, err
}

// Reserve takes one token from domain for a follow-up request (a redirect
// hop or a HEAD->GET fallback) made inside a check that already holds a
// slot, and returns how long from now the caller must wait before sending
// it: the token's release time, after any Retry-After pause. The token is
// taken at once, even into debt, so concurrent reservations queue up
// behind each other. It takes no concurrency slot. Errors are the store's.
func (l *Limiter) Reserve(ctx context.Context, domain string) (time.Duration, error) {
	var wait time.Duration
	err := l.update(ctx, domain, func(s *State, now time.Time) bool {
		b := s.Bucket.Refill(now, s.Learned.Rate, l.cfg.Burst)
		wait = Offset(b.Tokens, 0, s.Learned.Rate)
		if s.PausedUntil.After(now) {
			wait += s.PausedUntil.Sub(now)
		}
		b.Tokens--
		s.Bucket = b
		return true
	})
	return wait, err
}

// Settle releases a grant's slots and feeds what its requests observed into
// the learned rate (AIMD), in one compare-and-swap. A throttle with a
// Retry-After pauses the whole domain until then (RFC 9110 §10.2.3, RFC 6585
// §4) and drops banked tokens; fb.Extra requests are charged as token debt.
// It returns the domain's learned state afterwards.
func (l *Limiter) Settle(ctx context.Context, g Grant, fb Feedback) (Learned, error) {
	var out Learned
	err := l.update(ctx, g.Domain, func(s *State, now time.Time) bool {
		if g.Lease != "" {
			for i, ls := range s.Leases {
				if ls.ID != g.Lease {
					continue
				}
				if g.Keep > 0 && g.Keep < ls.Slots {
					s.Leases[i].Slots = g.Keep
				} else if g.Keep <= 0 {
					s.Leases = append(s.Leases[:i], s.Leases[i+1:]...)
				}
				break
			}
		}
		pruneLeases(s, now)
		// Refill at the old rate up to now, then switch rates.
		s.Bucket = s.Bucket.Refill(now, s.Learned.Rate, l.cfg.Burst)
		s.Bucket.Tokens -= float64(fb.Extra)
		if fb.Throttled > 0 {
			s.Bucket.Tokens = math.Min(s.Bucket.Tokens, 0)
			if fb.RetryAfter > 0 {
				if until := now.Add(fb.RetryAfter); until.After(s.PausedUntil) {
					s.PausedUntil = until
				}
			}
		}
		s.Learned = s.Learned.Observe(l.cfg.Rate, now, fb)
		out = s.Learned
		return true
	})
	return out, err
}

// Learned returns the domain's learned state (the start rate for a domain
// with none).
func (l *Limiter) Learned(ctx context.Context, domain string) (Learned, error) {
	s, err := l.store.Load(ctx, domain)
	if err != nil {
		return Learned{}, fmt.Errorf("loading %s: %w", domain, err)
	}
	if s.Learned.Rate <= 0 {
		s.Learned.Rate = l.cfg.Rate.Start
	}
	return s.Learned, nil
}

func pruneLeases(s *State, now time.Time) (busy int) {
	kept := s.Leases[:0]
	for _, ls := range s.Leases {
		if ls.Expires.After(now) {
			kept = append(kept, ls)
			busy += ls.Slots
		}
	}
	if len(kept) == 0 {
		kept = nil
	}
	s.Leases = kept
	return busy
}

// update applies fn to the domain's state with compare-and-swap, retrying
// lost races. fn reports whether the state must be written: a refused
// Acquire changes nothing that the next reader would not recompute (lazy
// refill, expired leases), so it costs a read and no write.
func (l *Limiter) update(ctx context.Context, domain string, fn func(*State, time.Time) bool) error {
	s, err := l.store.Load(ctx, domain)
	if err != nil {
		return fmt.Errorf("loading bucket of %s: %w", domain, err)
	}
	for attempt := range l.cfg.MaxRetries {
		if s.Learned.Rate <= 0 {
			s.Learned.Rate = l.cfg.Rate.Start
		}
		next := cloneState(s)
		if !fn(&next, l.clk.Now()) {
			return nil
		}
		cur, err := l.store.CompareAndSwap(ctx, domain, next)
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrConflict) {
			return fmt.Errorf("updating bucket of %s: %w", domain, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		s = cur
		if attempt >= 2 {
			// Many writers on one hot domain: back off a random 0..attempt
			// ms (at most 10) and read afresh, rather than racing again at
			// once with the state the failed write returned.
			pause := time.Duration(rand.Float64() * float64(min(attempt, 10)) * float64(time.Millisecond))
			if err := l.clk.Sleep(ctx, pause); err != nil {
				return err
			}
			if s, err = l.store.Load(ctx, domain); err != nil {
				return fmt.Errorf("loading bucket of %s: %w", domain, err)
			}
		}
	}
	return fmt.Errorf("updating bucket of %s: %d attempts lost: %w", domain, l.cfg.MaxRetries, ErrConflict)
}
