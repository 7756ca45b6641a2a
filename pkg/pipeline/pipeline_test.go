package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/urlcheck/urlcheck/pkg/groups"
	"github.com/urlcheck/urlcheck/pkg/jobs"
	"github.com/urlcheck/urlcheck/pkg/results"
	"github.com/urlcheck/urlcheck/pkg/urllist"
)

func TestJobForKey(t *testing.T) {
	dropID := func(key, etag string) string {
		id, _, _ := JobForKey(key, etag)
		return id
	}
	cases := []struct {
		name, key, etag string
		id, source      string // id "" with ok: any "d-" ID
		ok              bool
	}{
		{name: "api txt", key: "inbox/jobs/j-0123456789abcdef.txt", etag: "x", id: "j-0123456789abcdef", source: "api", ok: true},
		{name: "api csv", key: "inbox/jobs/j-0123456789abcdef.csv", id: "j-0123456789abcdef", source: "api", ok: true},
		{name: "api no extension", key: "inbox/jobs/abcdef", id: "abcdef", source: "api", ok: true},
		{name: "upload", key: "inbox/uploads/j-0123456789abcdef.json", id: "j-0123456789abcdef", source: "upload", ok: true},
		{name: "api only last extension", key: "inbox/jobs/j-abcdef.tar.gz", source: "drop", ok: true},
		{name: "upper case name is a drop", key: "inbox/jobs/J-ABCDEF.txt", source: "drop", ok: true},
		{name: "short name is a drop", key: "inbox/jobs/j-1.txt", source: "drop", ok: true},
		{name: "nested under jobs is a drop", key: "inbox/jobs/sub/j-0123456789abcdef.txt", source: "drop", ok: true},
		{name: "empty name under jobs", key: "inbox/jobs/.txt", source: "drop", ok: true},
		{name: "drop", key: "inbox/list.txt", etag: `"d41d8cd98f00b204e9800998ecf8427e"`, source: "drop", ok: true},
		{name: "drop nested", key: "inbox/a/b/c.csv", etag: "abc", source: "drop", ok: true},
		{name: "folder key", key: "inbox/folder/", ok: false},
		{name: "jobs folder key", key: "inbox/jobs/", ok: false},
		{name: "inbox itself", key: "inbox/", ok: false},
		{name: "no slash", key: "inbox", ok: false},
		{name: "results", key: "results/j-0123456789abcdef/results.jsonl", ok: false},
		{name: "case matters", key: "Inbox/list.txt", ok: false},
		{name: "empty", key: "", ok: false},
		{name: "leading slash", key: "/inbox/list.txt", ok: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, source, ok := JobForKey(c.key, c.etag)
			if ok != c.ok {
				t.Fatalf("JobForKey(%q, %q) ok = %v, want %v", c.key, c.etag, ok, c.ok)
			}
			if !ok {
				if id != "" || source != "" {
					t.Errorf("JobForKey(%q) = %q, %q with ok false, want empty", c.key, id, source)
				}
				return
			}
			if source != c.source {
				t.Errorf("JobForKey(%q) source = %q, want %q", c.key, source, c.source)
			}
			if !ValidJobID(id) {
				t.Errorf("JobForKey(%q) = %q, not a valid job ID", c.key, id)
			}
			switch {
			case c.id != "" && id != c.id:
				t.Errorf("JobForKey(%q) = %q, want %q", c.key, id, c.id)
			case c.source == "drop" && (len(id) != 22 || !strings.HasPrefix(id, "d-")):
				t.Errorf("JobForKey(%q) = %q, want d- and 20 hex digits", c.key, id)
			}
			if c.source == "drop" {
				// The ETag with or without its quotes names the same object.
				bare := strings.Trim(c.etag, `"`)
				for _, e := range []string{bare, `"` + bare + `"`} {
					if got := dropID(c.key, e); got != id {
						t.Errorf("JobForKey(%q, %q) = %q, want %q as for %q", c.key, e, got, id, c.etag)
					}
				}
				if got := dropID(c.key, c.etag+"1"); got == id {
					t.Errorf("JobForKey(%q): another ETag gives the same ID %q", c.key, id)
				}
				if got := dropID(c.key+"x", c.etag); got == id {
					t.Errorf("JobForKey: key %q and %q give the same ID %q", c.key, c.key+"x", id)
				}
			}
			if again, s2, ok2 := JobForKey(c.key, c.etag); again != id || s2 != source || !ok2 {
				t.Errorf("JobForKey(%q) not deterministic: %q then %q", c.key, id, again)
			}
		})
	}
	// The key and ETag are separated: moving characters between them
	// changes the ID.
	if dropID("inbox/ab", "c") == dropID("inbox/a", "bc") {
		t.Error(`JobForKey("inbox/ab","c") == JobForKey("inbox/a","bc")`)
	}
}

