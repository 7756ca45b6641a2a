package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommandExitCodes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/missing") {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	okList := filepath.Join(dir, "ok.txt")
	if err := os.WriteFile(okList, []byte("# two good URLs\n"+srv.URL+"/a\n"+srv.URL+"/b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	common := []string{"-out", out, "-no-rate-cache", "-quiet", "-allow-private", "-rate", "50"}
	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string
		stderr string
	}{
		{"no command", nil, "", 2, "", "Usage:"},
		{"unknown command", []string{"frobnicate"}, "", 2, "", `unknown command "frobnicate"`},
		{"version", []string{"version"}, "", 0, "urlcheck ", ""},
		{"help", []string{"help"}, "", 0, "urlcheck run", ""},
		{"help run lists flags", []string{"help", "run"}, "", 0, "-per-domain", ""},
		{"run without a file", []string{"run"}, "", 2, "", "one FILE"},
		{"unreadable file", []string{"run", filepath.Join(dir, "nope.txt")}, "", 2, "", "cannot read the list"},
		{"bad flag value", []string{"run", "-rate", "0", okList}, "", 2, "", "-rate must be above 0"},
		{"bad format", []string{"run", "-format", "xml", okList}, "", 2, "", "-format"},
		{"all ok", append(append([]string{"run"}, common...), okList), "", 0, "Checked 2 lines", ""},
		{"a broken URL from stdin", append(append([]string{"run"}, common...), "-"), srv.URL + "/missing\nnot a url\n", 1, "First broken URLs", ""},
		{"bad -connect-to", []string{"run", "-connect-to", "localhost", okList}, "", 2, "", "-connect-to wants IP:PORT"},
		{"-connect-to sends made-up names to the server", append(append([]string{"run"}, common...), "-connect-to", strings.TrimPrefix(srv.URL, "http://"), "-"),
			"http://made-up.example/a\nhttp://other.example/b\n", 0, "Checked 2 lines", ""},
		{"private targets refused by default", []string{"run", "-out", out, "-no-rate-cache", "-quiet", okList}, "", 1, "forbidden_target", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, strings.NewReader(tc.stdin), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
				t.Fatalf("stdout %q, stderr %q; want them to contain %q and %q", stdout.String(), stderr.String(), tc.stdout, tc.stderr)
			}
		})
	}
}
