package bucket

import (
	"math"
	"time"
)

// RateConfig tunes how a domain's learned rate moves. All rates are in
// requests (tokens) per second.
//
// The controller is AIMD with a slow start, after TCP congestion control
// (RFC 5681): below the last rate that drew a congestion signal (Ceiling) the
// rate doubles per success streak, above half of it the rate grows additively,
// and a congestion signal cuts it multiplicatively, more steeply when signals
// repeat without a success streak in between (×Decrease, ×Decrease^1.5,
// then ×Decrease^2).
type RateConfig struct {
	Start float64 // rate for a domain never seen before; default 2
	Min   float64 // floor; default 0.1 (one request every 10 s)
	Max   float64 // ceiling; default 100

	Decrease        float64       // factor applied on a 429/503 signal; default 0.5
	TimeoutDecrease float64       // factor applied on a timeout-only signal; default 0.75
	LatencyDecrease float64       // factor applied when p95 latency rises; default 0.9
	Cooldown        time.Duration // signals within this of the last cut are echoes of the old rate and do not cut again; default 1s

	StreakSeconds float64 // a success streak is ceil(rate × StreakSeconds) responses, at least MinStreak; default 0.25
	MinStreak     int     // default 2
	SlowStart     float64 // growth factor per streak while below Ceiling/2 or never cut; default 2
	IncreaseFrac  float64 // additive step per streak as a fraction of Ceiling; default 0.05
	IncreaseMin   float64 // additive step floor in r/s; default 0.25

	// IsolatedAfter: a timeout that comes after at least this many
	// successes since the last congestion signal is taken as one URL's
	// fault (a hung endpoint), not congestion: it halves the streak instead
	// of cutting; default 8.
	IsolatedAfter int

	LatencyFactor float64       // p95 above this × the base latency is a congestion signal; default 3
	LatencyFloor  time.Duration // ... and only when p95 is above this; default 250ms
}

// DefaultRateConfig returns the defaults documented on RateConfig.
func DefaultRateConfig() RateConfig {
	return RateConfig{}.withDefaults()
}

func (c RateConfig) withDefaults() RateConfig {
	def := func(v *float64, d float64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Start, 2)
	def(&c.Min, 0.1)
	def(&c.Max, 100)
	def(&c.Decrease, 0.5)
	def(&c.TimeoutDecrease, 0.75)
	def(&c.LatencyDecrease, 0.9)
	def(&c.StreakSeconds, 0.25)
	def(&c.SlowStart, 2)
	def(&c.IncreaseFrac, 0.05)
	def(&c.IncreaseMin, 0.25)
	def(&c.LatencyFactor, 3)
	if c.Cooldown <= 0 {
		c.Cooldown = time.Second
	}
	if c.IsolatedAfter <= 0 {
		c.IsolatedAfter = 8
	}
	if c.MinStreak <= 0 {
		c.MinStreak = 2
	}
	if c.LatencyFloor <= 0 {
		c.LatencyFloor = 250 * time.Millisecond
	}
	if c.Start < c.Min {
		c.Start = c.Min
	}
	if c.Start > c.Max {
		c.Start = c.Max
	}
	return c
}

// Learned is the learned-rate state of one registrable domain: the row of
// the "table of learned rates" that persists across jobs.
type Learned struct {
	Rate    float64   `json:"rate"`              // current rate, requests/s
	Ceiling float64   `json:"ceiling,omitempty"` // rate at the last congestion cut; 0 = never cut
	Streak  int       `json:"streak,omitempty"`  // responses without a congestion signal since the last change
	Cuts    int       `json:"cuts,omitempty"`    // consecutive cuts without a full success streak between
	LastCut time.Time `json:"last_cut,omitempty"`
	BaseMS  float64   `json:"base_ms,omitempty"` // baseline latency in ms: a slowly rising minimum
	Signals int       `json:"signals,omitempty"` // congestion signals ever seen (429/503/timeouts)
	Clean   int       `json:"clean,omitempty"`   // successes since the last throttle or congestion timeout
}

// Feedback is what a batch of requests to one domain observed.
type Feedback struct {
	OK         int           // responses that were not a throttle (any status but 429 and throttling 503s)
	Throttled  int           // 429 and 503 responses
	Timeouts   int           // requests that timed out
	RetryAfter time.Duration // the largest sane Retry-After among the throttles, 0 if none
	P95        time.Duration // p95 latency of the batch's responses, 0 if unknown
	Extra      int           // requests beyond one per granted token (redirect hops, HEAD->GET fallbacks) to charge as debt
	// Backlogged says the domain has enough pending work that a higher rate
	// would shorten the job. Growth is withheld when false, so domains off the
	// critical path never probe a host's limit for nothing.
	Backlogged bool
}

// Observe returns the learned state after fb was observed at now.
func (s Learned) Observe(c RateConfig, now time.Time, fb Feedback) Learned {
	c = c.withDefaults()
	if s.Rate <= 0 {
		s.Rate = c.Start
	}
	sinceCut := now.Sub(s.LastCut)
	cut := func(factor float64) {
		s.Streak = 0
		if !s.LastCut.IsZero() && sinceCut < c.Cooldown {
			return // an echo of requests sent before the last cut
		}
		s.Cuts++
		s.Ceiling = s.Rate
		// 1st cut ×factor, 2nd ×factor^1.5, 3rd and later ×factor^2.
		s.Rate = math.Max(c.Min, s.Rate*math.Pow(factor, 1+0.5*float64(min(s.Cuts, 3)-1)))
		s.LastCut = now
	}
	switch {
	case fb.Throttled > 0:
		s.Signals += fb.Throttled + fb.Timeouts
		s.Clean = 0
		cut(c.Decrease)
		return s
	case fb.Timeouts > 0:
		s.Signals += fb.Timeouts
		if s.Clean+fb.OK >= c.IsolatedAfter {
			s.Clean += fb.OK
			s.Streak /= 2
			return s
		}
		s.Clean = 0
		cut(c.TimeoutDecrease)
		return s
	}
	if fb.P95 > 0 {
		ms := float64(fb.P95) / float64(time.Millisecond)
		if s.BaseMS == 0 || ms < s.BaseMS {
			s.BaseMS = ms
		} else if fb.P95 > c.LatencyFloor && ms > c.LatencyFactor*s.BaseMS {
			s.Streak = 0
			if s.LastCut.IsZero() || sinceCut >= c.Cooldown {
				s.Rate = math.Max(c.Min, s.Rate*c.LatencyDecrease)
				s.LastCut = now
			}
			return s
		} else {
			s.BaseMS += (ms - s.BaseMS) * 0.01 // let the baseline follow a host that got slower for good
		}
	}
	s.Streak += fb.OK
	s.Clean += fb.OK
	for {
		need := max(c.MinStreak, int(math.Ceil(s.Rate*c.StreakSeconds)))
		if s.Streak < need {
			break
		}
		s.Streak -= need
		s.Cuts = 0
		if !fb.Backlogged {
			continue
		}
		if s.Ceiling == 0 || s.Rate < s.Ceiling/2 {
			s.Rate *= c.SlowStart
			if s.Ceiling > 0 {
				s.Rate = math.Min(s.Rate, s.Ceiling/2)
			}
		} else {
			s.Rate += math.Max(c.IncreaseMin, c.IncreaseFrac*s.Ceiling)
		}
		s.Rate = math.Min(s.Rate, c.Max)
	}
	return s
}
