package groups

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

type add struct {
	dom, url string
	line     int
}

func split(maxGroup int, adds []add, job string) []Group {
	s := NewSplitter(maxGroup)
	for _, a := range adds {
		s.Add(a.dom, a.url, a.line)
	}
	return s.Groups(job)
}

func TestGroups(t *testing.T) {
	tests := []struct {
		name     string
		maxGroup int
		adds     []add
		want     []Group
	}{
		{
			name: "empty",
			want: nil,
		},
		{
			name:     "duplicate URL keeps every line in input order",
			maxGroup: 10,
			adds: []add{
				{"a.com", "https://a.com/1", 1},
				{"a.com", "https://a.com/2", 2},
				{"a.com", "https://a.com/1", 3},
				{"a.com", "https://a.com/1", 7},
			},
			want: []Group{{Job: "j", Domain: "a.com", Items: []Item{
				{URL: "https://a.com/1", Lines: []int{1, 3, 7}},
				{URL: "https://a.com/2", Lines: []int{2}},
			}}},
		},
		{
			name:     "same URL under two domains stays two items",
			maxGroup: 10,
			adds: []add{
				{"a.com", "u", 1},
				{"b.com", "u", 2},
			},
			want: []Group{
				{Job: "j", Domain: "a.com", Items: []Item{{URL: "u", Lines: []int{1}}}},
				{Job: "j", Domain: "b.com", Items: []Item{{URL: "u", Lines: []int{2}}}},
			},
		},
		{
			name:     "largest domain first, ties by name, duplicates do not count",
			maxGroup: 10,
			adds: []add{
				{"z.com", "z1", 1},
				{"b.com", "b1", 2},
				{"m.com", "m1", 3},
				{"m.com", "m2", 4},
				{"b.com", "b1", 5}, // duplicate: b.com still has 1 URL
				{"a.com", "a1", 6},
				{"m.com", "m3", 7},
				{"z.com", "z2", 8},
			},
			want: []Group{
				{Job: "j", Domain: "m.com", Items: []Item{{URL: "m1", Lines: []int{3}}, {URL: "m2", Lines: []int{4}}, {URL: "m3", Lines: []int{7}}}},
				{Job: "j", Domain: "z.com", Items: []Item{{URL: "z1", Lines: []int{1}}, {URL: "z2", Lines: []int{8}}}},
				{Job: "j", Domain: "a.com", Items: []Item{{URL: "a1", Lines: []int{6}}}},
				{Job: "j", Domain: "b.com", Items: []Item{{URL: "b1", Lines: []int{2, 5}}}},
			},
		},
		{
			name:     "chunked by maxGroup in first-appearance order",
			maxGroup: 2,
			adds: []add{
				{"a.com", "1", 1}, {"a.com", "2", 2}, {"b.com", "x", 3},
				{"a.com", "3", 4}, {"a.com", "1", 5}, {"a.com", "4", 6}, {"a.com", "5", 7},
			},
			want: []Group{
				{Job: "j", Domain: "a.com", Items: []Item{{URL: "1", Lines: []int{1, 5}}, {URL: "2", Lines: []int{2}}}},
				{Job: "j", Domain: "a.com", Items: []Item{{URL: "3", Lines: []int{4}}, {URL: "4", Lines: []int{6}}}},
				{Job: "j", Domain: "a.com", Items: []Item{{URL: "5", Lines: []int{7}}}},
				{Job: "j", Domain: "b.com", Items: []Item{{URL: "x", Lines: []int{3}}}},
			},
		},
		{
			name:     "maxGroup 0 means 50",
			maxGroup: 0,
			adds:     seq("a.com", 51),
			want: []Group{
				{Job: "j", Domain: "a.com", Items: items(1, 50)},
				{Job: "j", Domain: "a.com", Items: items(51, 51)},
			},
		},
		{
			name:     "negative maxGroup means 1",
			maxGroup: -3,
			adds:     seq("a.com", 2),
			want: []Group{
				{Job: "j", Domain: "a.com", Items: items(1, 1)},
				{Job: "j", Domain: "a.com", Items: items(2, 2)},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := split(tc.maxGroup, tc.adds, "j")
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Groups:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func seq(dom string, n int) []add {
	var out []add
	for i := 1; i <= n; i++ {
		out = append(out, add{dom, fmt.Sprint("u", i), i})
	}
	return out
}

func items(from, to int) []Item {
	var out []Item
	for i := from; i <= to; i++ {
		out = append(out, Item{URL: fmt.Sprint("u", i), Lines: []int{i}})
	}
	return out
}

// TestMatchesReference compares the Splitter (hash table growth, duplicate
// detection, same URL under several domains) with a plain map-based
// reference on random input, for several group sizes.
func TestMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		adds, doms, urls, maxGroup int
	}{
		{adds: 20_000, doms: 40, urls: 8_000, maxGroup: 7},
		{adds: 5_000, doms: 1, urls: 5_000, maxGroup: 50},
		{adds: 3_000, doms: 3_000, urls: 100, maxGroup: 1},
	} {
		t.Run(fmt.Sprint(tc.adds, "/", tc.doms, "/", tc.urls), func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(tc.adds)))
			type ref struct {
				order []string
				lines map[string][]int
			}
			refs := map[string]*ref{}
			s := NewSplitter(tc.maxGroup)
			for line := 1; line <= tc.adds; line++ {
				dom := fmt.Sprint("d", r.IntN(tc.doms), ".com")
				url := fmt.Sprint("https://x/", r.IntN(tc.urls)) // the same URL may come under several domains
				s.Add(dom, url, line)
				rf := refs[dom]
				if rf == nil {
					rf = &ref{lines: map[string][]int{}}
					refs[dom] = rf
				}
				if _, ok := rf.lines[url]; !ok {
					rf.order = append(rf.order, url)
				}
				rf.lines[url] = append(rf.lines[url], line)
			}
			var names []string
			unique := 0
			for d, rf := range refs {
				names = append(names, d)
				unique += len(rf.order)
			}
			slices.SortFunc(names, func(a, b string) int {
				if c := cmp.Compare(len(refs[b].order), len(refs[a].order)); c != 0 {
					return c
				}
				return strings.Compare(a, b)
			})
			var want []Group
			for _, d := range names {
				rf := refs[d]
				for i := 0; i < len(rf.order); i += tc.maxGroup {
					g := Group{Job: "j", Domain: d}
					for _, u := range rf.order[i:min(i+tc.maxGroup, len(rf.order))] {
						g.Items = append(g.Items, Item{URL: u, Lines: rf.lines[u]})
					}
					want = append(want, g)
				}
			}
			if got := s.Groups("j"); !reflect.DeepEqual(got, want) {
				t.Fatalf("Groups differs from the reference (%d vs %d groups)", len(got), len(want))
			}
			if s.Unique() != unique {
				t.Errorf("Unique = %d, want %d", s.Unique(), unique)
			}
			if len(s.Domains()) != len(refs) {
				t.Errorf("Domains has %d entries, want %d", len(s.Domains()), len(refs))
			}
		})
	}
}

