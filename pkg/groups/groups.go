package groups

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"unicode/utf8"
)

// MaxMessageBytes is the largest message body, in bytes, that Amazon SQS
// accepts: 256 KiB = 262,144 bytes (Amazon SQS Developer Guide, "Amazon SQS
// message quotas": "The minimum message size is 1 byte (1 character). The
// maximum is 262,144 bytes (256 KiB)"). Every group a Splitter returns encodes
// to at most this many bytes, given a job ID and domain of sane length (below
// a few KiB each) and URLs of at most MaxURLBytes.
const MaxMessageBytes = 256 * 1024

// MaxURLBytes is the longest URL, in bytes, that the Splitter is sized for.
// Even if every byte of such a URL needed the longest JSON escape (6 bytes),
// one URL fits in a message many times over.
const MaxURLBytes = 8000

// DefaultMaxGroup is the number of URLs per group that NewSplitter uses when
// asked for 0.
const DefaultMaxGroup = 50

// Item is one distinct URL of a group together with every input line that
// named it: the URL is checked once and the result reported for each line.
type Item struct {
	// URL is the URL to check, as normalized by the caller; non-empty valid
	// UTF-8.
	URL string `json:"u"`
	// Lines lists the 1-based input line numbers that named URL, in input
	// order; at least one.
	Lines []int `json:"l"`
	// Tries is the number of check attempts made so far (0 for a fresh item).
	Tries int `json:"t,omitempty"`
	// Throttles is the number of times the server answered 429 Too Many
	// Requests (RFC 6585 §4) or 503 Service Unavailable (RFC 9110 §15.6.4)
	// for this URL so far.
	Throttles int `json:"r,omitempty"`
}

// Group is the unit of work carried by one queue message: some URLs of one
// registrable domain within one job.
type Group struct {
	// Job identifies the job the URLs belong to; non-empty.
	Job string `json:"j"`
	// Domain is the registrable domain (eTLD+1) that every URL belongs to;
	// non-empty.
	Domain string `json:"d"`
	// Items are the URLs to check; at least one.
	Items []Item `json:"i"`
	// Shard is the progress shard (0-based) of the job that counts these
	// URLs' lines when they finish: the serverless pipeline keeps one
	// progress counter item per shard (package jobs). 0 when unused.
	Shard int `json:"s,omitempty"`
}

// entry is one distinct URL as held by a Splitter.
type entry struct {
	url  string
	line int    // first line the URL appeared on
	next int32  // index of the domain's next entry, -1 at the end
	dom  int32  // index of the entry's domain
	hash uint32 // low bits of the URL's hash, for the open-addressing table
	dups bool   // more lines in Splitter.dups
}

type domain struct {
	name       string
	head, tail int32 // first and last entry, -1 when none
	n          int   // distinct URLs
}

// Splitter collects a job's URLs one at a time and cuts them into Groups.
// The zero value is not usable; call NewSplitter. A Splitter is not safe for
// concurrent use.
//
// Memory per distinct URL is one 40-byte record plus 8 to 16 bytes of hash
// table; the URL string itself is shared with the caller, not copied. Lines
// of repeated URLs are kept in a side table.
type Splitter struct {
	maxGroup int
	domains  []domain
	domIdx   map[string]int32
	entries  []entry
	// slots is an open-addressing (linear probing) table of entry index+1,
	// 0 meaning empty; its length is a power of two at least twice the
	// number of entries. It costs one hash per Add and no per-URL
	// allocation, where a built-in map hashed twice (lookup, then insert).
	slots   []int32
	seed    maphash.Seed
	dups    map[int32][]int // entry -> lines after the first
	nLines  int
	lastDom string // cache of the most recent domain lookup
	lastIdx int32
}

// NewSplitter returns a Splitter that puts at most maxGroup URLs in a group.
// maxGroup 0 means DefaultMaxGroup (50); a negative maxGroup is treated as 1.
func NewSplitter(maxGroup int) *Splitter {
	if maxGroup == 0 {
		maxGroup = DefaultMaxGroup
	}
	if maxGroup < 1 {
		maxGroup = 1
	}
	return &Splitter{
		maxGroup: maxGroup,
		domIdx:   make(map[string]int32),
		slots:    make([]int32, 1024),
		seed:     maphash.MakeSeed(),
		dups:     make(map[int32][]int),
		lastIdx:  -1,
	}
}