func TestValidJobID(t *testing.T) {
	cases := []struct {
		id   string
		want bool
	}{
		{"j-0123456789abcdef", true},
		{"d-0123456789abcdef0123", true},
		{"abcdef", true},
		{"000000", true},
		{"a-----", true},
		{strings.Repeat("a", 64), true},
		{"abcde", false},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"-abcdef", false},
		{"Abcdef", false},
		{"abc_def", false},
		{"abc.def", false},
		{"abc def", false},
		{"abc/def", false},
		{"abcdef\n", false},
		{"\nabcdef", false},
		{"abcdéf", false},
		{"01JGZ8Q7R5M3X9K2W4T6Y8B0CD", false}, // the openapi.yaml examples' upper-case ULIDs
	}
	for _, c := range cases {
		if got := ValidJobID(c.id); got != c.want {
			t.Errorf("ValidJobID(%q) = %v, want %v", c.id, got, c.want)
		}
	}
	seen := map[string]bool{}
	for range 200 {
		id := newJobID()
		if !ValidJobID(id) || len(id) != 18 || !strings.HasPrefix(id, "j-") || seen[id] {
			t.Fatalf("newJobID() = %q: want a fresh valid j- ID of 18 characters", id)
		}
		seen[id] = true
	}
}

// linesGroups returns groups with the given numbers of input lines, spread
// over one or two items each.
func linesGroups(ns ...int) []groups.Group {
	gs := make([]groups.Group, len(ns))
	line := 1
	for i, n := range ns {
		gs[i] = groups.Group{Job: "j-test00", Domain: fmt.Sprintf("d%d.example", i), Shard: -1}
		for k := range n {
			if k%2 == 0 {
				gs[i].Items = append(gs[i].Items, groups.Item{URL: fmt.Sprintf("http://d%d.example/%d", i, k)})
			}
			it := &gs[i].Items[len(gs[i].Items)-1]
			it.Lines = append(it.Lines, line)
			line++
		}
	}
	return gs
}

func TestAssignShards(t *testing.T) {
	cases := []struct {
		name       string
		lines      []int
		shardLines int
		shards     []int // each group's shard
		totals     []int
	}{
		{name: "none", lines: nil, shardLines: 10, shards: []int{}, totals: nil},
		{name: "one group", lines: []int{3}, shardLines: 10, shards: []int{0}, totals: []int{3}},
		{name: "all in one", lines: []int{3, 3, 3}, shardLines: 10, shards: []int{0, 0, 0}, totals: []int{9}},
		{name: "closes at exactly shardLines", lines: []int{5, 5, 1}, shardLines: 10, shards: []int{0, 0, 1}, totals: []int{10, 1}},
		{name: "closes past shardLines", lines: []int{6, 6, 6, 6}, shardLines: 10, shards: []int{0, 0, 1, 1}, totals: []int{12, 12}},
		{name: "big group alone", lines: []int{25, 1, 1}, shardLines: 10, shards: []int{0, 1, 1}, totals: []int{25, 2}},
		{name: "big group last", lines: []int{1, 25}, shardLines: 10, shards: []int{0, 0}, totals: []int{26}},
		{name: "shardLines 1", lines: []int{1, 2, 1}, shardLines: 1, shards: []int{0, 1, 2}, totals: []int{1, 2, 1}},
		{name: "empty groups", lines: []int{0, 0, 10, 0}, shardLines: 10, shards: []int{0, 0, 0, 1}, totals: []int{10, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gs := linesGroups(c.lines...)
			totals := assignShards(gs, c.shardLines)
			if !reflect.DeepEqual(totals, c.totals) {
				t.Errorf("totals %v, want %v", totals, c.totals)
			}
			got := make([]int, len(gs))
			for i := range gs {
				got[i] = gs[i].Shard
			}
			if !reflect.DeepEqual(got, c.shards) {
				t.Errorf("shards %v, want %v", got, c.shards)
			}
		})
	}
}

