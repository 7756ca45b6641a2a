package simweb

import (
	"context"
	"crypto/x509"
	"errors"
	"math"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var bigScenario = Scenario{
	Seed:    42,
	Domains: 30,
	Big:     []int{120, 80},
	URLs:    400,
	RateMin: 2, RateMax: 12, BigRate: 25,
	BurstFactor: 0.5,
	HTTPS:       0.4,
	Faults: Faults{NotFound: 0.05, Gone: 0.02, ServerError: 0.03, Redirect: 0.05, CrossRedirect: 0.04,
		Loop: 0.01, Hang: 0.01, Reset: 0.01, DNS: 0.02, TLS: 0.02, Bot: 0.02, HeadHostileHosts: 0.2},
	Modes: []ThrottleMode{Throttle429Seconds, Throttle429Date, Throttle503},
}

func TestScenarioDeterministic(t *testing.T) {
	build := func(s Scenario) (*Web, []string, map[string]string) {
		w := New(newManualClock())
		urls, truth := s.Build(w)
		return w, urls, truth
	}
	w1, u1, t1 := build(bigScenario)
	w2, u2, t2 := build(bigScenario)
	if !reflect.DeepEqual(u1, u2) || !reflect.DeepEqual(t1, t2) || !reflect.DeepEqual(w1.hosts, w2.hosts) || !reflect.DeepEqual(w1.Stats(), w2.Stats()) {
		t.Error("the same Scenario built different webs or URLs")
	}
	other := bigScenario
	other.Seed = 43
	if _, u3, _ := build(other); reflect.DeepEqual(u1, u3) {
		t.Error("a different Seed built the same URLs")
	}
}

func TestScenarioCounts(t *testing.T) {
	s := bigScenario
	w := New(newManualClock())
	urls, truth := s.Build(w)
	p, err := s.plan()
	if err != nil {
		t.Fatal(err)
	}
	if len(urls) != s.URLs || len(truth) != s.URLs {
		t.Fatalf("%d URLs, %d truths; want %d", len(urls), len(truth), s.URLs)
	}
	stats := w.Stats()
	if len(stats) != s.Domains {
		t.Errorf("%d domains, want %d", len(stats), s.Domains)
	}

	perDomain := map[string]int{}
	perClass := map[string]int{}
	https := 0
	for i, raw := range urls {
		class, ok := truth[raw]
		if !ok {
			t.Fatalf("URL %s has no truth", raw)
		}
		perClass[class]++
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("URL %q: %v", raw, err)
		}
		host := u.Hostname()
		domain := p.urls[i].domain
		perDomain[domain]++
		if !strings.HasSuffix(host, "."+domain) || strings.Contains(strings.TrimSuffix(host, "."+domain), ".") {
			t.Errorf("host %s is not one label under its domain %s", host, domain)
		}
		h, registered := w.hosts[host]
		if registered == (class == classDNS) {
			t.Errorf("%s (%s): host registered = %v", raw, class, registered)
		}
		if registered && h.Domain != domain {
			t.Errorf("host %s has domain %s, planned %s", host, h.Domain, domain)
		}
		if (class == classTLS) != (registered && h.BadCert) {
			t.Errorf("%s (%s): BadCert host = %v", raw, class, h.BadCert)
		}
		if class == classTLS && u.Scheme != "https" {
			t.Errorf("TLS-fault URL %s is not https", raw)
		}
		if class != classTLS && u.Scheme == "https" {
			https++
		}
		if strings.HasPrefix(u.Path, "/to/") {
			target := strings.Split(u.Path, "/")[2]
			if th, ok := w.hosts[target]; !ok || th.BadCert || th.Domain == domain {
				t.Errorf("cross redirect %s: target %s is not a live host of another domain", raw, target)
			}
		}
		if a := route(u.Path); class == classOK && a.kind != actOK {
			t.Errorf("ok URL %s routes to %+v", raw, a)
		}
	}
	for i, n := range s.Big {
		if got := perDomain[p.domains[i].name]; got != n {
			t.Errorf("big domain %s has %d URLs, want %d", p.domains[i].name, got, n)
		}
		if h := len(p.domains[i].hosts); h < 3 {
			t.Errorf("big domain %s has %d hosts, want >= 3", p.domains[i].name, h)
		}
	}
	for _, d := range p.domains[len(s.Big):] {
		if perDomain[d.name] < 1 {
			t.Errorf("long-tail domain %s has no URL", d.name)
		}
	}
	n := func(share float64) int { return int(math.Round(share * float64(s.URLs))) }
	f := s.Faults
	wantClass := map[string]int{
		classClientError: n(f.NotFound) + n(f.Gone), classServerError: n(f.ServerError),
		classRedirect: n(f.Redirect) + n(f.CrossRedirect), classTooManyRedirects: n(f.Loop),
		classTimeout: n(f.Hang), classReset: n(f.Reset), classDNS: n(f.DNS), classTLS: n(f.TLS), classBot: n(f.Bot),
	}
	faults := 0
	for _, v := range wantClass {
		faults += v
	}
	wantClass[classOK] = s.URLs - faults
	if !reflect.DeepEqual(perClass, wantClass) {
		t.Errorf("classes %v, want %v", perClass, wantClass)
	}
	if share := float64(https) / float64(s.URLs-perClass[classTLS]); math.Abs(share-s.HTTPS) > 0.08 {
		t.Errorf("https share %.2f, want about %.2f", share, s.HTTPS)
	}

	hostile, live := 0, 0
	for _, h := range w.hosts {
		if !h.BadCert {
			live++
		}
		if h.HeadHostile {
			hostile++
		}
	}
	if want := int(math.Round(f.HeadHostileHosts * float64(live))); hostile != want {
		t.Errorf("%d HEAD-hostile hosts of %d, want %d", hostile, live, want)
	}
	for i, d := range p.domains {
		l := stats[d.name].Limit
		wantRate := s.BigRate
		if i >= len(s.Big) {
			wantRate = l.Rate
			if l.Rate < s.RateMin || l.Rate > s.RateMax {
				t.Errorf("%s: rate %v outside %v..%v", d.name, l.Rate, s.RateMin, s.RateMax)
			}
		}
		if l.Rate != wantRate || l.Burst != math.Max(1, math.Ceil(l.Rate*s.BurstFactor)) || l.MaxConcurrent != 4 {
			t.Errorf("%s: limit %+v, want rate %v, burst max(1, ceil(rate*%v)), cap 4", d.name, l, wantRate, s.BurstFactor)
		}
	}
}

