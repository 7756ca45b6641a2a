// Package buckettest holds the contract that every bucket.Store must pass:
// the in-memory store here, and the DynamoDB store of the serverless
// pipeline. Call Run from a test of each implementation.
package buckettest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/urlcheck/urlcheck/pkg/bucket"
	"github.com/urlcheck/urlcheck/pkg/clock"
)

// Run runs the store contract against stores made by newStore; each subtest
// gets a fresh store (or one whose domains are fresh: the contract uses
// domain names unique to each subtest, so a shared backend also works).
// workers sets the concurrency of the race tests (16 is the pipeline's
// requirement); ops the writes per worker.
func Run(t *testing.T, newStore func(t *testing.T) bucket.Store, workers, ops int) {
	ctx := context.Background()
	stamp := time.Now().UnixNano()
	dom := func(name string) string { return fmt.Sprintf("%s-%d.example", name, stamp) }

	t.Run("absent domain loads as version 0", func(t *testing.T) {
		s := newStore(t)
		st, err := s.Load(ctx, dom("absent"))
		if err != nil {
			t.Fatal(err)
		}
		if st.Version != 0 || st.Bucket.Tokens != 0 || len(st.Leases) != 0 {
			t.Fatalf("absent domain = %+v, want zero state", st)
		}
	})

	t.Run("swap creates, bumps version and round-trips every field", func(t *testing.T) {
		s := newStore(t)
		d := dom("roundtrip")
		at := time.Date(2026, 3, 4, 5, 6, 7, 8000, time.UTC)
		want := bucket.State{
			Bucket:      bucket.Bucket{Tokens: -2.5, Refilled: at},
			PausedUntil: at.Add(3 * time.Second),
			Learned:     bucket.Learned{Rate: 7.25, Ceiling: 9, Streak: 4, Cuts: 1, LastCut: at, BaseMS: 12.5, Signals: 3, Clean: 7},
			Leases:      []bucket.Lease{{ID: "w1-1", Slots: 2, Expires: at.Add(time.Minute)}},
		}
		got, err := s.CompareAndSwap(ctx, d, want)
		if err != nil {
			t.Fatal(err)
		}
		if got.Version != 1 {
			t.Fatalf("version after create = %d, want 1", got.Version)
		}
		loaded, err := s.Load(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		want.Version = 1
		if err := sameState(loaded, want); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("stale version conflicts and returns the current state", func(t *testing.T) {
		s := newStore(t)
		d := dom("stale")
		if _, err := s.CompareAndSwap(ctx, d, bucket.State{Bucket: bucket.Bucket{Tokens: 1}}); err != nil {
			t.Fatal(err)
		}
		cur, err := s.CompareAndSwap(ctx, d, bucket.State{Bucket: bucket.Bucket{Tokens: 5}})
		if !errors.Is(err, bucket.ErrConflict) {
			t.Fatalf("create over an existing item: err = %v, want ErrConflict", err)
		}
		if cur.Version != 1 || cur.Bucket.Tokens != 1 {
			t.Fatalf("conflict returned %+v, want version 1 with 1 token", cur)
		}
		cur.Bucket.Tokens = 3
		if _, err := s.CompareAndSwap(ctx, d, cur); err != nil {
			t.Fatalf("swap with the returned version: %v", err)
		}
		if _, err := s.CompareAndSwap(ctx, d, cur); !errors.Is(err, bucket.ErrConflict) {
			t.Fatalf("reusing a consumed version: err = %v, want ErrConflict", err)
		}
	})

	t.Run("concurrent read-modify-write loses no update", func(t *testing.T) {
		s := newStore(t)
		d := dom("counter")
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range ops {
					st, err := s.Load(ctx, d)
					for {
						if err != nil && !errors.Is(err, bucket.ErrConflict) {
							errs <- err
							return
						}
						st.Bucket.Tokens++
						st, err = s.CompareAndSwap(ctx, d, st)
						if err == nil {
							break
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		st, err := s.Load(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if want := float64(workers * ops); st.Bucket.Tokens != want || st.Version != int64(workers*ops) {
			t.Fatalf("counter = %v at version %d, want %v at version %v", st.Bucket.Tokens, st.Version, want, want)
		}
	})

	t.Run("limiter grants never exceed rate x t + burst under concurrency", func(t *testing.T) {
		s := newStore(t)
		d := dom("grants")
		clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		cfg := bucket.Config{Rate: bucket.RateConfig{Start: 10, Max: 10}, Burst: 3, MaxInFlight: 1 << 20, Horizon: 300 * time.Millisecond}
		type grant struct {
			at time.Time
			n  int
		}
		var mu sync.Mutex
		var log []grant
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lim := bucket.NewLimiter(s, cfg, clk, fmt.Sprintf("w%d", w))
				for range ops {
					g, err := lim.Acquire(ctx, d, 2)
					if err != nil {
						errs <- err
						return
					}
					if g.N > 0 {
						mu.Lock()
						for j := range g.N {
							log = append(log, grant{at: g.At.Add(g.Offset(j)), n: 1})
						}
						mu.Unlock()
						if _, err := lim.Settle(ctx, g, bucket.Feedback{OK: g.N}); err != nil {
							errs <- err
							return
						}
					}
				}
			}()
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // the clock moves while workers race
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
					clk.Advance(7 * time.Millisecond)
					time.Sleep(50 * time.Microsecond) // let workers interleave; not a timing assertion
				}
			}
		}()
		wg.Wait()
		close(stop)
		<-done
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(log) == 0 {
			t.Fatal("no grants at all")
		}
		sort.Slice(log, func(i, j int) bool { return log[i].at.Before(log[j].at) })
		// Every window [log[i].at, log[j].at] may hold at most rate*len + burst releases.
		for i := range log {
			for j := i; j < len(log); j++ {
				span := log[j].at.Sub(log[i].at).Seconds()
				if n := j - i + 1; float64(n) > 10*span+3+1e-9 {
					t.Fatalf("%d releases within %.3fs: more than rate 10/s x t + burst 3", n, span)
				}
			}
		}
	})
}

func sameState(got, want bucket.State) error {
	eq := func(a, b time.Time) bool { return a.Equal(b) }
	switch {
	case got.Version != want.Version, got.Bucket.Tokens != want.Bucket.Tokens, !eq(got.Bucket.Refilled, want.Bucket.Refilled),
		!eq(got.PausedUntil, want.PausedUntil), got.Learned.Rate != want.Learned.Rate, got.Learned.Ceiling != want.Learned.Ceiling,
		got.Learned.Streak != want.Learned.Streak, got.Learned.Cuts != want.Learned.Cuts, !eq(got.Learned.LastCut, want.Learned.LastCut),
		got.Learned.BaseMS != want.Learned.BaseMS, got.Learned.Signals != want.Learned.Signals, got.Learned.Clean != want.Learned.Clean, len(got.Leases) != len(want.Leases):
		return fmt.Errorf("state = %+v, want %+v", got, want)
	}
	for i := range got.Leases {
		if got.Leases[i].ID != want.Leases[i].ID || got.Leases[i].Slots != want.Leases[i].Slots || !eq(got.Leases[i].Expires, want.Leases[i].Expires) {
			return fmt.Errorf("lease %d = %+v, want %+v", i, got.Leases[i], want.Leases[i])
		}
	}
	return nil
}
