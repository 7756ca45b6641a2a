package report

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// EnvChromium names the Chromium binary for the browser test; without it,
// "chromium" is looked up on PATH, and the test is skipped if neither is
// found (infra/local/chromium.sh install provides one).
const EnvChromium = "URLCHECK_CHROMIUM"

// screenshotPath is where the browser test keeps its screenshot, relative
// to the repository root (out/ is git-ignored).
const screenshotPath = "out/test-artifacts/report.png"

func chromiumBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(EnvChromium); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s=%s: %v", EnvChromium, p, err)
		}
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Skipf("no Chromium: set %s or put chromium on PATH (infra/local/chromium.sh install)", EnvChromium)
	}
	return p
}

// recordingProxy is an HTTP proxy that answers every request with 502 and
// records it; Chromium is pointed at it so that any request the page makes
// (loopback included) shows up here instead of leaving the machine.
type recordingProxy struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newRecordingProxy(t *testing.T) *recordingProxy {
	p := &recordingProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Method+" "+r.Host+r.URL.RequestURI())
		p.mu.Unlock()
		http.Error(w, "no network in tests", http.StatusBadGateway)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *recordingProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// headless runs Chromium on the file page with extra flags, all network
// traffic sent to proxy and every host name unresolvable, and returns its
// stdout.
func headless(t *testing.T, bin, page string, proxy *recordingProxy, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--disable-default-apps", "--disable-domain-reliability", "--metrics-recording-only", "--no-pings", "--disable-breakpad",
		// Chromium's own background traffic (network time, search preconnect,
		// Google account and AI-mode lookups) would otherwise reach the proxy:
		"--disable-features=NetworkTimeServiceQuerying,PreconnectToSearch,OptimizationHints,MediaRouter,Translate",
		"--gaia-url=http://127.0.0.1:9", "--google-base-url=http://127.0.0.1:9",
		"--user-data-dir=" + t.TempDir(),
		"--proxy-server=" + proxy.URL, "--proxy-bypass-list=<-loopback>",
		"--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
	}
	args = append(append(args, extra...), "file://"+page)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // keep Chromium's crash and cache dirs out of the real home
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s", bin, strings.Join(extra, " "), err, lastLines(stderr.String(), 20))
	}
	return stdout.Bytes()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// repoRoot returns the directory holding go.mod above the test's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// TestChromiumRendersReport renders the fixture report in headless Chromium