// Add records that input line line (1-based) names url, whose registrable
// domain is dom. A url already added under the same domain is not added
// again; line is appended to its lines instead (the same url under another
// domain is a separate URL). Add does not validate its arguments: Encode
// rejects empty strings and lines below 1 later. A Splitter holds at most
// 2^30 distinct URLs; Add panics beyond that.
func (s *Splitter) Add(dom, url string, line int) {
	di := s.lastIdx
	if di < 0 || dom != s.lastDom {
		var ok bool
		di, ok = s.domIdx[dom]
		if !ok {
			di = int32(len(s.domains))
			s.domains = append(s.domains, domain{name: dom, head: -1, tail: -1})
			s.domIdx[dom] = di
		}
		s.lastDom, s.lastIdx = dom, di
	}
	s.nLines++
	h := uint32(maphash.String(s.seed, url))
	mask := uint32(len(s.slots) - 1)
	i := h & mask
	for {
		v := s.slots[i]
		if v == 0 {
			break
		}
		if e := &s.entries[v-1]; e.hash == h && e.dom == di && e.url == url {
			e.dups = true
			s.dups[v-1] = append(s.dups[v-1], line)
			return
		}
		i = (i + 1) & mask
	}
	if len(s.entries) >= 1<<30 {
		panic("groups: more than 2^30 distinct URLs")
	}
	ei := int32(len(s.entries))
	s.entries = append(s.entries, entry{url: url, line: line, next: -1, dom: di, hash: h})
	s.slots[i] = ei + 1
	if 2*len(s.entries) > len(s.slots) {
		s.grow()
	}
	d := &s.domains[di]
	if d.tail < 0 {
		d.head = ei
	} else {
		s.entries[d.tail].next = ei
	}
	d.tail = ei
	d.n++
}

// grow doubles the hash table, re-inserting entries by their stored hash.
func (s *Splitter) grow() {
	s.slots = make([]int32, 2*len(s.slots))
	mask := uint32(len(s.slots) - 1)
	for ei := range s.entries {
		i := s.entries[ei].hash & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = int32(ei) + 1
	}
}

// Unique returns the number of distinct URLs added so far (counted per
// domain).
func (s *Splitter) Unique() int { return len(s.entries) }

// Domains returns a new map from each registrable domain added so far to its
// number of distinct URLs.
func (s *Splitter) Domains() map[string]int {
	m := make(map[string]int, len(s.domains))
	for _, d := range s.domains {
		m[d.name] = d.n
	}
	return m
}

// Groups cuts everything added so far into groups tagged with job and
// returns them in processing order:
//
//   - domains by distinct-URL count, largest first (longest processing time
//     first: the domains that bound the job's duration start at once), ties
//     by domain name in byte order;
//   - within a domain, URLs in order of first appearance;
//   - each domain's URLs cut greedily into groups of at most the Splitter's
//     maxGroup URLs, cut earlier where the next URL would take the group's
//     encoding past MaxMessageBytes.
//
// A URL named on so many lines that it alone would exceed MaxMessageBytes is
// split into several items with the same URL and disjoint lines (it is then
// checked more than once). A URL whose own encoding cannot fit is left in an
// oversized group, which Encode rejects.
//
// Groups does not change the Splitter and may be called again. Item and
// Lines slices of the returned groups share backing arrays but have capped
// capacity, so appending to one never overwrites another.
func (s *Splitter) Groups(job string) []Group {
	order := make([]int32, len(s.domains))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		da, db := &s.domains[a], &s.domains[b]
		if c := cmp.Compare(db.n, da.n); c != 0 {
			return c
		}
		return cmp.Compare(da.name, db.name)
	})

	p := packer{
		maxGroup: s.maxGroup,
		job:      job,
		jobLen:   jsonStringLen(job),
		items:    make([]Item, 0, len(s.entries)),
		lines:    make([]int, 0, s.nLines),
	}
	for _, di := range order {
		d := &s.domains[di]
		p.startDomain(d.name)
		for ei := d.head; ei >= 0; ei = s.entries[ei].next {
			e := &s.entries[ei]
			l0 := len(p.lines)
			p.lines = append(p.lines, e.line)
			if e.dups {
				p.lines = append(p.lines, s.dups[ei]...)
			}
			p.add(e.url, p.lines[l0:len(p.lines):len(p.lines)])
		}
		p.flush()
	}
	return p.out
}

