package urllist

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/urlcheck/urlcheck/pkg/urlnorm"
)

// collect reads in with o and returns all entries and Read's error.
func collect(t testing.TB, in string, o Options) ([]Entry, error) {
	t.Helper()
	var got []Entry
	err := Read(strings.NewReader(in), o, func(e Entry) error {
		got = append(got, e)
		return nil
	})
	return got, err
}

// ok is shorthand for a valid entry in want tables; the URL, Host and Domain
// fields are given explicitly.
func ok(line int, raw, url, host, domain string) Entry {
	return Entry{Line: line, Raw: raw, URL: url, Host: host, Domain: domain}
}

// bad is shorthand for an invalid entry; reason is a substring of Err.
func bad(line int, raw, domain, reason string) Entry {
	return Entry{Line: line, Raw: raw, Domain: domain, Err: reason}
}

// sameEntries compares entries, matching Err by substring.
func sameEntries(t *testing.T, got, want []Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d:\n got  %+v\n want %+v", len(got), len(want), got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		errOK := (w.Err == "") == (g.Err == "") && strings.Contains(g.Err, w.Err)
		g.Err, w.Err = "", ""
		if !errOK || g != w {
			t.Errorf("entry %d:\n got  %+v (Err %q)\n want %+v (Err containing %q)", i, got[i], got[i].Err, want[i], want[i].Err)
		}
	}
}

