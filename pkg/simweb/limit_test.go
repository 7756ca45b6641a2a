package simweb

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestBucketTake(t *testing.T) {
	type step struct {
		at     time.Duration // since epoch
		ok     bool
		wantWt time.Duration // wait when refused
	}
	tests := []struct {
		name        string
		rate, burst float64
		steps       []step
	}{
		{"burst then refuse", 2, 3, []step{
			{0, true, 0}, {0, true, 0}, {0, true, 0}, {0, false, 500 * time.Millisecond},
		}},
		{"refill at rate", 2, 3, []step{
			{0, true, 0}, {0, true, 0}, {0, true, 0},
			{250 * time.Millisecond, false, 250 * time.Millisecond}, // 0.5 token
			{500 * time.Millisecond, true, 0},                       // 1 token
			{500 * time.Millisecond, false, 500 * time.Millisecond},
		}},
		{"capacity caps refill", 1, 2, []step{
			{0, true, 0}, {0, true, 0},
			{time.Hour, true, 0}, {time.Hour, true, 0}, {time.Hour, false, time.Second},
		}},
		{"burst below 1 acts as 1", 4, 0, []step{
			{0, true, 0}, {0, false, 250 * time.Millisecond}, {250 * time.Millisecond, true, 0},
		}},
		{"rate 0 is unlimited", 0, 0, []step{{0, true, 0}, {0, true, 0}, {0, true, 0}}},
		{"time going back refills nothing", 1, 1, []step{
			{time.Second, true, 0}, {0, false, time.Second}, {2 * time.Second, true, 0},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBucket(tc.rate, tc.burst)
			for i, s := range tc.steps {
				ok, wait := b.take(epoch.Add(s.at))
				if ok != s.ok || (!ok && wait != s.wantWt) {
					t.Fatalf("step %d at +%v: take = %v, %v; want %v, %v", i, s.at, ok, wait, s.ok, s.wantWt)
				}
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	tests := []struct {
		wait time.Duration
		want int64
	}{
		{0, 1}, {time.Nanosecond, 1}, {time.Second, 1}, {time.Second + 1, 2}, {2500 * time.Millisecond, 3}, {10 * time.Second, 10},
	}
	for _, tc := range tests {
		if got := retryAfterSeconds(tc.wait); got != tc.want {
			t.Errorf("retryAfterSeconds(%v) = %d, want %d", tc.wait, got, tc.want)
		}
	}
}

func TestRetryAfterDate(t *testing.T) {
	whole := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		now  time.Time
		wait time.Duration
		want string
	}{
		{whole, 0, "Sat, 01 Mar 2025 12:00:01 GMT"},                                           // at least 1 s
		{whole, 2 * time.Second, "Sat, 01 Mar 2025 12:00:02 GMT"},                             // exact
		{whole.Add(300 * time.Millisecond), 2 * time.Second, "Sat, 01 Mar 2025 12:00:03 GMT"}, // 12:00:02.3 rounds up
		{whole.Add(300 * time.Millisecond), 100 * time.Millisecond, "Sat, 01 Mar 2025 12:00:02 GMT"},
		{whole.In(time.FixedZone("CET", 3600)), 5 * time.Second, "Sat, 01 Mar 2025 12:00:05 GMT"}, // always GMT
	}
	for _, tc := range tests {
		got := retryAfterDate(tc.now, tc.wait)
		if got != tc.want {
			t.Errorf("retryAfterDate(%v, %v) = %q, want %q", tc.now, tc.wait, got, tc.want)
		}
		if at, err := http.ParseTime(got); err != nil || at.Before(tc.now.Add(max(tc.wait, time.Second))) {
			t.Errorf("retryAfterDate(%v, %v) = %q names a time before a token is available (parse err %v)", tc.now, tc.wait, got, err)
		}
	}
}

func TestLimitValidate(t *testing.T) {
	tests := []struct {
		l    Limit
		want string // substring of the error, "" for none
	}{
		{Limit{Rate: 1, Burst: 1}, ""},
		{Limit{}, ""},
		{Limit{Rate: -1}, "Rate"},
		{Limit{Burst: -1}, "Burst"},
		{Limit{Rate: 1, Mode: 99}, "Mode"},
	}
	for _, tc := range tests {
		err := tc.l.validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("validate(%+v) = %v, want error containing %q", tc.l, err, tc.want)
		}
	}
}
