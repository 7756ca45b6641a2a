package backoff

import (
	"fmt"
	"math"
	"sync"
)

// Budget caps retries at a fraction of first attempts, a retry budget as in
// gRPC (retryThrottling), Finagle (RetryBudget) and Envoy (retry_budget): a
// retry is allowed while retries < Ratio*firsts + Min, where firsts and
// retries count the first attempts recorded and the retries granted so far.
// Min lets a run that has just started retry at all; Ratio bounds the extra
// load retries can add (0.2 means at most about 20 % more requests), so that
// a widespread failure does not multiply traffic by the per-request attempt
// limit. Counts are kept for the Budget's lifetime; they do not decay.
//
// A Budget is safe for concurrent use.
type Budget struct {
	ratio float64
	min   int

	mu      sync.Mutex
	firsts  int
	retries int
}

// NewBudget returns a Budget allowing ratio retries per first attempt plus a
// floor of min retries (for example 0.2 and 10). It panics, naming the bad
// argument, if ratio is negative, NaN or infinite, or if min is negative:
// these are programming errors, to be caught when the configuration is read.
func NewBudget(ratio float64, min int) *Budget {
	if math.IsNaN(ratio) || math.IsInf(ratio, 0) || ratio < 0 {
		panic(fmt.Sprintf("backoff.NewBudget: ratio must be a finite number >= 0, got %v", ratio))
	}
	if min < 0 {
		panic(fmt.Sprintf("backoff.NewBudget: min must be >= 0, got %d", min))
	}
	return &Budget{ratio: ratio, min: min}
}

// First records one first attempt, which raises the retry allowance by Ratio.
func (b *Budget) First() {
	b.mu.Lock()
	b.firsts++
	b.mu.Unlock()
}

// TryRetry reserves one retry if retries < Ratio*firsts + Min and reports
// whether it did; false means the budget is spent and the caller should give
// up. A refused call reserves nothing.
func (b *Budget) TryRetry() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if float64(b.retries) < b.ratio*float64(b.firsts)+float64(b.min) {
		b.retries++
		return true
	}
	return false
}

// Stats returns, as one consistent snapshot, the number of first attempts
// recorded and the number of retries granted.
func (b *Budget) Stats() (firsts, retries int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.firsts, b.retries
}
