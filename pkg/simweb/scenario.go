package simweb

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// Faults gives, as shares in 0..1, how many URLs of a Scenario are of each
// faulty kind; the rest are plain 200 pages. The count of each kind is
// round(share × Scenario.URLs). The expected class (as named by pkg/check) is
// given for each kind.
type Faults struct {
	NotFound      float64 // /status/404/...: "client_error"
	Gone          float64 // /status/410/...: "client_error"
	ServerError   float64 // /status/500/... or /status/502/...: "server_error"
	Redirect      float64 // /redirect/{1..3}/...: "redirect" (chain ends in 200)
	CrossRedirect float64 // /to/{host of another domain}/ok/...: "redirect"
	Loop          float64 // /loop/.../a: "too_many_redirects"
	Hang          float64 // /hang/...: "timeout"
	Reset         float64 // /reset/...: "reset"
	DNS           float64 // a host name of the domain that does not resolve: "dns"
	TLS           float64 // https to a host of the domain with a bad certificate: "tls"
	Bot           float64 // /bot/...: "blocked_by_bot_protection"
	// HeadHostileHosts is the share of hosts that answer HEAD with 405; it
	// does not change any URL's class (a checker should fall back to GET).
	HeadHostileHosts float64
}

// Expected check classes, as named by pkg/check.
const (
	classOK               = "ok"
	classRedirect         = "redirect"
	classClientError      = "client_error"
	classServerError      = "server_error"
	classTooManyRedirects = "too_many_redirects"
	classTimeout          = "timeout"
	classReset            = "reset"
	classDNS              = "dns"
	classTLS              = "tls"
	classBot              = "blocked_by_bot_protection"
)

// Scenario describes a population of registrable domains, hosts and URLs.
// Zero fields take the defaults given; Build is deterministic for a Scenario.
type Scenario struct {
	// Seed makes the scenario: the same Scenario builds the same web and URLs.
	Seed int64
	// Domains is the number of registrable domains, >= len(Big) and >= 1.
	Domains int
	// Big holds the URL counts of the big domains, e.g. {400, 400}; each big
	// domain has 3 to 6 hosts sharing its limit. The other URLs are spread
	// over the Domains-len(Big) long-tail domains (1 or 2 hosts each), at
	// least one per domain while they last.
	Big []int
	// URLs is the total number of URLs, >= the sum of Big.
	URLs int
	// RateMin and RateMax bound the hidden rate of a long-tail domain, in
	// requests per second, drawn uniformly. Defaults 1 and 20 (RateMax
	// defaults to RateMin if that is larger).
	RateMin, RateMax float64
	// BigRate is the hidden rate of the big domains in requests per second;
	// 0 means RateMax.
	BigRate float64
	// BurstFactor sets the hidden burst: max(1, ceil(rate × BurstFactor))
	// tokens. 0 means 1.0.
	BurstFactor float64
	// MaxConcurrent is every domain's hidden cap on requests in flight;
	// 0 means 4, and a negative value means no cap.
	MaxConcurrent int
	// Latency is the base clock time per request; each host gets it times a
	// deterministic factor in [0.5, 1.5). 0 means 20 ms; negative means none.
	Latency time.Duration
	// Faults gives the shares of faulty URLs.
	Faults Faults
	// HTTPS is the share (0..1) of URLs using https (TLS-fault URLs always do).
	HTTPS float64
	// Modes are the throttle modes domains draw from (deterministically);
	// nil means {Throttle429Seconds}.
	Modes []ThrottleMode
}

func (s Scenario) withDefaults() Scenario {
	if s.RateMin == 0 {
		s.RateMin = 1
	}
	if s.RateMax == 0 {
		s.RateMax = max(20, s.RateMin)
	}
	if s.BigRate == 0 {
		s.BigRate = s.RateMax
	}
	if s.BurstFactor == 0 {
		s.BurstFactor = 1
	}
	if s.MaxConcurrent == 0 {
		s.MaxConcurrent = 4
	}
	if s.Latency == 0 {
		s.Latency = 20 * time.Millisecond
	}
	if len(s.Modes) == 0 {
		s.Modes = []ThrottleMode{Throttle429Seconds}
	}
	return s
}