func TestRead(t *testing.T) {
	keyer := urlnorm.NewKeyer(urlnorm.Overrides{OwnSite: []string{"blog.example.com"}})
	longURL := "http://example.com/" + strings.Repeat("x", 100)
	tests := []struct {
		name    string
		in      string
		opts    Options
		want    []Entry
		wantErr string
	}{
		{
			name: "text with BOM, CRLF, comments, blanks and spaces",
			in: "\ufeffhttp://www.Example.com/a\r\n\r\n# comment\r\n   # indented comment\r\n" +
				"  https://blog.example.com:443/x#frag  \r\n\thttp://cdn.example.com/?a=1,2\r\n",
			opts: Options{Keyer: keyer},
			want: []Entry{
				ok(1, "http://www.Example.com/a", "http://www.example.com/a", "www.example.com", "example.com"),
				ok(5, "https://blog.example.com:443/x#frag", "https://blog.example.com/x", "blog.example.com", "blog.example.com"),
				ok(6, "http://cdn.example.com/?a=1,2", "http://cdn.example.com/?a=1,2", "cdn.example.com", "example.com"),
			},
		},
		{
			name: "text bad lines keep their line numbers and reasons",
			in: "http://a.example.org/\nftp://www.example.net/file\nexample.com\n\nhttp://user:pw@example.com/\n" +
				"http://[::1/\nhttp://my_host.example.com/\nhttps://alice.github.io/x", // no final newline
			want: []Entry{
				ok(1, "http://a.example.org/", "http://a.example.org/", "a.example.org", "example.org"),
				bad(2, "ftp://www.example.net/file", "example.net", `scheme "ftp" is not http or https`),
				bad(3, "example.com", "", "no scheme"),
				bad(5, "http://user:pw@example.com/", "example.com", "credentials"),
				bad(6, "http://[::1/", "", "cannot parse"),
				bad(7, "http://my_host.example.com/", "", "not a valid IDN"),
				ok(8, "https://alice.github.io/x", "https://alice.github.io/x", "alice.github.io", "alice.github.io"),
			},
		},
		{
			name: "text line longer than MaxLineBytes but within the buffer",
			in:   "http://a.com/\n" + longURL + "\r\nhttp://b.com/\n",
			opts: Options{MaxLineBytes: 50},
			want: []Entry{
				ok(1, "http://a.com/", "http://a.com/", "a.com", "a.com"),
				bad(2, longURL, "", "line is 119 bytes, longer than the 50-byte limit"),
				ok(3, "http://b.com/", "http://b.com/", "b.com", "b.com"),
			},
		},
		{
			name: "text line longer than the read buffer",
			in:   "http://a.com/\nhttp://x.com/" + strings.Repeat("y", 200_000) + "\r\n#" + strings.Repeat("c", 100_000) + "\nhttp://b.com/",
			want: []Entry{
				ok(1, "http://a.com/", "http://a.com/", "a.com", "a.com"),
				bad(2, "http://x.com/"+strings.Repeat("y", RawPrefixBytes-13)+"...", "", "line is 200013 bytes, longer than the 65536-byte limit"),
				ok(4, "http://b.com/", "http://b.com/", "b.com", "b.com"), // the long comment on line 3 is skipped
			},
		},
		{
			name: "URL longer than urlnorm.MaxURLBytes",
			in:   "http://a.com/" + strings.Repeat("z", urlnorm.MaxURLBytes),
			want: []Entry{bad(1, "http://a.com/"+strings.Repeat("z", urlnorm.MaxURLBytes), "", "longer than the 8000-byte limit")},
		},
		{
			name:    "too many entries",
			in:      "http://a.com/\n# skip\nhttp://b.com/\nnot a url\nhttp://c.com/\n",
			opts:    Options{MaxEntries: 2},
			want:    []Entry{ok(1, "http://a.com/", "http://a.com/", "a.com", "a.com"), ok(3, "http://b.com/", "http://b.com/", "b.com", "b.com")},
			wantErr: "line 4: too many entries: the list has more than the limit of 2",
		},
		{
			name: "exactly MaxEntries is fine",
			in:   "http://a.com/\nhttp://b.com/\n",
			opts: Options{MaxEntries: 2},
			want: []Entry{ok(1, "http://a.com/", "http://a.com/", "a.com", "a.com"), ok(2, "http://b.com/", "http://b.com/", "b.com", "b.com")},
		},
		{name: "empty text", in: "", want: nil},
		{name: "only blanks and comments", in: "\n  \n# x\n", want: nil},
		{
			name: "csv header with url column, quoted and multi-line fields",
			in: "\ufeffid,name,URL,extra\r\n1,\"a, b\",http://www.example.com/?x=1,2\r\n" +
				"2,\"multi\nline\",\"http://example.org/a,b\"\r\n3,short\r\n4,empty,  ,x\r\n" +
				"# comment,line,http://skipped.com/\r\n5,ftp,ftp://example.net/\r\n",
			want: []Entry{
				ok(2, "http://www.example.com/?x=1", "http://www.example.com/?x=1", "www.example.com", "example.com"),
				ok(4, "http://example.org/a,b", "http://example.org/a,b", "example.org", "example.org"),
				bad(8, "ftp://example.net/", "example.net", "not http or https"),
			},
		},
		{
			name: "csv by name, no header: first column, first row is data",
			in:   "http://a.com/,x\nhttp://b.com/,y\n",
			opts: Options{Name: "LIST.CSV"},
			want: []Entry{ok(1, "http://a.com/", "http://a.com/", "a.com", "a.com"), ok(2, "http://b.com/", "http://b.com/", "b.com", "b.com")},
		},
		{
			name: "csv explicit, header-like first word is skipped",
			in:   "Website Link,comment\nhttp://a.com/,x\nbogus,y\n",
			opts: Options{Format: FormatCSV},
			want: []Entry{ok(2, "http://a.com/", "http://a.com/", "a.com", "a.com"), bad(3, "bogus", "", "no scheme")},
		},
		{
			name: "csv field longer than MaxLineBytes",
			in:   "url\n" + longURL + "\n",
			opts: Options{MaxLineBytes: 50},
			want: []Entry{bad(2, longURL, "", "field is 119 bytes, longer than the 50-byte limit")},
		},
		{
			name: "json strings, pretty-printed, with BOM",
			in:   "\ufeff[\n  \"http://a.com/\",\n\n  \" HTTP://B.com \" ,\n  \"mailto:x@y.z\"\n]\n",
			want: []Entry{
				ok(2, "http://a.com/", "http://a.com/", "a.com", "a.com"),
				ok(4, "HTTP://B.com", "http://b.com/", "b.com", "b.com"),
				bad(5, "mailto:x@y.z", "", `scheme "mailto"`),
			},
		},
		{
			name: "json objects and bad elements",
			in: `[{"url": "http://a.com/", "id": 1},` + "\n" + `{"id": 2},` + "\n" + `{"url": 3}, 42, null, ["http://x.com/"], true,` + "\n" +
				`{"URL": "http://b.com/\u00e4"}, "", "http://c.com/"]`,
			want: []Entry{
				ok(1, "http://a.com/", "http://a.com/", "a.com", "a.com"),
				bad(2, `{"id": 2}`, "", `JSON object has no "url" field`),
				bad(3, `{"url": 3}`, "", `JSON object's "url" field is a number, want a string`),
				bad(3, "42", "", "JSON array element is a number, want a string or an object"),
				bad(3, "null", "", "element is null"),
				bad(3, `["http://x.com/"]`, "", "element is an array"),
				bad(3, "true", "", "element is a boolean"),
				ok(4, "http://b.com/ä", "http://b.com/%C3%A4", "b.com", "b.com"),
				bad(4, "", "", "URL is empty"),
				ok(4, "http://c.com/", "http://c.com/", "c.com", "c.com"),
			},
		},
		{name: "json empty array", in: " [ ] ", want: nil},
		{name: "json top-level object", in: `{"url": "http://a.com/"}`, opts: Options{Format: FormatJSON}, wantErr: "top-level value is an object, want an array"},
		{name: "json top-level string", in: `"http://a.com/"`, opts: Options{Name: "x.json"}, wantErr: "top-level value is a string, want an array"},
		{name: "json empty", in: "  \n", opts: Options{Format: FormatJSON}, wantErr: "input is empty, want an array"},
		{
			name:    "json syntax error names the line",
			in:      "[\n\"http://a.com/\",\n\"http://b.com/\"\n\"http://c.com/\"]",
			want:    []Entry{ok(2, "http://a.com/", "http://a.com/", "a.com", "a.com"), ok(3, "http://b.com/", "http://b.com/", "b.com", "b.com")},
			wantErr: "line 4",
		},
		{name: "json truncated", in: "[\"http://a.com/\",\n", want: []Entry{ok(1, "http://a.com/", "http://a.com/", "a.com", "a.com")}, wantErr: "reading JSON"},
		{
			name:    "json data after the array",
			in:      "[\"http://a.com/\"]\n\n{}",
			want:    []Entry{ok(1, "http://a.com/", "http://a.com/", "a.com", "a.com")},
			wantErr: "line 3: unexpected an object after the array",
		},
		{name: "bad options: negative MaxEntries", in: "", opts: Options{MaxEntries: -1}, wantErr: "MaxEntries is -1"},
		{name: "bad options: negative MaxLineBytes", in: "", opts: Options{MaxLineBytes: -5}, wantErr: "MaxLineBytes is -5"},
		{name: "bad options: format", in: "", opts: Options{Format: Format(9)}, wantErr: "invalid Format Format(9)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := collect(t, tc.in, tc.opts)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			sameEntries(t, got, tc.want)
		})
	}
}

