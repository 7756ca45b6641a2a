package pipeline

import (
	"reflect"
	"strings"
	"testing"
)

// normalizePart makes the values of a decoded part comparable with
// reflect.DeepEqual where JSON cannot tell them apart: times in UTC (a
// decoded offset gets a fresh *time.Location) and empty redirect lists nil
// (they are omitted when empty).
func normalizePart(p *part) {
	for i := range p.results {
		r := &p.results[i]
		r.CheckedAt = r.CheckedAt.UTC()
		if len(r.Redirects) == 0 {
			r.Redirects = nil
		}
	}
}

// FuzzDecodePart: decodePart never panics on any input, and whatever it
// decodes survives encode then decode unchanged.
func FuzzDecodePart(f *testing.F) {
	for _, s := range []string{
		"",
		"\n\n",
		`{"n":3}`,
		`{"r":{"line":1,"url":"https://example.com/","domain":"example.com","class":"ok","status":200,"latency_ms":1.5,"attempts":1,"checked_at":"2025-01-02T03:04:05.123Z"}}`,
		`{"r":{"line":2,"url":"x","class":"redirect","redirects":[],"checked_at":"2025-01-02T03:04:05+02:00"}}` + "\n" + `{"q":{"d":"a.example","s":429,"t":true,"at":1700000000000}}`,
		`{"r":{"line":1},"q":{"d":"x"},"n":1}`,
		"{\"r\":{\"url\":\"\xff\"}}\r\n{\"n\":-2}",
		`{"r":null,"q":null}`,
		`{"n":1e3}`,
		`[]`,
		`{"r":{"latency_ms":1e400}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p1, err := collectPart(t, data)
		if err != nil {
			if !strings.Contains(err.Error(), "line ") && !strings.Contains(err.Error(), "too long") {
				t.Fatalf("decodePart error %q names no line", err)
			}
			return
		}
		// encode writes the retry count only when positive, as a part
		// never counts negative retries.
		p1.retries = max(p1.retries, 0)
		b, err := p1.encode()
		if err != nil {
			return // a decoded value encoding cannot write (a time past year 9999)
		}
		p2, err := collectPart(t, b)
		if err != nil {
			t.Fatalf("decoding an encoded part: %v\n%s", err, b)
		}
		normalizePart(p1)
		normalizePart(p2)
		if !reflect.DeepEqual(p1, p2) {
			t.Fatalf("round trip changed the part:\n got %+v\nwant %+v\nencoded %s", *p2, *p1, b)
		}
	})
}

// FuzzJobForKey: JobForKey never panics, is deterministic, gives valid job
// IDs, ignores quotes around the ETag, and is ok exactly for non-folder
// keys under the inbox.
func FuzzJobForKey(f *testing.F) {
	for _, s := range [][2]string{
		{"inbox/jobs/j-0123456789abcdef.txt", `"abc"`},
		{"inbox/jobs/abcdef", ""},
		{"inbox/jobs/sub/x.csv", "e"},
		{"inbox/list.txt", `"d41d8cd98f00b204e9800998ecf8427e"`},
		{"inbox/folder/", ""},
		{"inbox/", `""`},
		{"results/x", "e"},
		{"inbox/jobs/.json", "\x00"},
		{"inbox/\xff\xfe", `"`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, key, etag string) {
		id, source, ok := JobForKey(key, etag)
		wantOK := strings.HasPrefix(key, InboxPrefix) && !strings.HasSuffix(key, "/")
		if ok != wantOK {
			t.Fatalf("JobForKey(%q) ok = %v, want %v", key, ok, wantOK)
		}
		id2, source2, ok2 := JobForKey(key, etag)
		if id2 != id || source2 != source || ok2 != ok {
			t.Fatalf("JobForKey(%q, %q) not deterministic: %q %q then %q %q", key, etag, id, source, id2, source2)
		}
		if !ok {
			if id != "" || source != "" {
				t.Fatalf("JobForKey(%q) = %q, %q with ok false", key, id, source)
			}
			return
		}
		if !ValidJobID(id) {
			t.Fatalf("JobForKey(%q, %q) = %q: not a valid job ID", key, etag, id)
		}
		switch source {
		case "api":
			rest := strings.TrimPrefix(key, JobKeyPrefix)
			if !strings.HasPrefix(key, JobKeyPrefix) || !strings.HasPrefix(rest, id) || strings.Contains(rest, "/") {
				t.Fatalf("JobForKey(%q) = api job %q, not the key's name", key, id)
			}
		case "drop":
			if !strings.HasPrefix(id, "d-") || len(id) != 22 {
				t.Fatalf("JobForKey(%q) = drop job %q, want d- and 20 hex digits", key, id)
			}
			if q, _, _ := JobForKey(key, `"`+etag+`"`); q != id {
				t.Fatalf("JobForKey(%q): quoted ETag gives %q, bare %q", key, q, id)
			}
		default:
			t.Fatalf("JobForKey(%q) source %q, want api or drop", key, source)
		}
	})
}