// faultKinds lists the URL fault shares in the fixed order Build uses.
func (f Faults) kinds() []struct {
	name  string
	share float64
} {
	return []struct {
		name  string
		share float64
	}{
		{"NotFound", f.NotFound}, {"Gone", f.Gone}, {"ServerError", f.ServerError},
		{"Redirect", f.Redirect}, {"CrossRedirect", f.CrossRedirect}, {"Loop", f.Loop},
		{"Hang", f.Hang}, {"Reset", f.Reset}, {"DNS", f.DNS}, {"TLS", f.TLS}, {"Bot", f.Bot},
	}
}

func badShare(x float64) bool { return math.IsNaN(x) || x < 0 || x > 1 }

func badRate(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 }

// Validate reports, after applying the defaults, every field of s that is
// out of range, joined into one error; nil if Build can use s.
func (s Scenario) Validate() error {
	s = s.withDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.Domains < 1 {
		bad("Domains %d: need at least 1", s.Domains)
	}
	if s.Domains < len(s.Big) {
		bad("Domains %d: fewer than the %d big domains", s.Domains, len(s.Big))
	}
	if s.URLs < 0 {
		bad("URLs %d: must be >= 0", s.URLs)
	}
	sum := 0
	for i, n := range s.Big {
		if n < 0 {
			bad("Big[%d] = %d: must be >= 0", i, n)
		}
		sum += n
	}
	if sum > s.URLs {
		bad("Big sums to %d URLs, more than URLs %d", sum, s.URLs)
	} else if s.Domains == len(s.Big) && sum != s.URLs {
		bad("Big sums to %d URLs but URLs is %d and there is no long-tail domain for the rest", sum, s.URLs)
	}
	if badRate(s.RateMin) || badRate(s.RateMax) || s.RateMax < s.RateMin {
		bad("RateMin %v, RateMax %v r/s: need 0 < RateMin <= RateMax", s.RateMin, s.RateMax)
	}
	if badRate(s.BigRate) {
		bad("BigRate %v r/s: must be finite and > 0", s.BigRate)
	}
	if badRate(s.BurstFactor) {
		bad("BurstFactor %v: must be finite and > 0", s.BurstFactor)
	}
	total := 0.0
	for _, k := range s.Faults.kinds() {
		if badShare(k.share) {
			bad("Faults.%s %v: share must be in 0..1", k.name, k.share)
		}
		total += k.share
	}
	if total > 1+1e-9 {
		bad("Faults: URL shares sum to %v, more than 1", total)
	}
	if badShare(s.Faults.HeadHostileHosts) {
		bad("Faults.HeadHostileHosts %v: share must be in 0..1", s.Faults.HeadHostileHosts)
	}
	if badShare(s.HTTPS) {
		bad("HTTPS %v: share must be in 0..1", s.HTTPS)
	}
	for i, m := range s.Modes {
		if !m.valid() {
			bad("Modes[%d] = %v: unknown throttle mode", i, m)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("simweb: invalid Scenario: %w", err)
	}
	return nil
}

// Build adds the scenario's domains (SetLimit) and hosts (AddHost) to w and
// returns the URLs in a shuffled but deterministic order, all distinct, with
// truth mapping every URL to the class pkg/check should report for it:
// "ok", "redirect", "client_error", "server_error", "too_many_redirects",
// "timeout", "reset", "dns", "tls" or "blocked_by_bot_protection". Host
// names are one label under their registrable domain (e.g. docs.nova3.co.uk,
// alice.site-io7.github.io), using public and private suffixes of the Public
// Suffix List. DNS-fault URLs use names that are not added as hosts.
// Build panics with Validate's error if s is invalid; call Validate first to
// handle that as an error.
func (s Scenario) Build(w *Web) (urls []string, truth map[string]string) {
	p, err := s.plan()
	if err != nil {
		panic(err.Error())
	}
	for _, d := range p.domains {
		w.SetLimit(d.name, d.limit)
		for _, h := range d.hosts {
			w.AddHost(h)
		}
	}
	urls = make([]string, len(p.urls))
	truth = make(map[string]string, len(p.urls))
	for i, u := range p.urls {
		urls[i] = u.url
		truth[u.url] = u.class
	}
	return urls, truth
}

// plannedDomain is one registrable domain of a plan.
type plannedDomain struct {
	name    string
	big     bool
	limit   Limit
	hosts   []Host // live hosts first, then the BadCert host if any
	live    int    // number of live (not BadCert) hosts at the front of hosts
	nURLs   int    // URLs assigned to the domain
	badHost string // BadCert host, "" until a TLS URL needs it
}

// plannedURL is one URL of a plan.
type plannedURL struct {
	url, class, domain string
}

// plan is everything Build does, before it touches a Web.
type plan struct {
	domains []*plannedDomain
	urls    []plannedURL
}

var (
	domainWords = []string{"acme", "nova", "blue", "river", "pixel", "orbit", "maple", "cedar", "delta",
		"ember", "fable", "harbor", "iris", "juniper", "kite", "lumen", "meadow", "nimbus", "opal", "prism",
		"quartz", "raven", "sierra", "tango", "vertex", "willow", "zephyr", "site", "open-data", "daily",
		"cloud", "code", "my-blog", "site-io", "green-leaf"}
	publicSuffixes  = []string{"com", "com", "com", "com", "org", "net", "io", "dev", "de", "co.uk", "com.au"}
	privateSuffixes = []string{"github.io", "gitlab.io", "netlify.app", "pages.dev", "blogspot.com"}
	siteSubs        = []string{"www", "docs", "blog", "api", "shop", "news", "help", "status", "cdn", "static", "app", "support"}
	peopleSubs      = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"}
	sections        = []string{"docs", "blog", "news", "products", "about", "guides", "posts"}
)

const (
	deadSub = "gone"   // never a live host: DNS-fault URLs use it
	badSub  = "secure" // the BadCert host of a domain
)

// pick returns a random element of xs.
func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// subs returns k distinct random labels from pool.
func subs(r *rand.Rand, pool []string, k int) []string {
	perm := r.Perm(len(pool))
	out := make([]string, 0, k)
	for _, i := range perm[:min(k, len(pool))] {
		out = append(out, pool[i])
	}
	return out
}

func (s Scenario) plan() (*plan, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s = s.withDefaults()
	r := rand.New(rand.NewPCG(uint64(s.Seed), 0x9e3779b97f4a7c15))
	p := &plan{}

	// Domains, limits and hosts.
	for i := 0; i < s.Domains; i++ {
		d := &plannedDomain{big: i < len(s.Big)}
		private := r.Float64() < 0.15
		suffix, pool := pick(r, publicSuffixes), siteSubs
		if private {
			suffix, pool = pick(r, privateSuffixes), peopleSubs
		}
		d.name = pick(r, domainWords) + strconv.Itoa(i+1) + "." + suffix
		rate := s.BigRate
		if !d.big {
			rate = s.RateMin + r.Float64()*(s.RateMax-s.RateMin)
			rate = math.Round(rate*100) / 100
			rate = max(rate, s.RateMin)
		}
		d.limit = Limit{
			Rate:          rate,
			Burst:         max(1, math.Ceil(rate*s.BurstFactor)),
			MaxConcurrent: max(s.MaxConcurrent, 0),
			Mode:          pick(r, s.Modes),
		}
		var labels []string
		switch {
		case d.big:
			labels = subs(r, pool, 3+r.IntN(4))
		case private:
			labels = subs(r, pool, 1)
		default:
			labels = []string{"www"}
			if r.Float64() < 0.3 {
				labels = append(labels, subs(r, siteSubs[1:], 1)...)
			}
		}
		for _, l := range labels {
			lat := time.Duration(0)
			if s.Latency > 0 {
				lat = time.Duration(float64(s.Latency) * (0.5 + r.Float64())).Round(time.Microsecond)
			}
			d.hosts = append(d.hosts, Host{Name: l + "." + d.name, Domain: d.name, Latency: lat})
		}
		d.live = len(d.hosts)
		p.domains = append(p.domains, d)
	}

	// HEAD-hostile hosts: a fixed share of all live hosts.
	var all []*Host
	for _, d := range p.domains {
		for j := range d.hosts {
			all = append(all, &d.hosts[j])
		}
	}
	nHostile := int(math.Round(s.Faults.HeadHostileHosts * float64(len(all))))
	for _, j := range r.Perm(len(all))[:nHostile] {
		all[j].HeadHostile = true
	}

	// URL slots: each slot belongs to a domain.
	slots := make([]*plannedDomain, 0, s.URLs)
	for i, n := range s.Big {
		for range n {
			slots = append(slots, p.domains[i])
		}
	}
	tail := p.domains[len(s.Big):]
	for i := 0; len(slots) < s.URLs; i++ {
		if i < len(tail) {
			slots = append(slots, tail[i])
		} else {
			slots = append(slots, tail[r.IntN(len(tail))])
		}
	}

	// Kinds: the fault counts, then ok; shuffled over the slots.
	kinds := make([]string, 0, s.URLs)
	for _, k := range s.Faults.kinds() {
		n := int(math.Round(k.share * float64(s.URLs)))
		for j := 0; j < n && len(kinds) < s.URLs; j++ {
			kinds = append(kinds, k.name)
		}
	}
	for len(kinds) < s.URLs {
		kinds = append(kinds, "OK")
	}
	r.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })

	for i, d := range slots {
		d.nURLs++
		host := d.hosts[r.IntN(d.live)].Name
		scheme := "http"
		if r.Float64() < s.HTTPS {
			scheme = "https"
		}
		id := strconv.Itoa(i + 1)
		var path, class string
		switch kinds[i] {
		case "OK":
			path, class = "/ok/"+pick(r, sections)+"/page-"+id+".html", classOK
		case "NotFound":
			path, class = "/status/404/missing-"+id, classClientError
		case "Gone":
			path, class = "/status/410/removed-"+id, classClientError
		case "ServerError":
			path, class = "/status/"+pick(r, []string{"500", "502"})+"/broken-"+id, classServerError
		case "Redirect":
			path, class = "/redirect/"+strconv.Itoa(1+r.IntN(3))+"/moved-"+id, classRedirect
		case "CrossRedirect":
			target := host
			if len(p.domains) > 1 {
				o := p.domains[r.IntN(len(p.domains)-1)]
				if o == d {
					o = p.domains[len(p.domains)-1]
				}
				target = o.hosts[r.IntN(o.live)].Name
			}
			path, class = "/to/"+target+"/ok/elsewhere-"+id, classRedirect
		case "Loop":
			path, class = "/loop/cycle-"+id+"/a", classTooManyRedirects
		case "Hang":
			path, class = "/hang/"+id, classTimeout
		case "Reset":
			path, class = "/reset/"+id, classReset
		case "DNS":
			host = deadSub + "." + d.name
			path, class = "/ok/old-"+id, classDNS
		case "TLS":
			if d.badHost == "" {
				d.badHost = badSub + "." + d.name
				d.hosts = append(d.hosts, Host{Name: d.badHost, Domain: d.name, Latency: d.hosts[0].Latency, BadCert: true})
			}
			host, scheme = d.badHost, "https"
			path, class = "/ok/secure-"+id, classTLS
		case "Bot":
			path, class = "/bot/check-"+id, classBot
		default:
			panic("simweb: unknown URL kind " + kinds[i])
		}
		p.urls = append(p.urls, plannedURL{url: scheme + "://" + host + path, class: class, domain: d.name})
	}
	r.Shuffle(len(p.urls), func(i, j int) { p.urls[i], p.urls[j] = p.urls[j], p.urls[i] })
	return p, nil
}

// MixedFaults is the fault mix the integration test, the bench and the demo
// use: 3 % 404, 1 % 410, 1 % 5xx, 4 % same-host and 2 % cross-host
// redirects, 0.5 % loops, 0.3 % hangs, 0.5 % resets, 1 % unresolvable names,
// 0.5 % bad certificates, 0.5 % bot challenges, and 10 % of hosts
// answering 405 to HEAD.
func MixedFaults() Faults {
	return Faults{NotFound: 0.03, Gone: 0.01, ServerError: 0.01, Redirect: 0.04, CrossRedirect: 0.02,
		Loop: 0.005, Hang: 0.003, Reset: 0.005, DNS: 0.01, TLS: 0.005, Bot: 0.005, HeadHostileHosts: 0.1}
}

// AllModes lists every throttle answer, for scenarios whose domains should
// draw from all of them.
func AllModes() []ThrottleMode {
	return []ThrottleMode{Throttle429Seconds, Throttle429Date, Throttle429None, Throttle503}
}
