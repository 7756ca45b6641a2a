package backoff

import (
	"strings"
	"testing"
	"time"
)

// now is a fixed reference time: Sunday, 1 June 2025, 12:00:00 UTC.
var now = time.Date(2025, time.June, 1, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	const limit = 10 * time.Minute
	tests := []struct {
		name   string
		value  string
		now    time.Time
		max    time.Duration
		want   time.Duration
		wantOK bool
	}{
		// delta-seconds
		{"seconds", "120", now, limit, 120 * time.Second, true},
		{"zero", "0", now, limit, 0, true},
		{"leading zeros", "0007", now, limit, 7 * time.Second, true},
		{"exactly max", "600", now, limit, limit, true},
		{"just above max clamps", "601", now, limit, limit, true},
		{"huge clamps", "99999999999999999999999999999999", now, limit, limit, true},
		{"beyond int64 seconds clamps", "9223372036854775808", now, limit, limit, true},
		{"surrounding spaces", " 5 ", now, limit, 5 * time.Second, true},
		{"surrounding tabs", "\t5\t", now, limit, 5 * time.Second, true},
		{"negative max treated as zero", "5", now, -time.Second, 0, true},
		{"zero max", "5", now, 0, 0, true},
		{"sub-second max", "1", now, 1500 * time.Millisecond, time.Second, true},
		{"sub-second max clamps", "2", now, 1500 * time.Millisecond, 1500 * time.Millisecond, true},
		// malformed delta-seconds
		{"negative", "-5", now, limit, 0, false},
		{"plus sign", "+5", now, limit, 0, false},
		{"fraction", "1.5", now, limit, 0, false},
		{"unit", "5s", now, limit, 0, false},
		{"inner space", "5 5", now, limit, 0, false},
		{"non-digits", "abc", now, limit, 0, false},
		{"non-ASCII digit", "\uff15", now, limit, 0, false},
		{"hex", "0x10", now, limit, 0, false},
		{"empty", "", now, limit, 0, false},
		{"only spaces", "   ", now, limit, 0, false},
		{"garbage", "soon, please", now, limit, 0, false},
		// HTTP-date, RFC 9110 §5.6.7
		{"IMF-fixdate future", "Sun, 01 Jun 2025 12:02:00 GMT", now, limit, 2 * time.Minute, true},
		{"IMF-fixdate now", "Sun, 01 Jun 2025 12:00:00 GMT", now, limit, 0, true},
		{"IMF-fixdate past gives zero", "Sun, 01 Jun 2025 11:00:00 GMT", now, limit, 0, true},
		{"IMF-fixdate far future clamps", "Fri, 01 Jan 2100 00:00:00 GMT", now, limit, limit, true},
		{"IMF-fixdate year 9999 clamps", "Fri, 31 Dec 9999 23:59:59 GMT", now, limit, limit, true},
		{"IMF-fixdate with spaces", "  Sun, 01 Jun 2025 12:00:10 GMT ", now, limit, 10 * time.Second, true},
		{"IMF-fixdate sub-second now", "Sun, 01 Jun 2025 12:00:10 GMT", now.Add(250 * time.Millisecond), limit, 9750 * time.Millisecond, true},
		{"RFC 850", "Sunday, 01-Jun-25 12:00:30 GMT", now, limit, 30 * time.Second, true},
		{"RFC 850 past", "Saturday, 31-May-25 12:00:30 GMT", now, limit, 0, true},
		{"asctime", "Sun Jun  1 12:01:00 2025", now, limit, time.Minute, true},
		{"asctime past", "Sun Jun  1 11:59:00 2025", now, limit, 0, true},
		{"invalid day", "Sun, 32 Jun 2025 12:00:00 GMT", now, limit, 0, false},
		{"ISO 8601 is not an HTTP-date", "2025-06-01T12:01:00Z", now, limit, 0, false},
		{"date with trailing text", "Sun, 01 Jun 2025 12:02:00 GMT x", now, limit, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseRetryAfter(tt.value, tt.now, tt.max)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseRetryAfter(%q, %v, %v) = %v, %v; want %v, %v",
					tt.value, tt.now, tt.max, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestParseRetryAfterRFC850Year checks the two-digit-year rule of RFC 9110
// §5.6.7, which differs from time.Parse's fixed 1969 pivot.
func TestParseRetryAfterRFC850Year(t *testing.T) {
	const limit = 200 * 365 * 24 * time.Hour
	tests := []struct {
		name     string
		now      time.Time
		value    string
		wantYear int // year the date must be read as
	}{
		// 2074 is 43 years after 2031: within 50, so it stays in the future
		// (time.Parse alone would say 1974).
		{"74 read as 2074 in 2031", time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC), "Monday, 01-Jan-74 00:00:00 GMT", 2074},
		// 2099 is 68 years after 2031: more than 50, so it is the past 1999.
		{"99 read as 1999 in 2031", time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC), "Friday, 01-Jan-99 00:00:00 GMT", 1999},
		// 2001 is 98 years before 2099: outside the window, so it is 2101.
		{"01 read as 2101 in 2099", time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), "Saturday, 01-Jan-01 00:00:00 GMT", 2101},
		{"25 read as 2025 in 2025", now, "Sunday, 01-Jun-25 13:00:00 GMT", 2025},
		{"26 read as 2126 in 2099", time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), "Friday, 01-Jan-26 00:00:00 GMT", 2126},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseRetryAfter(tt.value, tt.now, limit)
			if !ok {
				t.Fatalf("ParseRetryAfter(%q) not ok", tt.value)
			}
			// Rebuild the expected wait from the parsed fields and the year.
			fields, err := time.Parse(time.RFC850, tt.value)
			if err != nil {
				t.Fatal(err)
			}
			target := time.Date(tt.wantYear, fields.Month(), fields.Day(), fields.Hour(), fields.Minute(), fields.Second(), 0, time.UTC)
			want := min(max(target.Sub(tt.now), 0), limit)
			if got != want {
				t.Errorf("ParseRetryAfter(%q, %v) = %v; want %v (year %d)", tt.value, tt.now, got, want, tt.wantYear)
			}
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	nowUnix := now.Unix()
	seeds := []string{
		"120", "0", "0007", "99999999999999999999999", "-5", "+5", "1.5", "5s", " 5 ", "\t5\t", "",
		"abc", "Sun, 01 Jun 2025 12:02:00 GMT", "Sun, 01 Jun 2025 11:00:00 GMT",
		"Sunday, 01-Jun-25 12:00:30 GMT", "Sun Jun  1 12:01:00 2025", "Fri, 31 Dec 9999 23:59:59 GMT",
		"Monday, 01-Jan-74 00:00:00 GMT",
	}
	for _, s := range seeds {
		f.Add(s, nowUnix, int64(10*time.Minute))
	}
	f.Add("5", nowUnix, int64(-1))
	f.Add("Sun, 01 Jun 2025 12:02:00 GMT", int64(-1<<62), int64(1<<62))
	f.Fuzz(func(t *testing.T, value string, nowSec int64, maxNanos int64) {
		n := time.Unix(nowSec, 0)
		maxWait := time.Duration(maxNanos)
		d, ok := ParseRetryAfter(value, n, maxWait)
		upper := max(maxWait, 0)
		if d < 0 || d > upper {
			t.Fatalf("ParseRetryAfter(%q, %v, %v) = %v, outside [0, %v]", value, n, maxWait, d, upper)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v with ok=false; want 0", value, d)
		}
		if ok && !strings.ContainsAny(value, "0123456789") {
			t.Fatalf("ParseRetryAfter(%q) ok with no digits", value)
		}
		// For plain delta-seconds small enough to compute exactly, the result
		// must be that many seconds, clamped.
		trimmed := strings.Trim(value, " \t")
		if isDigits(trimmed) && len(trimmed) <= 9 {
			var secs int64
			for _, c := range trimmed {
				secs = secs*10 + int64(c-'0')
			}
			want := min(time.Duration(secs)*time.Second, upper)
			if !ok || d != want {
				t.Fatalf("ParseRetryAfter(%q, max %v) = %v, %v; want %v, true", value, maxWait, d, ok, want)
			}
		}
	})
}