// with the network cut off, checks the DOM the browser built, and keeps a
// screenshot under out/test-artifacts.
func TestChromiumRendersReport(t *testing.T) {
	bin := chromiumBinary(t)
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, FileName)
	var buf bytes.Buffer
	if err := Write(&buf, fixture()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	proxy := newRecordingProxy(t)

	t.Run("control: the proxy sees a page's requests", func(t *testing.T) {
		// Without this, "the proxy saw nothing" could mean the flags are wrong.
		ctl := newRecordingProxy(t)
		ctlPage := filepath.Join(dir, "control.html")
		if err := os.WriteFile(ctlPage, []byte(`<!DOCTYPE html><title>c</title><img src="http://network.invalid/x.png">`), 0o644); err != nil {
			t.Fatal(err)
		}
		headless(t, bin, ctlPage, ctl, "--dump-dom")
		if got := ctl.requests(); len(got) == 0 {
			t.Fatal("the recording proxy saw no request from a page with a remote image; the isolation flags are not effective")
		}
	})

	t.Run("DOM", func(t *testing.T) {
		start := time.Now()
		dom := headless(t, bin, page, proxy, "--dump-dom")
		t.Logf("chromium --dump-dom took %v", time.Since(start).Round(time.Millisecond))
		doc, err := html.Parse(bytes.NewReader(dom))
		if err != nil {
			t.Fatalf("parsing the dumped DOM: %v", err)
		}
		byID := map[string]*html.Node{}
		walk(doc, func(n *html.Node) {
			if id := attr(n, "id"); id != "" {
				byID[id] = n
			}
		})
		for _, id := range []string{"class-table", "broken-table", "domain-table", "timeline-chart", "timeline-table", "diff", "diff-newly-broken", "diff-still-broken"} {
			if byID[id] == nil {
				t.Errorf("the browser's DOM has no element #%s", id)
			}
		}
		chart := byID["timeline-chart"]
		if chart == nil {
			t.FailNow()
		}
		if chart.Data != "svg" || chart.Namespace != "svg" {
			t.Errorf("#timeline-chart is <%s> in namespace %q, want an SVG element", chart.Data, chart.Namespace)
		}
		var polylines, dashed int
		var legend []string
		walk(chart, func(n *html.Node) {
			switch {
			case n.Data == "polyline" && n.Namespace == "svg":
				polylines++
				if len(strings.Fields(attr(n, "points"))) < 2 {
					t.Errorf("polyline with fewer than 2 points: %q", attr(n, "points"))
				}
			case n.Data == "line" && attr(n, "stroke-dasharray") != "":
				dashed++
			case n.Data == "text":
				legend = append(legend, text(n))
			}
		})
		if polylines != 5 {
			t.Errorf("%d polylines in the chart, want 5 (one per timeline domain)", polylines)
		}
		if dashed != 4 { // delta.example has no learned rate
			t.Errorf("%d dashed learned-rate lines, want 4", dashed)
		}
		for _, want := range []string{"alpha.example (learned 6/s)", "bravo.example (learned 4.5/s)", "delta.example", "echo.example (learned 1.5/s)", "requests/s", "time since start"} {
			found := false
			for _, l := range legend {
				found = found || l == want
			}
			if !found {
				t.Errorf("chart text %q missing; chart texts: %q", want, legend)
			}
		}
		// The hostile URL stayed text: the browser built no script element.
		walk(doc, func(n *html.Node) {
			if n.Type == html.ElementNode && n.Data == "script" {
				t.Errorf("the browser's DOM has a <script> element: %q", text(n))
			}
		})
		if bt := byID["broken-table"]; bt != nil && !strings.Contains(text(bt), `https://evil.example/<script>alert("x")</script>?a=1&b=2`) {
			t.Error("the broken table does not show the hostile URL as text")
		}
		rows := 0
		if bt := byID["broken-table"]; bt != nil {
			walk(bt, func(n *html.Node) {
				if n.Data == "tr" {
					rows++
				}
			})
		}
		if rows != 7 { // header + 6 broken lines
			t.Errorf("broken table has %d rows, want 7", rows)
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		shot := filepath.Join(repoRoot(t), screenshotPath)
		if err := os.MkdirAll(filepath.Dir(shot), 0o755); err != nil {
			t.Fatal(err)
		}
		_ = os.Remove(shot)
		start := time.Now()
		headless(t, bin, page, proxy, "--screenshot="+shot, "--window-size=1280,2000", "--hide-scrollbars")
		t.Logf("chromium --screenshot took %v; kept %s", time.Since(start).Round(time.Millisecond), shot)
		f, err := os.Open(shot)
		if err != nil {
			t.Fatalf("no screenshot: %v", err)
		}
		defer f.Close()
		img, err := png.Decode(f)
		if err != nil {
			t.Fatalf("screenshot is not a PNG: %v", err)
		}
		if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 2000 {
			t.Errorf("screenshot is %dx%d, want 1280x2000", b.Dx(), b.Dy())
		}
		// Something was drawn: the page is not one flat colour.
		colours := map[[4]uint32]bool{}
		for y := 0; y < img.Bounds().Dy() && len(colours) < 50; y += 7 {
			for x := 0; x < img.Bounds().Dx() && len(colours) < 50; x += 7 {
				r, g, b, a := img.At(x, y).RGBA()
				colours[[4]uint32{r, g, b, a}] = true
			}
		}
		if len(colours) < 10 {
			t.Errorf("screenshot has only %d distinct colours; the page looks blank", len(colours))
		}
	})

	if got := proxy.requests(); len(got) != 0 {
		t.Errorf("the report made %d network requests, want none: %q", len(got), got)
	}
}

func walk(n *html.Node, fn func(*html.Node)) {
	fn(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return strings.TrimSpace(b.String())
}
