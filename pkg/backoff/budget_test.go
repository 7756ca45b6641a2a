package backoff

import (
	"math"
	"strings"
	"sync"
	"testing"
)

func TestBudget(t *testing.T) {
	tests := []struct {
		name   string
		ratio  float64
		min    int
		firsts int
		tries  int // TryRetry calls after recording firsts
		want   int // retries granted
	}{
		{"nothing allowed", 0, 0, 100, 10, 0},
		{"min only", 0, 3, 0, 10, 3},
		{"min with no firsts", 0.2, 10, 0, 50, 10},
		{"ratio only", 0.5, 0, 4, 10, 2},
		{"ratio rounds up to whole retries", 0.5, 0, 5, 10, 3},
		{"ratio and min", 0.2, 10, 1000, 500, 210},
		{"fewer tries than budget", 0.2, 10, 1000, 7, 7},
		{"ratio above one", 2, 0, 3, 10, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBudget(tt.ratio, tt.min)
			for range tt.firsts {
				b.First()
			}
			granted := 0
			for range tt.tries {
				if b.TryRetry() {
					granted++
				}
			}
			firsts, retries := b.Stats()
			if granted != tt.want || retries != tt.want || firsts != tt.firsts {
				t.Errorf("granted %d, Stats() = %d, %d; want granted %d, Stats() = %d, %d",
					granted, firsts, retries, tt.want, tt.firsts, tt.want)
			}
		})
	}
}

// TestBudgetRefills checks that first attempts recorded after the budget is
// spent make room for more retries, and that refusals reserve nothing.
func TestBudgetRefills(t *testing.T) {
	b := NewBudget(0.5, 1) // allowed while retries < 0.5*firsts + 1
	steps := []struct {
		first bool // true: call First; false: call TryRetry
		want  bool // TryRetry's expected answer
	}{
		{false, true},  // 0 < 1
		{false, false}, // 1 < 1 fails
		{false, false}, // refusal reserved nothing: still 1 < 1
		{true, false},  // firsts = 1
		{false, true},  // 1 < 1.5
		{false, false}, // 2 < 1.5 fails
		{true, false},  // firsts = 2
		{false, false}, // 2 < 2 fails
		{true, false},  // firsts = 3
		{false, true},  // 2 < 2.5
	}
	for i, s := range steps {
		if s.first {
			b.First()
			continue
		}
		if got := b.TryRetry(); got != s.want {
			f, r := b.Stats()
			t.Fatalf("step %d: TryRetry() = %v with firsts %d, retries %d; want %v", i, got, f, r, s.want)
		}
	}
	if f, r := b.Stats(); f != 3 || r != 3 {
		t.Errorf("Stats() = %d, %d; want 3, 3", f, r)
	}
}

// TestBudgetConcurrent hammers one Budget from many goroutines (run with
// -race) and checks that the cap holds in every snapshot and at the end.
func TestBudgetConcurrent(t *testing.T) {
	const (
		ratio      = 0.2
		min        = 10
		goroutines = 16
		perG       = 500
	)
	b := NewBudget(ratio, min)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	errs := make(chan string, goroutines)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := 0
			for range perG {
				b.First()
				// Each first attempt fails a few times: more retries wanted
				// than the budget can give.
				for range 3 {
					if b.TryRetry() {
						mine++
					}
				}
				if f, r := b.Stats(); float64(r-1) >= ratio*float64(f)+min {
					errs <- "snapshot over budget"
					return
				}
			}
			mu.Lock()
			granted += mine
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	firsts, retries := b.Stats()
	if firsts != goroutines*perG {
		t.Errorf("firsts = %d; want %d", firsts, goroutines*perG)
	}
	if retries != granted {
		t.Errorf("Stats retries = %d but %d TryRetry calls returned true", retries, granted)
	}
	// retries < ratio*firsts + min held before the last grant, so at the end
	// retries <= ceil(ratio*firsts + min); demand far exceeds supply, so the
	// budget must also be used up to within one first attempt's worth.
	limit := ratio*float64(firsts) + min
	if float64(retries) > math.Ceil(limit) {
		t.Errorf("retries = %d; over budget %v", retries, limit)
	}
	if float64(retries) < limit-1 {
		t.Errorf("retries = %d; budget %v was not used up", retries, limit)
	}
}

func TestNewBudgetRejectsBadInput(t *testing.T) {
	tests := []struct {
		name  string
		ratio float64
		min   int
		want  string // substring of the panic message
	}{
		{"negative ratio", -0.1, 0, "ratio"},
		{"NaN ratio", math.NaN(), 0, "ratio"},
		{"infinite ratio", math.Inf(1), 0, "ratio"},
		{"negative min", 0.2, -1, "min"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if r == nil || !strings.Contains(msg, tt.want) {
					t.Errorf("NewBudget(%v, %d) panic = %v; want a message naming %q", tt.ratio, tt.min, r, tt.want)
				}
			}()
			NewBudget(tt.ratio, tt.min)
		})
	}
}
