package results

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadJSONL(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    []int // lines of the results read
		wantErr string
	}{
		{"empty file", "", nil, ""},
		{"two results", `{"line":2,"url":"u","class":"ok"}` + "\n" + `{"line":1,"class":"dns"}` + "\n", []int{2, 1}, ""},
		{"no final newline", `{"line":3,"class":"ok"}`, []int{3}, ""},
		{"blank and CRLF lines", "\r\n" + `{"line":4,"class":"ok"}` + "\r\n\n  \n", []int{4}, ""},
		{"unknown field ignored", `{"line":5,"class":"ok","extra":true}`, []int{5}, ""},
		{"long line", `{"line":6,"class":"ok","url":"` + strings.Repeat("a", 200_000) + `"}`, []int{6}, ""},
		{"bad json names line", `{"line":1,"class":"ok"}` + "\n" + `{"line":2,`, nil, "line 2:"},
		{"not an object", "null\n", nil, `line 1: want a JSON object, got "null"`},
		{"array", "[1]\n", nil, "line 1: want a JSON object"},
		{"trailing data", `{"line":1} {"line":2}`, nil, "line 1: invalid character"},
		{"wrong type", `{"line":"one"}`, nil, "line 1: json: cannot unmarshal string"},
		{"bad time", `{"line":1,"checked_at":"yesterday"}`, nil, "line 1:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.jsonl")
			if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ReadJSONL(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("error = %v, want one naming %s and containing %q", err, path, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var lines []int
			for _, r := range got {
				lines = append(lines, r.Line)
			}
			if len(lines) != len(tc.want) {
				t.Fatalf("lines = %v, want %v", lines, tc.want)
			}
			for i := range lines {
				if lines[i] != tc.want[i] {
					t.Fatalf("lines = %v, want %v", lines, tc.want)
				}
			}
		})
	}
	if _, err := ReadJSONL(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("missing file error = %v, want one naming the file", err)
	}
}

// FuzzReadJSONL checks that decoding never panics and that whatever decodes
// re-encodes to JSON that decodes to the same encoding (round trip).
func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte(`{"line":1,"url":"https://a.com/","domain":"a.com","class":"ok","status":200,"latency_ms":1.5,"attempts":1,"checked_at":"2025-03-01T12:00:00.000000007Z"}` + "\n"))
	f.Add([]byte(`{"line":2,"class":"redirect","redirects":["301 https://b.com/"],"final_url":"https://b.com/"}` + "\n\n"))
	f.Add([]byte("{}\n{\"line\":-1}\r\n"))
	f.Add([]byte(`{"line":1,"error":"a\nb\u0000\"c"}`))
	f.Add([]byte("null"))
	f.Add([]byte("{\"line\":1e400}"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeJSONL(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, r := range got {
			var b1, b2 bytes.Buffer
			jl, err := encodeRecord(&b1, r)
			if err != nil {
				continue // e.g. a time JSON cannot hold; not a decoding bug
			}
			back, err := decodeJSONL(bytes.NewReader(b1.Bytes()[:jl]))
			if err != nil || len(back) != 1 {
				t.Fatalf("re-decoding %q: %v, %d results", b1.Bytes()[:jl], err, len(back))
			}
			if _, err := encodeRecord(&b2, back[0]); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
				t.Fatalf("round trip changed record:\n%q\n%q", b1.Bytes(), b2.Bytes())
			}
		}
	})
}
