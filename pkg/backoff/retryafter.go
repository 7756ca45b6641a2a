package backoff

import (
	"net/http"
	"strings"
	"time"
)

// ParseRetryAfter parses a Retry-After field value (RFC 9110 §10.2.3) and
// returns how long to wait from now.
//
// The value is either delta-seconds (1*DIGIT, a whole number of seconds, no
// sign) or an HTTP-date in IMF-fixdate form or one of the two obsolete forms
// that RFC 9110 §5.6.7 says recipients MUST accept, RFC 850 and ANSI C
// asctime (parsed with http.ParseTime). Leading and trailing spaces and tabs
// (OWS, RFC 9110 §5.5) are ignored. For an RFC 850 date, whose year has only
// two digits, a year that would lie more than 50 years after now is taken as
// the most recent past year with the same last two digits (RFC 9110 §5.6.7),
// and otherwise the year within 50 years of now is used.
//
// The result d is clamped to [0, maxWait]: a date in the past (for example
// because of clock skew) gives 0, and a delay longer than maxWait, including
// one too large to represent, gives maxWait. A negative maxWait is treated as
// 0. ok is false, and d is 0, when the value is empty or malformed (a sign, a
// fraction, a unit, trailing text, or an unparseable date); the caller then
// falls back to its own backoff.
func ParseRetryAfter(value string, now time.Time, maxWait time.Duration) (d time.Duration, ok bool) {
	if maxWait < 0 {
		maxWait = 0
	}
	v := strings.Trim(value, " \t")
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		return parseDeltaSeconds(v, maxWait), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if _, err := time.Parse(time.RFC850, v); err == nil {
		t = fixRFC850Year(t, now)
	}
	d = t.Sub(now) // saturates instead of overflowing
	return clamp(d, maxWait), true
}

// parseDeltaSeconds converts a non-empty all-digit string to a duration,
// saturating at maxWait (which is >= 0) without ever overflowing.
func parseDeltaSeconds(v string, maxWait time.Duration) time.Duration {
	limit := int64(maxWait / time.Second) // whole seconds that fit in maxWait
	var secs int64
	for i := 0; i < len(v); i++ {
		secs = secs*10 + int64(v[i]-'0')
		if secs > limit {
			return maxWait
		}
	}
	return time.Duration(secs) * time.Second
}

// fixRFC850Year applies the RFC 9110 §5.6.7 rule for two-digit years as a
// sliding window around now: a year that would lie more than 50 years after
// now is the most recent past year with the same last two digits, and any
// other reading lies within 50 years of now. time.Parse's own fixed pivot
// (69..99 => 19xx, 00..68 => 20xx) ignores now.
func fixRFC850Year(t, now time.Time) time.Time {
	nowUTC := now.UTC()
	year := nowUTC.Year() - nowUTC.Year()%100 + t.Year()%100
	at := func(y int) time.Time {
		return time.Date(y, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location())
	}
	fixed := at(year)
	switch {
	case fixed.After(nowUTC.AddDate(50, 0, 0)):
		fixed = at(year - 100)
	case !fixed.After(nowUTC.AddDate(-50, 0, 0)):
		fixed = at(year + 100)
	}
	return fixed
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func clamp(d, maxWait time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	if d > maxWait {
		return maxWait
	}
	return d
}