func TestTooManyEntriesIs(t *testing.T) {
	_, err := collect(t, "http://a.com/\nhttp://b.com/\n", Options{MaxEntries: 1})
	if !errors.Is(err, ErrTooManyEntries) {
		t.Fatalf("error %v does not wrap ErrTooManyEntries", err)
	}
}

func TestCallbackErrorAborts(t *testing.T) {
	stop := errors.New("stop here")
	calls := 0
	err := Read(strings.NewReader("http://a.com/\nhttp://b.com/\nhttp://c.com/\n"), Options{}, func(e Entry) error {
		calls++
		if e.Line == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !strings.Contains(err.Error(), "line 2") || calls != 2 {
		t.Fatalf("err %v after %d calls, want the callback error wrapped with line 2 after 2 calls", err, calls)
	}
	if err := Read(strings.NewReader(""), Options{}, nil); err == nil {
		t.Fatal("nil callback accepted")
	}
}

type failingReader struct {
	data string
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadErrorIsReturned(t *testing.T) {
	boom := errors.New("disk on fire")
	for _, f := range []Format{FormatText, FormatCSV, FormatJSON} {
		var n int
		err := Read(&failingReader{data: "[\"http://a.com/\",\n", err: boom}, Options{Format: f}, func(Entry) error { n++; return nil })
		if !errors.Is(err, boom) {
			t.Errorf("%v: error %v, want the read error wrapped", f, err)
		}
	}
}

func TestSniff(t *testing.T) {
	tests := []struct {
		name, in, file string
		want           Format
	}{
		{"plain list", "http://a.com/\nhttp://b.com/\n", "", FormatText},
		{"comma in query is not csv", "http://a.com/?a=1,2,3\n", "", FormatText},
		{"url header", "url\nhttp://a.com/\n", "", FormatCSV},
		{"url header not first", "  id , URL ,name\r\n1,http://a.com/,x\n", "", FormatCSV},
		{"quoted url header", "\"Url\",\"x\"\n", "", FormatCSV},
		{"header after blank lines", "\n\n  \nid,url\n", "", FormatCSV},
		{"urls header is not url", "urls,x\n", "", FormatText},
		{"json", "  \n [\"http://a.com/\"]", "", FormatJSON},
		{"json after BOM", "\ufeff[]", "", FormatJSON},
		{"csv after BOM", "\ufeffurl\n", "", FormatCSV},
		{"empty", "", "", FormatText},
		{"no newline", "url", "", FormatCSV},
		{"name csv wins", "[1]", "in.csv", FormatCSV},
		{"name json wins", "url\n", "dir.v2/in.JSON", FormatJSON},
		{"name txt wins", "url,x\n", "in.txt", FormatText},
		{"unknown extension sniffs", "url,x\n", "in.dat", FormatCSV},
		{"stdin", "[", "-", FormatJSON},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tc.in), 16)
			if got := sniff(br, tc.file); got != tc.want {
				t.Fatalf("sniff = %v, want %v", got, tc.want)
			}
			rest, _ := io.ReadAll(br)
			if string(rest) != tc.in {
				t.Fatalf("sniff consumed input: %q left of %q", rest, tc.in)
			}
		})
	}
}

