package urllist

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/urlcheck/urlcheck/pkg/urlnorm"
)

// Format is the syntax of an input list.
type Format int

const (
	// FormatAuto picks the format from Options.Name and the content; see
	// Options.Format for the rule.
	FormatAuto Format = iota
	// FormatText is one URL per line; blank lines and lines whose first
	// non-space character is '#' are skipped.
	FormatText
	// FormatCSV is comma-separated values (RFC 4180, read leniently) with the
	// URLs in the column named "url", or else in the first column.
	FormatCSV
	// FormatJSON is a JSON array (RFC 8259) of URL strings or of objects
	// with a "url" string field.
	FormatJSON
)

var formatNames = [...]string{FormatAuto: "auto", FormatText: "text", FormatCSV: "csv", FormatJSON: "json"}

// String returns the name ParseFormat accepts for f ("auto", "text", "csv",
// "json"), or "Format(N)" for an unknown value.
func (f Format) String() string {
	if f >= 0 && int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat parses a format name: "auto", "text", "csv" or "json" (case and
// surrounding space ignored). It returns an error naming the bad value and
// the accepted ones.
func ParseFormat(s string) (Format, error) {
	for f, name := range formatNames {
		if strings.EqualFold(strings.TrimSpace(s), name) {
			return Format(f), nil
		}
	}
	return 0, fmt.Errorf("unknown list format %q (want auto, text, csv or json)", s)
}

// Entry is one URL of the input, valid or not.
type Entry struct {
	// Line is the 1-based line number in the input where the URL appears
	// (for CSV the line where its field starts; for JSON the line where its
	// array element starts).
	Line int
	// Raw is the URL text as given, with surrounding white space trimmed. For
	// a line or value longer than Options.MaxLineBytes it holds only the first
	// RawPrefixBytes bytes followed by "...". For an invalid JSON element it
	// is the element's JSON text.
	Raw string
	// URL is the normalized URL (urlnorm.Normalize(Raw).String()), "" when
	// Err != "".
	URL string
	// Host is the normalized host without port or IPv6 brackets (the URL's
	// Hostname()), "" when Err != "".
	Host string
	// Domain is Options.Keyer.Key(Host), the key the host's rate limit is
	// shared under. For an invalid entry it is a best-effort key of whatever
	// host Raw names (e.g. for "ftp://example.com/" it is "example.com"), or
	// "" when there is none.
	Domain string
	// Err is the reason the entry is invalid (not http/https, unparsable, too
	// long, contains credentials, bad JSON element, ...), "" when it is valid.
	Err string
}

// Valid reports whether the entry holds a usable URL (Err == "").
func (e Entry) Valid() bool { return e.Err == "" }

// Defaults for Options.
const (
	// DefaultMaxEntries is the default Options.MaxEntries.
	DefaultMaxEntries = 1_000_000
	// DefaultMaxLineBytes (64 KiB) is the default Options.MaxLineBytes.
	DefaultMaxLineBytes = 64 << 10
	// RawPrefixBytes is how many bytes of an over-long line Entry.Raw keeps.
	RawPrefixBytes = 256
)

// ErrTooManyEntries is returned, wrapped with the limit, when the input
// holds more than Options.MaxEntries entries. Test with errors.Is.
var ErrTooManyEntries = errors.New("too many entries")

// Options control Read. The zero value sniffs the format, applies no key
// overrides and uses the default limits.
type Options struct {
	// Format is the input syntax. FormatAuto decides as follows:
	//  1. by Name's extension (case-insensitive): ".csv" is CSV, ".json" is
	//     JSON, ".txt" and ".list" are text;
	//  2. otherwise by content, ignoring a UTF-8 BOM and leading white
	//     space: a first character '[' means JSON; else, if the first
	//     non-blank line, read as a CSV record, has a field that is "url"
	//     (case-insensitive, trimmed), CSV; else text. A line merely
	//     containing a comma is never taken as CSV, since URLs contain
	//     commas.
	Format Format
	// Name is the input's file name, used only for sniffing by extension;
	// optional (e.g. "" or "-" for standard input).
	Name string
	// Keyer maps hosts to Entry.Domain; nil applies no overrides.
	Keyer *urlnorm.Keyer
	// MaxEntries is the most entries (valid and invalid) Read delivers; 0
	// means DefaultMaxEntries. On finding one more, Read returns an error
	// wrapping ErrTooManyEntries after fn has seen the first MaxEntries.
	MaxEntries int
	// MaxLineBytes is the longest line, in bytes without the line ending,
	// that text input may have (for CSV and JSON: the longest URL field or
	// string); 0 means DefaultMaxLineBytes. A longer one becomes an invalid
	// entry with reason "line is N bytes, longer than the M-byte limit";
	// reading goes on. URLs longer than urlnorm.MaxURLBytes are invalid in
	// any case.
	MaxLineBytes int
}

// Read parses the list in r and calls fn for each entry, valid or invalid, in
// input order, without holding the list in memory (except that one CSV record
// or one JSON array element is held whole).
//
// Errors: a bad Options value or nil fn; a read error from r; malformed CSV
// or JSON syntax, a JSON top-level value other than an array, or data after
// it (with the line number); ErrTooManyEntries wrapped; or fn's error,
// wrapped with the entry's line number, after which Read stops at once.
// Invalid URLs are not errors: they are entries with Err set.
func Read(r io.Reader, o Options, fn func(Entry) error) error {
	if fn == nil {
		return errors.New("urllist.Read: nil callback")
	}
	if o.Format < FormatAuto || o.Format > FormatJSON {
		return fmt.Errorf("urllist.Read: invalid Format %v", o.Format)
	}
	if o.MaxEntries < 0 {
		return fmt.Errorf("urllist.Read: MaxEntries is %d, want >= 0", o.MaxEntries)
	}
	if o.MaxLineBytes < 0 {
		return fmt.Errorf("urllist.Read: MaxLineBytes is %d, want >= 0", o.MaxLineBytes)
	}
	rd := &reader{keyer: o.Keyer, maxEntries: o.MaxEntries, maxLine: o.MaxLineBytes, fn: fn}
	if rd.maxEntries == 0 {
		rd.maxEntries = DefaultMaxEntries
	}
	if rd.maxLine == 0 {
		rd.maxLine = DefaultMaxLineBytes
	}
	br := bufio.NewReaderSize(r, max(rd.maxLine+2, 64<<10))
	f := o.Format
	if f == FormatAuto {
		f = sniff(br, o.Name)
	}
	skipBOM(br)
	switch f {
	case FormatCSV:
		return rd.readCSV(br)
	case FormatJSON:
		return rd.readJSON(br)
	default:
		return rd.readText(br)
	}
}

// reader holds the state shared by the three formats.
type reader struct {
	keyer      *urlnorm.Keyer
	maxEntries int
	maxLine    int
	n          int // entries delivered so far
	fn         func(Entry) error
	keys       map[string]string // host -> Keyer.Key(host), bounded by maxKeyCache
}

// maxKeyCache bounds reader.keys; lists usually hold many URLs per host, and
// a cache hit costs far less than a Public Suffix List lookup.
const maxKeyCache = 1 << 16

// key returns rd.keyer.Key(host), memoized.
func (rd *reader) key(host string) string {
	if k, ok := rd.keys[host]; ok {
		return k
	}
	k := rd.keyer.Key(host)
	if rd.keys == nil || len(rd.keys) >= maxKeyCache {
		rd.keys = make(map[string]string, 1024)
	}
	rd.keys[strings.Clone(host)] = k // host may share memory with a long line
	return k
}

// emit delivers e, enforcing MaxEntries.
func (rd *reader) emit(e Entry) error {
	if rd.n >= rd.maxEntries {
		return fmt.Errorf("line %d: %w: the list has more than the limit of %d", e.Line, ErrTooManyEntries, rd.maxEntries)
	}
	rd.n++
	if err := rd.fn(e); err != nil {
		return fmt.Errorf("entry on line %d: %w", e.Line, err)
	}
	return nil
}

// emitURL normalizes raw (already trimmed) and delivers the entry. what names
// the unit MaxLineBytes applies to in the reason ("line", "field", "string").
func (rd *reader) emitURL(line int, raw, what string) error {
	if len(raw) > rd.maxLine {
		return rd.emitTooLong(line, raw, len(raw), what)
	}
	u, err := urlnorm.Normalize(raw)
	if err != nil {
		return rd.emit(Entry{Line: line, Raw: raw, Err: err.Error(), Domain: rd.bestEffortDomain(raw)})
	}
	host := u.Hostname()
	return rd.emit(Entry{Line: line, Raw: raw, URL: u.String(), Host: host, Domain: rd.key(host)})
}

// emitTooLong delivers an invalid entry for a line or value of n bytes that
// starts with prefix.
func (rd *reader) emitTooLong(line int, prefix string, n int, what string) error {
	return rd.emit(Entry{
		Line: line,
		Raw:  truncate(strings.TrimSpace(prefix)),
		Err:  fmt.Sprintf("%s is %d bytes, longer than the %d-byte limit", what, n, rd.maxLine),
	})
}

// truncate shortens s to at most RawPrefixBytes bytes plus "...", cutting
// at a UTF-8 boundary.
func truncate(s string) string {
	if len(s) <= RawPrefixBytes {
		return s
	}
	i := RawPrefixBytes
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// bestEffortDomain returns the key of the host an invalid URL names, or "".
func (rd *reader) bestEffortDomain(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 || len(raw) > urlnorm.MaxURLBytes {
		return ""
	}
	rest := raw[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	if j := strings.LastIndexByte(rest, '@'); j >= 0 {
		rest = rest[j+1:]
	}
	u, err := urlnorm.Normalize("http://" + rest + "/")
	if err != nil {
		return ""
	}
	return rd.key(u.Hostname())
}

var bom = []byte("\xef\xbb\xbf")

// skipBOM discards a UTF-8 byte order mark at the start of br.
func skipBOM(br *bufio.Reader) {
	if b, err := br.Peek(len(bom)); err == nil && bytes.Equal(b, bom) {
		_, _ = br.Discard(len(bom)) // cannot fail: the bytes are buffered
	}
}

// sniff implements the FormatAuto rule documented on Options.Format. It only
// peeks at br and reads no more than the first non-blank line (at most br's
// buffer); read errors are left for the format's reader to report.
func sniff(br *bufio.Reader, name string) Format {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".csv":
		return FormatCSV
	case ".json":
		return FormatJSON
	case ".txt", ".list":
		return FormatText
	}
	for {
		b, _ := br.Peek(br.Buffered()) // no I/O
		if f, ok := sniffBytes(bytes.TrimPrefix(b, bom), false); ok {
			return f
		}
		final := br.Buffered() >= br.Size()
		if !final {
			if _, err := br.Peek(br.Buffered() + 1); err != nil { // reads once more
				final = true
				b, _ = br.Peek(br.Buffered())
			}
		}
		if final {
			f, _ := sniffBytes(bytes.TrimPrefix(b, bom), true)
			return f
		}
	}
}

// sniffBytes decides the format from the start of the input, b. It reports
// false when it needs more bytes and final is false.
func sniffBytes(b []byte, final bool) (Format, bool) {
	b = bytes.TrimLeft(b, " \t\r\n\v\f")
	if len(b) == 0 {
		return FormatText, final
	}
	if b[0] == '[' {
		return FormatJSON, true
	}
	i := bytes.IndexByte(b, '\n')
	if i < 0 && !final {
		return 0, false
	}
	if i >= 0 {
		b = b[:i]
	}
	cr := csv.NewReader(bytes.NewReader(b))
	cr.LazyQuotes, cr.FieldsPerRecord = true, -1
	if rec, err := cr.Read(); err == nil && urlColumn(rec) >= 0 {
		return FormatCSV, true
	}
	return FormatText, true
}

// readText reads one URL per line. It uses ReadSlice rather than a Scanner so
// that an over-long line becomes an invalid entry instead of ending the read.
func (rd *reader) readText(br *bufio.Reader) error {
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if len(b) == 0 && err == io.EOF {
			return nil
		}
		if err == bufio.ErrBufferFull {
			prefix := string(b[:min(len(b), RawPrefixBytes+1)])
			n := len(b)
			for err == bufio.ErrBufferFull {
				b, err = br.ReadSlice('\n')
				n += len(b)
			}
			if err != nil && err != io.EOF {
				return fmt.Errorf("reading line %d: %w", line, err)
			}
			n -= len(b) - len(trimEOL(b))
			if p := strings.TrimSpace(prefix); !strings.HasPrefix(p, "#") {
				if err := rd.emitTooLong(line, prefix, n, "line"); err != nil {
					return err
				}
			}
		} else {
			if err != nil && err != io.EOF {
				return fmt.Errorf("reading line %d: %w", line, err)
			}
			b = trimEOL(b)
			n := len(b)
			if t := bytes.TrimSpace(b); len(t) > 0 && t[0] != '#' {
				var ferr error
				if n > rd.maxLine {
					ferr = rd.emitTooLong(line, string(t[:min(len(t), RawPrefixBytes+1)]), n, "line")
				} else {
					ferr = rd.emitURL(line, string(t), "line")
				}
				if ferr != nil {
					return ferr
				}
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// trimEOL removes a trailing "\n" or "\r\n".
func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// readCSV reads CSV (RFC 4180) leniently: quotes may appear in unquoted
// fields, rows may have different lengths, and lines starting with '#' are
// comments. Column choice: if the first record has a field equal to "url"
// (case-insensitive, trimmed), that column is used and the record is the
// header. Otherwise the first column is used, and the first record is still
// taken as a header, and skipped, when its first field is a header-like word:
// non-empty, holding at least one letter and only letters, digits, spaces,
// '_' and '-' (so "Link" or "page address", but not "example.com" or
// "http://..."). Empty fields and rows too short to have the column are
// skipped.
func (rd *reader) readCSV(br *bufio.Reader) error {
	cr := csv.NewReader(br)
	cr.LazyQuotes, cr.FieldsPerRecord, cr.ReuseRecord, cr.Comment = true, -1, true, '#'
	col := 0
	for first := true; ; first = false {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading CSV: %w", err)
		}
		if first {
			if i := urlColumn(rec); i >= 0 {
				col = i
				continue
			}
			if headerWord(rec[0]) {
				continue
			}
		}
		if col >= len(rec) {
			continue
		}
		cell := strings.TrimSpace(rec[col])
		if cell == "" {
			continue
		}
		line, _ := cr.FieldPos(col)
		if err := rd.emitURL(line, cell, "field"); err != nil {
			return err
		}
	}
}

// urlColumn returns the index of the first field of rec that is "url"
// (case-insensitive, trimmed), or -1.
func urlColumn(rec []string) int {
	for i, f := range rec {
		if strings.EqualFold(strings.TrimSpace(f), "url") {
			return i
		}
	}
	return -1
}

// headerWord reports whether a first CSV field looks like a column name
// rather than a URL; see readCSV.
func headerWord(s string) bool {
	s = strings.TrimSpace(s)
	letter := false
	for _, r := range s {
		switch {
		case unicode.IsLetter(r):
			letter = true
		case unicode.IsDigit(r), r == ' ', r == '_', r == '-':
		default:
			return false
		}
	}
	return letter
}

// readJSON reads a JSON array whose elements are URL strings or objects with
// a "url" string field (the key matched case-insensitively, as encoding/json
// does; other fields ignored), decoding one element at a time.
func (rd *reader) readJSON(br *bufio.Reader) error {
	lc := &lineCounter{r: br, line: 1}
	dec := json.NewDecoder(lc)
	tok, err := dec.Token()
	if err == io.EOF {
		return errors.New("reading JSON: input is empty, want an array")
	}
	if err != nil {
		return fmt.Errorf("reading JSON: line %d: %w", lc.lineAt(dec.InputOffset()), err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("reading JSON: top-level value is %s, want an array", describeToken(tok))
	}
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("reading JSON: line %d: %w", lc.lineAt(syntaxOffset(err, dec)), err)
		}
		line := lc.lineAt(dec.InputOffset() - int64(len(raw)))
		s, reason := elementURL(raw)
		if reason != "" {
			err = rd.emit(Entry{Line: line, Raw: truncate(string(raw)), Err: reason})
		} else {
			err = rd.emitURL(line, strings.TrimSpace(s), "string")
		}
		if err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return fmt.Errorf("reading JSON: line %d: %w", lc.lineAt(syntaxOffset(err, dec)), err)
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return fmt.Errorf("reading JSON: after the array: %w", err)
		}
		return fmt.Errorf("reading JSON: line %d: unexpected %s after the array", lc.lineAt(dec.InputOffset()), describeToken(tok))
	}
	return nil
}

// syntaxOffset returns the input offset an error from dec refers to.
func syntaxOffset(err error, dec *json.Decoder) int64 {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return se.Offset
	}
	return dec.InputOffset()
}

// elementURL extracts the URL from one JSON array element, or returns the
// reason it has none.
func elementURL(raw json.RawMessage) (url, reason string) {
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &url); err != nil {
			return "", fmt.Sprintf("JSON string cannot be decoded: %v", err)
		}
		return url, ""
	case '{':
		var obj struct {
			URL json.RawMessage `json:"url"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return "", fmt.Sprintf("JSON object cannot be decoded: %v", err)
		}
		if len(obj.URL) == 0 {
			return "", `JSON object has no "url" field`
		}
		if obj.URL[0] != '"' || json.Unmarshal(obj.URL, &url) != nil {
			return "", fmt.Sprintf(`JSON object's "url" field is %s, want a string`, kindOf(obj.URL[0]))
		}
		return url, ""
	default:
		return "", fmt.Sprintf(`JSON array element is %s, want a string or an object with a "url" field`, kindOf(raw[0]))
	}
}

// kindOf names the JSON value kind that starts with c.
func kindOf(c byte) string {
	switch c {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// describeToken names a top-level JSON token for an error message.
func describeToken(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return "an object"
		}
		return fmt.Sprintf("%q", string(t))
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	default:
		return "a number"
	}
}

// lineCounter passes reads through and remembers where the newlines are, so
// that byte offsets the JSON decoder reports can be turned into line numbers.
// Queries must come in non-decreasing offset order.
type lineCounter struct {
	r    io.Reader
	read int64   // bytes read so far
	nl   []int64 // offsets of newlines not yet passed by a query
	line int     // line number at the last queried offset
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i := 0; i < n; {
		j := bytes.IndexByte(p[i:n], '\n')
		if j < 0 {
			break
		}
		c.nl = append(c.nl, c.read+int64(i+j))
		i += j + 1
	}
	c.read += int64(n)
	return n, err
}

// lineAt returns the 1-based line number of byte offset off.
func (c *lineCounter) lineAt(off int64) int {
	i := 0
	for i < len(c.nl) && c.nl[i] < off {
		i++
	}
	if i > 0 {
		c.line += i
		c.nl = append(c.nl[:0], c.nl[i:]...)
	}
	return c.line
}
