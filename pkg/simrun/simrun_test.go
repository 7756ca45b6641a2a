package simrun

import (
	"testing"

	"github.com/urlcheck/urlcheck/pkg/simweb"
)

func TestLowerBound(t *testing.T) {
	stats := map[string]simweb.DomainStats{
		"example.com": {Limit: simweb.Limit{Rate: 10}},
		"slow.org":    {Limit: simweb.Limit{Rate: 1}},
		"free.net":    {},
	}
	tests := []struct {
		name   string
		urls   []string
		want   float64
		domain string
	}{
		{"none", nil, 0, ""},
		{"subdomains share the registrable domain", []string{"http://a.example.com/1", "https://b.example.com/2", "http://example.com/3"}, 0.3, "example.com"},
		{"the slow domain dominates", []string{"http://a.example.com/1", "http://x.slow.org/", "http://y.slow.org/"}, 2, "slow.org"},
		{"an unlimited domain has no bound", []string{"http://free.net/a", "http://free.net/b"}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, d := LowerBound(tc.urls, stats)
			if got != tc.want || d != tc.domain {
				t.Fatalf("LowerBound = %v on %q, want %v on %q", got, d, tc.want, tc.domain)
			}
		})
	}
}

func TestRunFigures(t *testing.T) {
	tests := []struct {
		r            Run
		share, ratio float64
	}{
		{Run{}, 0, 0},
		{Run{Requests: 200, Throttled: 3, LowerBound: 10}, 0.015, 0},
	}
	for _, tc := range tests {
		if tc.r.ThrottledShare() != tc.share || tc.r.Ratio() != tc.ratio {
			t.Errorf("%+v: share %v ratio %v, want %v and %v", tc.r, tc.r.ThrottledShare(), tc.r.Ratio(), tc.share, tc.ratio)
		}
	}
}