// onceReader returns data in one Read and fails the test on any later Read.
type onceReader struct {
	t    *testing.T
	data []byte
	done bool
}

func (r *onceReader) Read(p []byte) (int, error) {
	if r.done {
		r.t.Error("sniff read past the first line")
		return 0, io.ErrUnexpectedEOF
	}
	r.done = true
	return copy(p, r.data), nil
}

func TestSniffReadsOnlyFirstLine(t *testing.T) {
	br := bufio.NewReaderSize(&onceReader{t: t, data: []byte("id,url\n1,")}, 1<<16)
	if got := sniff(br, ""); got != FormatCSV {
		t.Fatalf("sniff = %v, want csv", got)
	}
}

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in      string
		want    Format
		wantErr bool
	}{
		{"auto", FormatAuto, false}, {"text", FormatText, false}, {" CSV ", FormatCSV, false},
		{"Json", FormatJSON, false}, {"", 0, true}, {"xml", 0, true}, {"jsonl", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseFormat(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.in)) {
			t.Errorf("ParseFormat(%q) error %q does not name the value", tc.in, err)
		}
		if err == nil && got.String() != strings.ToLower(strings.TrimSpace(tc.in)) {
			t.Errorf("Format(%d).String() = %q", got, got.String())
		}
	}
}

func FuzzRead(f *testing.F) {
	seeds := []string{
		"http://a.com/\r\n# c\n\nftp://b/\n", "\ufeffurl,x\n\"http://a.com/\",1\n", "[\"http://a.com/\", {\"url\":\"https://b.org\"}, 1]",
		"id,url\n1,\"multi\nline\"\n", "[\n]", "{}", "http://" + strings.Repeat("a", 300) + ".com/\n", "[\"\\u0000\"]",
	}
	for _, s := range seeds {
		for fm := range 4 {
			f.Add([]byte(s), uint8(fm))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, fm uint8) {
		format := Format(fm % 4)
		prevLine := 0
		textual := format == FormatText || (format == FormatAuto && sniff(bufio.NewReader(bytes.NewReader(data)), "") == FormatText)
		_ = Read(bytes.NewReader(data), Options{Format: format, MaxLineBytes: 200, MaxEntries: 1000}, func(e Entry) error {
			if e.Line < 1 || e.Line < prevLine || (textual && e.Line == prevLine) {
				t.Fatalf("line %d after line %d (format %v)", e.Line, prevLine, format)
			}
			prevLine = e.Line
			if e.Err != "" {
				if e.URL != "" || e.Host != "" {
					t.Fatalf("invalid entry %+v has URL or Host", e)
				}
				return nil
			}
			u, err := urlnorm.Normalize(e.URL)
			if err != nil || u.String() != e.URL {
				t.Fatalf("entry URL %q re-normalizes to %v, %v", e.URL, u, err)
			}
			if e.Host != u.Hostname() || e.Domain != (*urlnorm.Keyer)(nil).Key(e.Host) || e.Domain == "" {
				t.Fatalf("entry %+v: host/domain inconsistent", e)
			}
			return nil
		})
	})
}

// benchList returns a text list of n URLs over many hosts and domains, with
// comments, blank lines and an invalid URL every 1000 lines.
func benchList(n int) []byte {
	var b bytes.Buffer
	b.Grow(n * 60)
	for i := range n {
		switch {
		case i%1000 == 999:
			fmt.Fprintf(&b, "ftp://files%d.example.net/f\n", i)
		case i%3 == 0:
			fmt.Fprintf(&b, "https://www%d.site%d.example.com/path/%d?q=%d\r\n", i%50, i%10_000, i, i%7)
		case i%3 == 1:
			fmt.Fprintf(&b, "  http://Shop%d.Example%d.co.uk:80/item/%d#top\n", i%20, i%5_000, i)
		default:
			fmt.Fprintf(&b, "https://user%d.github.io/repo/%d\n", i%30_000, i)
		}
	}
	return b.Bytes()
}

func BenchmarkReadText(b *testing.B) {
	const n = 1_000_000
	data := benchList(n)
	k := urlnorm.NewKeyer(urlnorm.Overrides{Shared: map[string]string{"githubusercontent.com": "github.com"}})
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		valid, invalid := 0, 0
		err := Read(bytes.NewReader(data), Options{Keyer: k}, func(e Entry) error {
			if e.Err == "" {
				valid++
			} else {
				invalid++
			}
			return nil
		})
		if err != nil || valid+invalid != n || invalid != n/1000 {
			b.Fatalf("err %v, %d valid, %d invalid", err, valid, invalid)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/url")
}