// packer cuts one domain's URLs at a time into groups. To spare an exact
// JSON size computation for every URL, it first sizes items by an upper
// bound (every URL byte a 6-byte escape, every line 20 digits) and computes
// exact sizes only for a group whose bound would pass the budget.
type packer struct {
	maxGroup    int
	job, domain string
	jobLen      int
	budget      int // bytes available for the items of one group
	items       []Item
	lines       []int
	out         []Group
	start       int  // index in items of the current group's first item
	size        int  // the current group's item bytes, commas included
	exact       bool // size is exact, not an upper bound
}

func (p *packer) startDomain(name string) {
	p.domain = name
	p.budget = MaxMessageBytes - groupOverhead - p.jobLen - jsonStringLen(name)
	p.start, p.size, p.exact = len(p.items), 0, false
}

func (p *packer) flush() {
	if n := len(p.items); n > p.start {
		p.out = append(p.out, Group{Job: p.job, Domain: p.domain, Items: p.items[p.start:n:n]})
	}
	p.start, p.size, p.exact = len(p.items), 0, false
}

// maxIntLen bounds intLen, sign included.
const maxIntLen = 20

// add appends url with its lines to the current group, splitting the lines
// over several items if the URL with all of them would not fit in a group.
func (p *packer) add(url string, lines []int) {
	bound := itemOverhead + 2 + 6*len(url) + (maxIntLen+1)*len(lines)
	if bound <= p.budget {
		p.place(Item{URL: url, Lines: lines}, bound, false)
		return
	}
	urlSize := itemOverhead + jsonStringLen(url)
	for len(lines) > 0 {
		// Take as many lines as fit in an item of their own.
		n, isz := 1, urlSize+intLen(lines[0])
		for n < len(lines) && isz+1+intLen(lines[n]) <= p.budget {
			isz += 1 + intLen(lines[n])
			n++
		}
		p.place(Item{URL: url, Lines: lines[:n:n]}, isz, true)
		lines = lines[n:]
	}
}

// place appends it, of size isz bytes (exact or an upper bound), to the
// current group, first closing the group if it is full.
func (p *packer) place(it Item, isz int, exact bool) {
	count := len(p.items) - p.start
	if count == p.maxGroup {
		p.flush()
		count = 0
	}
	if count > 0 && !exact && (p.exact || p.size+1+isz > p.budget) {
		// The bound says it might not fit: size the group (once) and the
		// item exactly. The group stays exact until it is flushed.
		if !p.exact {
			p.size = count - 1
			for _, g := range p.items[p.start:] {
				p.size += itemSize(g)
			}
			p.exact = true
		}
		isz, exact = itemSize(it), true
	}
	if count > 0 && p.size+1+isz > p.budget {
		p.flush()
		count = 0
	}
	if count == 0 {
		p.exact = exact
	} else {
		p.size++ // comma
		p.exact = p.exact && exact
	}
	p.items = append(p.items, it)
	p.size += isz
}

// Encode returns g as a JSON message body. It returns an error naming the
// field if g is not valid (see Decode) or if a string is not valid UTF-8 (JSON
// would silently replace the bad bytes), and an error if the body would be
// longer than MaxMessageBytes.
func Encode(g Group) ([]byte, error) {
	if err := validate(g, true); err != nil {
		return nil, fmt.Errorf("groups: encode: %w", err)
	}
	b, err := json.Marshal(g)
	if err != nil {
		return nil, fmt.Errorf("groups: encode: %w", err)
	}
	if len(b) > MaxMessageBytes {
		return nil, fmt.Errorf("groups: encode: group of %d items for domain %q is %d bytes, over the %d-byte message limit",
			len(g.Items), g.Domain, len(b), MaxMessageBytes)
	}
	return b, nil
}

