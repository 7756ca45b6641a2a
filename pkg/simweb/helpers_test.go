package simweb

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/urlcheck/urlcheck/pkg/clock"
)

// epoch has a sub-second part so that HTTP-date rounding is exercised.
var epoch = time.Date(2025, 3, 1, 12, 0, 0, 300_000_000, time.UTC)

// manualClock is a clock that moves only when told to; Sleep advances it
// instantly by the requested duration, so latency and /slow cost no wall time.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newManualClock() *manualClock { return &manualClock{now: epoch} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *manualClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Advance(d)
	return nil
}

func (c *manualClock) NewTimer(d time.Duration) clock.Timer {
	c.Advance(d)
	t := &manualTimer{c: make(chan time.Time, 1)}
	t.c <- c.Now()
	return t
}

type manualTimer struct{ c chan time.Time }

func (t *manualTimer) C() <-chan time.Time { return t.c }
func (t *manualTimer) Stop() bool          { return false }

// startWeb starts w and closes it when the test ends.
func startWeb(t testing.TB, w *Web) {
	t.Helper()
	if err := w.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

// rawClient does not follow redirects.
func rawClient(t testing.TB, w *Web) *http.Client {
	tr := w.Transport()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// do sends one request and returns the response with its body read.
func do(t testing.TB, c *http.Client, method, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatalf("NewRequest %s %s: %v", method, url, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var b []byte
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			break
		}
	}
	return resp, string(b)
}

// inFlight returns the domain's current requests in flight.
func (w *Web) inFlightOf(domain string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ds := w.domains[domain]; ds != nil {
		return ds.inFlight
	}
	return 0
}

// waitFor polls cond (goroutine progress, not time) for up to 5 s of wall time.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Microsecond)
	}
}