// TestAssignShardsInvariants checks, over many group sizes, that the totals
// sum to the lines, that shards are contiguous from 0, that each shard's
// total is the lines of its groups, and that a shard closes as soon as it
// reaches shardLines.
func TestAssignShardsInvariants(t *testing.T) {
	for seed := range 200 {
		n := seed % 37
		ns := make([]int, n)
		sum := 0
		for i := range ns {
			ns[i] = (seed*7 + i*13) % 23
			sum += ns[i]
		}
		shardLines := 1 + seed%40
		gs := linesGroups(ns...)
		totals := assignShards(gs, shardLines)
		got := 0
		for _, tot := range totals {
			got += tot
		}
		if got != sum {
			t.Fatalf("seed %d: totals %v sum to %d, want %d lines", seed, totals, got, sum)
		}
		per := make([]int, len(totals))
		for i := range gs {
			s := gs[i].Shard
			if i == 0 && s != 0 || i > 0 && s != gs[i-1].Shard && s != gs[i-1].Shard+1 {
				t.Fatalf("seed %d: group %d in shard %d after shard %d: not contiguous", seed, i, s, gs[max(i-1, 0)].Shard)
			}
			if i > 0 && s == gs[i-1].Shard && per[s] >= shardLines {
				t.Fatalf("seed %d: group %d joins shard %d that already has %d >= %d lines", seed, i, s, per[s], shardLines)
			}
			if i > 0 && s != gs[i-1].Shard && per[gs[i-1].Shard] < shardLines {
				t.Fatalf("seed %d: shard %d closed at %d < %d lines", seed, gs[i-1].Shard, per[gs[i-1].Shard], shardLines)
			}
			per[s] += ns[i]
		}
		if len(gs) > 0 && gs[len(gs)-1].Shard != len(totals)-1 {
			t.Fatalf("seed %d: %d totals for %d shards", seed, len(totals), gs[len(gs)-1].Shard+1)
		}
		if !reflect.DeepEqual(per, totals) && !(len(per) == 0 && totals == nil) {
			t.Fatalf("seed %d: totals %v, want the groups' lines per shard %v", seed, totals, per)
		}
	}
}

func TestTopDomains(t *testing.T) {
	dc := func(pairs ...any) []jobs.DomainCount {
		out := []jobs.DomainCount{}
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, jobs.DomainCount{Domain: pairs[i].(string), URLs: pairs[i+1].(int)})
		}
		return out
	}
	cases := []struct {
		name    string
		domains map[string]int
		n       int
		want    []jobs.DomainCount
	}{
		{name: "empty", domains: nil, n: 10, want: dc()},
		{name: "most first", domains: map[string]int{"a.com": 1, "b.com": 3, "c.com": 2}, n: 10,
			want: dc("b.com", 3, "c.com", 2, "a.com", 1)},
		{name: "ties by name", domains: map[string]int{"z.com": 2, "b.com": 2, "m.com": 2, "a.com": 1}, n: 10,
			want: dc("b.com", 2, "m.com", 2, "z.com", 2, "a.com", 1)},
		{name: "cut to n", domains: map[string]int{"a.com": 5, "b.com": 4, "c.com": 3, "d.com": 2}, n: 2,
			want: dc("a.com", 5, "b.com", 4)},
		{name: "tie at the cut", domains: map[string]int{"c.com": 4, "b.com": 4, "a.com": 4}, n: 2,
			want: dc("a.com", 4, "b.com", 4)},
		{name: "n zero", domains: map[string]int{"a.com": 1}, n: 0, want: dc()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 5 { // map order varies between runs
				got := topDomains(c.domains, c.n)
				if !reflect.DeepEqual(got, c.want) {
					t.Fatalf("topDomains(%v, %d) = %v, want %v", c.domains, c.n, got, c.want)
				}
			}
		})
	}
}

func TestListFormat(t *testing.T) {
	cases := []struct {
		ctype  string
		format urllist.Format
		ext    string
		ok     bool
	}{
		{"text/plain", urllist.FormatText, ".txt", true},
		{"text/plain; charset=utf-8", urllist.FormatText, ".txt", true},
		{"Text/Plain; Charset=UTF-8", urllist.FormatText, ".txt", true},
		{"text/plain;charset=us-ascii", urllist.FormatText, ".txt", true},
		{"text/csv", urllist.FormatCSV, ".csv", true},
		{"TEXT/CSV; header=present", urllist.FormatCSV, ".csv", true},
		{"application/json", urllist.FormatJSON, ".json", true},
		{"application/json; charset=utf-8", urllist.FormatJSON, ".json", true},
		{"", 0, "", false},
		{"text", 0, "", false},
		{"text/plain; charset", 0, "", false},
		{"text/html", 0, "", false},
		{"application/x-ndjson", 0, "", false},
		{"application/octet-stream", 0, "", false},
		{"image/png", 0, "", false},
		{"multipart/form-data; boundary=x", 0, "", false},
	}
	for _, c := range cases {
		f, ext, err := listFormat(c.ctype)
		if !c.ok {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != http.StatusUnsupportedMediaType || ae.Code != CodeMediaType {
				t.Errorf("listFormat(%q) = %v, %q, %v; want a 415 %s error", c.ctype, f, ext, err, CodeMediaType)
			}
			continue
		}
		if err != nil || f != c.format || ext != c.ext {
			t.Errorf("listFormat(%q) = %v, %q, %v; want %v, %q", c.ctype, f, ext, err, c.format, c.ext)
		}
	}
}