// Decode parses a message body made by Encode. It returns an error if b is
// not a JSON object of the Group shape, or if the job ("j") or domain ("d") is
// empty, there are no items ("i"), an item has an empty URL ("u") or no lines
// ("l"), a line is below 1, or an attempt count ("t", "r") is negative. The
// error names the field and, for items, the item's index.
func Decode(b []byte) (Group, error) {
	var g Group
	if err := json.Unmarshal(b, &g); err != nil {
		return Group{}, fmt.Errorf("groups: decode: %w", err)
	}
	if err := validate(g, false); err != nil {
		return Group{}, fmt.Errorf("groups: decode: %w", err)
	}
	return g, nil
}

func validate(g Group, checkUTF8 bool) error {
	if g.Job == "" {
		return fmt.Errorf(`field "j" (job) is empty`)
	}
	if g.Domain == "" {
		return fmt.Errorf(`field "d" (domain) is empty`)
	}
	if len(g.Items) == 0 {
		return fmt.Errorf(`field "i" (items) is empty`)
	}
	if g.Shard < 0 {
		return fmt.Errorf(`field "s" (shard) is negative: %d`, g.Shard)
	}
	if checkUTF8 {
		if !utf8.ValidString(g.Job) {
			return fmt.Errorf(`field "j" (job) is not valid UTF-8`)
		}
		if !utf8.ValidString(g.Domain) {
			return fmt.Errorf(`field "d" (domain) is not valid UTF-8`)
		}
	}
	for i, it := range g.Items {
		if it.URL == "" {
			return fmt.Errorf(`item %d: field "u" (url) is empty`, i)
		}
		if checkUTF8 && !utf8.ValidString(it.URL) {
			return fmt.Errorf(`item %d: field "u" (url) is not valid UTF-8`, i)
		}
		if len(it.Lines) == 0 {
			return fmt.Errorf(`item %d: field "l" (lines) is empty`, i)
		}
		for j, l := range it.Lines {
			if l < 1 {
				return fmt.Errorf(`item %d: field "l" (lines) entry %d is %d, want a 1-based line number`, i, j, l)
			}
		}
		if it.Tries < 0 {
			return fmt.Errorf(`item %d: field "t" (tries) is negative: %d`, i, it.Tries)
		}
		if it.Throttles < 0 {
			return fmt.Errorf(`item %d: field "r" (throttles) is negative: %d`, i, it.Throttles)
		}
	}
	return nil
}

// Encoded sizes, mirroring encoding/json's compact output:
// {"j":J,"d":D,"i":[ITEMS]} and {"u":U,"l":[LINES]}.
const (
	groupOverhead = len(`{"j":,"d":,"i":[]}`)
	itemOverhead  = len(`{"u":,"l":[]}`)
)

// groupSize returns len(json.Marshal(g)) without encoding.
func groupSize(g Group) int {
	n := groupOverhead + jsonStringLen(g.Job) + jsonStringLen(g.Domain)
	for i, it := range g.Items {
		if i > 0 {
			n++
		}
		n += itemSize(it)
	}
	return n
}

// itemSize returns len(json.Marshal(it)) without encoding.
func itemSize(it Item) int {
	n := itemOverhead + jsonStringLen(it.URL)
	for i, l := range it.Lines {
		if i > 0 {
			n++
		}
		n += intLen(l)
	}
	if it.Tries != 0 {
		n += len(`,"t":`) + intLen(it.Tries)
	}
	if it.Throttles != 0 {
		n += len(`,"r":`) + intLen(it.Throttles)
	}
	return n
}

// intLen returns the number of bytes of v in decimal, sign included.
func intLen(v int) int {
	n := 1
	if v < 0 {
		n++
		if v == -v { // math.MinInt
			v = -(v + 1)
		} else {
			v = -v
		}
	}
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}

// escLen[b] is the encoded length of ASCII byte b inside a JSON string as
// encoding/json writes it: 1 for safe bytes, 2 for \" \\ \b \f \n \r \t, and
// 6 (\u00XX) for other control bytes and for <, > and &, which json.Marshal
// escapes for HTML safety.
var escLen = func() (t [utf8.RuneSelf]uint8) {
	for b := range t {
		switch {
		case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
			t[b] = 2
		case b < 0x20 || b == '<' || b == '>' || b == '&':
			t[b] = 6
		default:
			t[b] = 1
		}
	}
	return t
}()

// jsonStringLen returns the length of s encoded by json.Marshal, quotes
// included: invalid UTF-8 bytes become \ufffd and U+2028, U+2029 are escaped.
func jsonStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			n += int(escLen[b])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