func TestScenarioValidate(t *testing.T) {
	ok := Scenario{Domains: 3, Big: []int{5}, URLs: 10}
	tests := []struct {
		name string
		edit func(*Scenario)
		want string // substring of the error, "" for valid
	}{
		{"valid", func(*Scenario) {}, ""},
		{"no domains", func(s *Scenario) { s.Domains = 0 }, "Domains 0"},
		{"fewer domains than big", func(s *Scenario) { s.Big = []int{1, 1, 1, 1} }, "fewer than the 4 big"},
		{"big too large", func(s *Scenario) { s.Big = []int{11} }, "more than URLs"},
		{"no long tail for the rest", func(s *Scenario) { s.Domains = 1 }, "no long-tail"},
		{"negative big", func(s *Scenario) { s.Big = []int{-1} }, "Big[0]"},
		{"rates reversed", func(s *Scenario) { s.RateMin, s.RateMax = 5, 2 }, "RateMin"},
		{"NaN share", func(s *Scenario) { s.Faults.Hang = math.NaN() }, "Faults.Hang"},
		{"share above 1", func(s *Scenario) { s.HTTPS = 1.5 }, "HTTPS"},
		{"shares sum above 1", func(s *Scenario) { s.Faults.DNS, s.Faults.TLS = 0.6, 0.6 }, "sum"},
		{"bad mode", func(s *Scenario) { s.Modes = []ThrottleMode{7} }, "Modes[0]"},
	}
	for _, tc := range tests {
		s := ok
		s.Big = append([]int(nil), ok.Big...)
		tc.edit(&s)
		err := s.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Validate = %v, want error containing %q", tc.name, err, tc.want)
		}
		if tc.want != "" {
			func() {
				defer func() {
					if r := recover(); r == nil || !strings.Contains(r.(string), tc.want) {
						t.Errorf("%s: Build panic %v, want Validate's error", tc.name, r)
					}
				}()
				s.Build(New(newManualClock()))
			}()
		}
	}
}

// classify checks u the way a simple link checker would, giving up after
// timeout of wall time, and names the class.
func classify(c *http.Client, u string, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	resp, err := c.Do(req)
	var dnsErr *net.DNSError
	var certErr x509.UnknownAuthorityError
	switch {
	case err == nil:
	case errors.As(err, &dnsErr):
		return classDNS
	case errors.As(err, &certErr):
		return classTLS
	case errors.Is(err, context.DeadlineExceeded):
		return classTimeout
	case errors.Is(err, syscall.ECONNRESET):
		return classReset
	case strings.Contains(err.Error(), "stopped after 10 redirects"):
		return classTooManyRedirects
	default:
		return "error: " + err.Error()
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode < 300 && resp.Request.URL.String() != u:
		return classRedirect
	case resp.StatusCode < 300:
		return classOK
	case resp.StatusCode == 403 && resp.Header.Get("cf-mitigated") == "challenge":
		return classBot
	case resp.StatusCode < 500:
		return classClientError
	default:
		return classServerError
	}
}

// TestScenarioTruthEndToEnd checks every URL of a small scenario over the
// simulated network and compares the outcome with the truth.
func TestScenarioTruthEndToEnd(t *testing.T) {
	s := Scenario{
		Seed: 7, Domains: 8, Big: []int{30}, URLs: 90,
		RateMin: 1000, RateMax: 1000, MaxConcurrent: -1, Latency: -1, HTTPS: 0.5,
		Faults: Faults{NotFound: 0.05, Gone: 0.05, ServerError: 0.05, Redirect: 0.05, CrossRedirect: 0.05,
			Loop: 0.03, Hang: 0.03, Reset: 0.05, DNS: 0.05, TLS: 0.05, Bot: 0.05, HeadHostileHosts: 0.5},
	}
	w := New(newManualClock())
	urls, truth := s.Build(w)
	startWeb(t, w)
	tr := w.Transport()
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}

	got := make([]string, len(urls))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, u := range urls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			got[i] = classify(c, u, time.Second)
			if got[i] == classTimeout && truth[u] != classTimeout {
				// A loaded machine can stall a request; only a URL that
				// also times out with a long budget is a real mismatch.
				got[i] = classify(c, u, 20*time.Second)
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, u := range urls {
		seen[truth[u]] = true
		if got[i] != truth[u] {
			t.Errorf("%s: checked %q, truth %q", u, got[i], truth[u])
		}
	}
	if len(seen) != 10 {
		t.Errorf("scenario covers classes %v, want all 10", seen)
	}
	for d, st := range w.Stats() {
		if st.Throttled != 0 || st.Violations != 0 {
			t.Errorf("%s: %+v, want no throttling at 1000 r/s without a cap", d, st)
		}
	}
}