func TestLineOf(t *testing.T) {
	cases := []struct {
		msg  string
		want int
	}{
		{"reading JSON: line 3: invalid character '\"' after array element", 3},
		{"entry on line 12: boom", 12},
		{"line 7", 7},
		{"line 1234567: x", 1234567},
		{"reading JSON: top-level value is an object, want an array", 0},
		{"line x", 0},
		{"", 0},
		{"reading line 4: line 9", 4}, // the first one
		{"context deadline 5 exceeded at line 8", 8}, // not "deadline 5"
		{"headline 3", 0},
		{"line x then line 6", 6},
	}
	for _, c := range cases {
		if got := lineOf(errors.New(c.msg)); got != c.want {
			t.Errorf("lineOf(%q) = %d, want %d", c.msg, got, c.want)
		}
	}
}

// collectPart decodes a part back into a part.
func collectPart(t testing.TB, b []byte) (*part, error) {
	t.Helper()
	p := &part{}
	err := decodePart(bytes.NewReader(b), func(r record) error {
		if r.Result != nil {
			p.results = append(p.results, *r.Result)
		}
		if r.Request != nil {
			p.requests = append(p.requests, *r.Request)
		}
		p.retries += r.Retries
		return nil
	})
	return p, err
}

func TestPartRoundTrip(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	cases := []struct {
		name string
		p    part
	}{
		{name: "empty", p: part{}},
		{name: "retries only", p: part{retries: 7}},
		{name: "full", p: part{
			results: []results.Result{
				{Line: 1, URL: "https://example.com/", Domain: "example.com", Class: "ok", Status: 200,
					LatencyMS: 12.5, Attempts: 1, CheckedAt: at},
				{Line: 2, URL: "http://a.example/x?y=ü\u2028", Domain: "a.example", Class: "redirect", Status: 301,
					FinalURL: "https://a.example/x", Redirects: []string{"301 https://a.example/x"}, LatencyMS: 0.001,
					Attempts: 3, Error: "boom\n\"quoted\"", CheckedAt: at.Add(time.Nanosecond)},
				{Line: 3, URL: "not a url", Class: "invalid", Error: "no scheme", CheckedAt: at},
			},
			requests: []request{{Domain: "example.com", Status: 200, At: at.UnixMilli()},
				{Domain: "a.example", Status: 429, Throttled: true, At: 1}, {Domain: "b.example", At: 0}},
			retries: 2,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := c.p.encode()
			if err != nil {
				t.Fatal(err)
			}
			if c.p.empty() != (len(b) == 0) {
				t.Errorf("empty() = %v but encoding has %d bytes", c.p.empty(), len(b))
			}
			got, err := collectPart(t, b)
			if err != nil {
				t.Fatalf("decodePart: %v\n%s", err, b)
			}
			if !reflect.DeepEqual(*got, c.p) {
				t.Errorf("round trip:\n got %+v\nwant %+v\nencoded %s", *got, c.p, b)
			}
		})
	}
}

func TestDecodePartErrors(t *testing.T) {
	stop := errors.New("stop")
	cases := []struct {
		name    string
		in      string
		records int    // records passed to fn before the end
		errHas  string // "" = no error
	}{
		{name: "empty", in: "", records: 0},
		{name: "blank lines", in: "\n \n\t\r\n", records: 0},
		{name: "unknown fields", in: `{"zz":1}` + "\n" + `{"n":2}`, records: 2},
		{name: "no final newline", in: `{"n":1}`, records: 1},
		{name: "CRLF", in: "{\"n\":1}\r\n{\"n\":1}\r\n", records: 2},
		{name: "bad line named", in: `{"n":1}` + "\n\n" + `{"n":` + "\n", records: 1, errHas: "line 3"},
		{name: "not an object", in: `[1]`, records: 0, errHas: "line 1"},
		{name: "wrong type", in: `{"n":"x"}`, records: 0, errHas: "line 1"},
		{name: "fn error stops", in: `{"n":1}` + "\n" + `{"n":1}`, records: 1, errHas: "stop"},
		{name: "line too long", in: `{"zz":"` + strings.Repeat("x", 17<<20) + `"}`, records: 0, errHas: "too long"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			err := decodePart(strings.NewReader(c.in), func(record) error {
				n++
				if c.name == "fn error stops" {
					return stop
				}
				return nil
			})
			if c.errHas == "" && err != nil || c.errHas != "" && (err == nil || !strings.Contains(err.Error(), c.errHas)) {
				t.Errorf("decodePart error %v, want one containing %q", err, c.errHas)
			}
			if n != c.records {
				t.Errorf("fn called %d times, want %d", n, c.records)
			}
		})
	}
}