func TestCountsAndIdempotence(t *testing.T) {
	s := NewSplitter(3)
	for _, a := range []add{{"a", "1", 1}, {"a", "1", 2}, {"a", "2", 3}, {"b", "1", 4}} {
		s.Add(a.dom, a.url, a.line)
	}
	if got := s.Unique(); got != 3 {
		t.Errorf("Unique = %d, want 3", got)
	}
	if got, want := s.Domains(), map[string]int{"a": 2, "b": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("Domains = %v, want %v", got, want)
	}
	g1, g2 := s.Groups("j"), s.Groups("j")
	if !reflect.DeepEqual(g1, g2) {
		t.Errorf("second Groups call differs:\n%+v\n%+v", g1, g2)
	}
	// Appending to one group's slices must not clobber its neighbour.
	_ = append(g1[0].Items, Item{URL: "x", Lines: []int{9}})
	_ = append(g1[0].Items[0].Lines, 99)
	if !reflect.DeepEqual(g1, g2) {
		t.Errorf("append to a returned slice changed another group:\n%+v\n%+v", g1, g2)
	}
}

// TestMessageSizeCut checks that groups are cut below maxGroup when their
// encoding would pass MaxMessageBytes, and that nothing is lost doing so.
func TestMessageSizeCut(t *testing.T) {
	long := func(fill string, n int) func(i int) string {
		return func(i int) string {
			p := fmt.Sprintf("https://a.com/%d/", i)
			return p + strings.Repeat(fill, (n-len(p))/len(fill))
		}
	}
	tests := []struct {
		name      string
		maxGroup  int
		urls      int
		url       func(i int) string
		linesEach int
		minGroups int // at least this many groups: proves the cut happened
	}{
		{name: "8000-byte plain URLs", maxGroup: 50, urls: 100, url: long("x", MaxURLBytes), linesEach: 1, minGroups: 4},
		{name: "8000-byte URLs needing 6-byte escapes", maxGroup: 50, urls: 40, url: long("<", MaxURLBytes), linesEach: 1, minGroups: 8},
		{name: "escapes of every kind", maxGroup: 1000, urls: 300, url: long("\"\\\n\x01&\u2028é\xff", 4000), linesEach: 1, minGroups: 4},
		{name: "one URL on 100k lines is split", maxGroup: 50, urls: 1, url: long("x", 100), linesEach: 100_000, minGroups: 3},
		{name: "small URLs fit maxGroup exactly", maxGroup: 50, urls: 120, url: long("x", 60), linesEach: 2, minGroups: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSplitter(tc.maxGroup)
			line := 0
			wantLines := map[string][]int{}
			for i := 0; i < tc.urls; i++ {
				u := tc.url(i)
				for k := 0; k < tc.linesEach; k++ {
					line++
					s.Add("a.com", u, line)
					wantLines[u] = append(wantLines[u], line)
				}
			}
			gs := s.Groups("job-1")
			if len(gs) < tc.minGroups {
				t.Errorf("%d groups, want >= %d", len(gs), tc.minGroups)
			}
			gotLines := map[string][]int{}
			for gi, g := range gs {
				if len(g.Items) > tc.maxGroup {
					t.Errorf("group %d has %d items, max %d", gi, len(g.Items), tc.maxGroup)
				}
				for _, it := range g.Items {
					gotLines[it.URL] = append(gotLines[it.URL], it.Lines...)
				}
				// The estimator must agree with encoding/json byte for byte.
				raw, err := json.Marshal(g)
				if err != nil {
					t.Fatal(err)
				}
				if est := groupSize(g); est != len(raw) {
					t.Fatalf("group %d: estimated %d bytes, json.Marshal wrote %d", gi, est, len(raw))
				}
				if len(raw) > MaxMessageBytes {
					t.Fatalf("group %d encodes to %d bytes, over %d", gi, len(raw), MaxMessageBytes)
				}
				// A group that stopped short of maxGroup must have been full:
				// the next group's first item would not have fitted.
				if gi+1 < len(gs) && gs[gi+1].Domain == g.Domain && len(g.Items) < tc.maxGroup {
					if next := len(raw) + 1 + itemSize(gs[gi+1].Items[0]); next <= MaxMessageBytes {
						t.Errorf("group %d cut at %d items although the next item fitted (%d bytes)", gi, len(g.Items), next)
					}
				}
			}
			if !reflect.DeepEqual(gotLines, wantLines) {
				t.Errorf("lines lost or reordered across groups")
			}
		})
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	tests := []Group{
		{Job: "j", Domain: "a.com", Items: []Item{{URL: "https://a.com/", Lines: []int{1}}}},
		{Job: "job-42", Domain: "例え.jp", Items: []Item{
			{URL: "https://例え.jp/<p>&q=\"x\"\u2028", Lines: []int{3, 9, 1 << 40}, Tries: 2, Throttles: 1},
			{URL: "http://a/\t\n", Lines: []int{2}, Tries: 0, Throttles: 7},
		}},
	}
	for i, g := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			b, err := Encode(g)
			if err != nil {
				t.Fatal(err)
			}
			if est := groupSize(g); est != len(b) {
				t.Errorf("estimated %d bytes, encoded %d", est, len(b))
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, g) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, g)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"not JSON", `nope`, "invalid character"},
		{"wrong shape", `[1,2]`, "cannot unmarshal"},
		{"trailing data", `{"j":"j","d":"d","i":[{"u":"u","l":[1]}]} x`, "invalid character"},
		{"no job", `{"d":"d","i":[{"u":"u","l":[1]}]}`, `"j" (job) is empty`},
		{"no domain", `{"j":"j","d":"","i":[{"u":"u","l":[1]}]}`, `"d" (domain) is empty`},
		{"no items", `{"j":"j","d":"d","i":[]}`, `"i" (items) is empty`},
		{"null items", `{"j":"j","d":"d","i":null}`, `"i" (items) is empty`},
		{"empty url", `{"j":"j","d":"d","i":[{"u":"u","l":[1]},{"u":"","l":[1]}]}`, `item 1: field "u" (url) is empty`},
		{"no lines", `{"j":"j","d":"d","i":[{"u":"u"}]}`, `item 0: field "l" (lines) is empty`},
		{"line zero", `{"j":"j","d":"d","i":[{"u":"u","l":[4,0]}]}`, `item 0: field "l" (lines) entry 1 is 0`},
		{"negative tries", `{"j":"j","d":"d","i":[{"u":"u","l":[1],"t":-1}]}`, `field "t" (tries) is negative`},
		{"negative throttles", `{"j":"j","d":"d","i":[{"u":"u","l":[1],"r":-2}]}`, `field "r" (throttles) is negative`},
		{"negative shard", `{"j":"j","d":"d","s":-1,"i":[{"u":"u","l":[1]}]}`, `field "s" (shard) is negative`},
		{"line not a number", `{"j":"j","d":"d","i":[{"u":"u","l":["1"]}]}`, "cannot unmarshal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.in))
			if err == nil {
				t.Fatalf("Decode(%s) = nil error, want %q", tc.in, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Decode error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	ok := Item{URL: "u", Lines: []int{1}}
	tests := []struct {
		name    string
		g       Group
		wantErr string
	}{
		{"invalid", Group{Job: "j", Domain: "d"}, `"i" (items) is empty`},
		{"bad UTF-8 url", Group{Job: "j", Domain: "d", Items: []Item{{URL: "a\xffb", Lines: []int{1}}}}, `"u" (url) is not valid UTF-8`},
		{"bad UTF-8 job", Group{Job: "\xff", Domain: "d", Items: []Item{ok}}, `"j" (job) is not valid UTF-8`},
		{"too big", Group{Job: "j", Domain: "d", Items: []Item{{URL: strings.Repeat("x", MaxMessageBytes), Lines: []int{1}}}}, "over the 262144-byte message limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Encode(tc.g)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Encode error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestIntLen(t *testing.T) {
	for _, v := range []int{0, 7, 9, 10, 99, 100, -1, -10, 1 << 62, -1 << 63, 1<<63 - 1} {
		if got, want := intLen(v), len(fmt.Sprint(v)); got != want {
			t.Errorf("intLen(%d) = %d, want %d", v, got, want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, g := range []Group{
		{Job: "j", Domain: "a.com", Items: []Item{{URL: "https://a.com/x?y=<1>", Lines: []int{1, 2}, Tries: 1, Throttles: 3}}},
		{Job: "job", Domain: "b.org", Items: []Item{{URL: "u\u2028é", Lines: []int{5}}, {URL: "v", Lines: []int{6}}}},
	} {
		b, err := Encode(g)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"j":"j","d":"d","i":[{"u":"\ud800","l":[1]}]}`))
	f.Add([]byte(`{"j":"j","d":"d","i":[{"u":"u","l":[0]}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Decode(data)
		if err != nil {
			return
		}
		b, err := Encode(g)
		if err != nil {
			if len(data) < MaxMessageBytes/6 {
				t.Fatalf("Encode of a decoded group failed: %v", err)
			}
			return
		}
		if est := groupSize(g); est != len(b) {
			t.Fatalf("estimated %d bytes, encoded %d: %s", est, len(b), b)
		}
		g2, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(Encode(g)): %v", err)
		}
		if !reflect.DeepEqual(g, g2) {
			t.Fatalf("Decode(Encode(g)) != g:\n%+v\n%+v", g, g2)
		}
	})
}

// FuzzRoundTrip builds a valid group from arbitrary strings and checks that
// it survives Encode and Decode and that the size estimate used for cutting
// agrees with the encoder.
func FuzzRoundTrip(f *testing.F) {
	f.Add("job", "a.com", "https://a.com/<&>", 1, 0, 0)
	f.Add("j", "é.fr", "\x00\u2028\"\\", 99999, 3, 4)
	f.Fuzz(func(t *testing.T, job, dom, url string, line, tries, throttles int) {
		g := Group{Job: job, Domain: dom, Items: []Item{{URL: url, Lines: []int{line}, Tries: tries, Throttles: throttles}}}
		raw, err := json.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		if est := groupSize(g); est != len(raw) {
			t.Fatalf("estimated %d bytes, json.Marshal wrote %d: %s", est, len(raw), raw)
		}
		b, err := Encode(g)
		if err != nil {
			return // invalid group: empty, bad UTF-8, line < 1, negative count
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(Encode(g)): %v", err)
		}
		if !reflect.DeepEqual(got, g) {
			t.Fatalf("Decode(Encode(g)) != g:\n%+v\n%+v", got, g)
		}
	})
}

// genURLs returns n URLs spread over about doms domains with a Zipf skew (a
// few domains hold most URLs) and about 5% repeated URLs.
func genURLs(n, doms int) (domain, url []string) {
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.1, 1, uint64(doms-1))
	names := make([]string, doms)
	for i := range names {
		names[i] = fmt.Sprintf("site%d.example", i)
	}
	domain, url = make([]string, n), make([]string, n)
	for i := 0; i < n; i++ {
		if i > 0 && r.IntN(20) == 0 {
			j := r.IntN(i)
			domain[i], url[i] = domain[j], url[j]
			continue
		}
		d := names[z.Uint64()]
		domain[i] = d
		url[i] = fmt.Sprintf("https://www.%s/path/%d/page.html?q=%d", d, i, r.Uint32())
	}
	return domain, url
}

func BenchmarkSplit1M(b *testing.B) {
	const n = 1_000_000
	doms, urls := genURLs(n, 100_000)
	b.ReportAllocs()
	var groups int
	for b.Loop() {
		s := NewSplitter(50)
		for i := range urls {
			s.Add(doms[i], urls[i], i+1)
		}
		groups = len(s.Groups("bench"))
	}
	b.ReportMetric(float64(groups), "groups")

	// Live heap held by a Splitter and its groups, beyond the input strings.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := NewSplitter(50)
	for i := range urls {
		s.Add(doms[i], urls[i], i+1)
	}
	gs := s.Groups("bench")
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "live-MiB")
	runtime.KeepAlive(s)
	runtime.KeepAlive(gs)
}
