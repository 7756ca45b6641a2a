package simweb

import (
	"fmt"
	"html"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// actionKind is what a path asks the web to do.
type actionKind int

const (
	actOK       actionKind = iota // 200 with a small HTML body
	actStatus                     // answer status
	actRedirect                   // answer status with Location: location
	actTo                         // 302 to scheme://toHost/toRest
	actHang                       // never answer
	actReset                      // reset the connection
	actBot                        // 403 with cf-mitigated: challenge
	actSlow                       // sleep delay, then 200
)

// action is the parsed meaning of a URL path.
type action struct {
	kind     actionKind
	status   int           // actStatus, actRedirect
	location string        // actRedirect: an absolute path
	toHost   string        // actTo
	toRest   string        // actTo: the path after the host, without leading "/"
	delay    time.Duration // actSlow
	why      string        // actStatus 400: what was malformed
}

const (
	maxRedirectHops = 1 << 20
	maxSlow         = 24 * time.Hour
)

// route parses a URL path into an action. It never fails: a path not starting
// with "/" or with a malformed number becomes a 400 action whose why names the
// problem, and an unknown path 404.
func route(path string) action {
	bad := func(format string, args ...any) action {
		return action{kind: actStatus, status: http.StatusBadRequest, why: fmt.Sprintf(format, args...)}
	}
	if !strings.HasPrefix(path, "/") {
		return bad("path %q does not start with /", path)
	}
	segs := strings.Split(path[1:], "/")
	switch segs[0] {
	case "", "ok":
		if segs[0] == "" && len(segs) > 1 {
			break // "//..." is not the root
		}
		return action{kind: actOK}
	case "status":
		if len(segs) < 2 {
			return bad("/status/{code}: missing code")
		}
		code, err := strconv.Atoi(segs[1])
		if err != nil || code < 200 || code > 599 {
			return bad("/status/{code}: code %q is not an integer in 200..599", segs[1])
		}
		return action{kind: actStatus, status: code}
	case "redirect":
		if len(segs) < 2 {
			return bad("/redirect/{n}: missing n")
		}
		n, err := strconv.Atoi(segs[1])
		if err != nil || n < 0 || n > maxRedirectHops || strconv.Itoa(n) != segs[1] {
			return bad("/redirect/{n}: n %q is not a canonical integer in 0..%d", segs[1], maxRedirectHops)
		}
		if n == 0 {
			return action{kind: actOK}
		}
		rest := append([]string{"", "redirect", strconv.Itoa(n - 1)}, segs[2:]...)
		return action{kind: actRedirect, status: http.StatusMovedPermanently, location: strings.Join(rest, "/")}
	case "to":
		if len(segs) < 2 || segs[1] == "" {
			return bad("/to/{host}/{rest}: missing host")
		}
		h := segs[1]
		for _, c := range h {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._:[]", c)) {
				return bad("/to/{host}: host %q has invalid character %q", h, c)
			}
		}
		return action{kind: actTo, status: http.StatusFound, toHost: h, toRest: strings.Join(segs[2:], "/")}
	case "loop":
		next := append([]string(nil), segs...)
		if len(next) == 1 {
			next = append(next, "b")
		} else if next[len(next)-1] == "b" {
			next[len(next)-1] = "a"
		} else {
			next[len(next)-1] = "b"
		}
		return action{kind: actRedirect, status: http.StatusFound, location: "/" + strings.Join(next, "/")}
	case "hang":
		return action{kind: actHang}
	case "reset":
		return action{kind: actReset}
	case "bot":
		return action{kind: actBot}
	case "slow":
		if len(segs) < 2 {
			return bad("/slow/{ms}: missing ms")
		}
		ms, err := strconv.ParseInt(segs[1], 10, 64)
		if err != nil || ms < 0 || ms > maxSlow.Milliseconds() {
			return bad("/slow/{ms}: ms %q is not an integer in 0..%d", segs[1], maxSlow.Milliseconds())
		}
		return action{kind: actSlow, delay: time.Duration(ms) * time.Millisecond}
	}
	return action{kind: actStatus, status: http.StatusNotFound}
}

// ServeHTTP implements http.Handler: the limit check, latency and path
// behaviour described on Web. It is what both listeners serve.
func (w *Web) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	at := w.clk.Now()
	name := normalizeHost(r.Host)
	rec := Request{At: at, Host: name, Method: r.Method, Path: r.URL.Path}

	w.mu.Lock()
	h, known := w.hosts[name]
	if !known {
		w.log = append(w.log, rec)
		w.log[len(w.log)-1].Status = http.StatusMisdirectedRequest
		w.mu.Unlock()
		w.write(rw, http.StatusMisdirectedRequest, fmt.Sprintf("no simulated host %q", name))
		return
	}
	rec.Domain = h.Domain
	ds := w.domainLocked(h.Domain)
	ds.inFlight++
	ds.stats.Requests++
	rec.InFlight = ds.inFlight
	ds.stats.PeakInFlight = max(ds.stats.PeakInFlight, ds.inFlight)
	overCap := ds.limit.MaxConcurrent > 0 && ds.inFlight > ds.limit.MaxConcurrent
	var (
		admitted = true
		wait     time.Duration
		mode     = ds.limit.Mode
	)
	if overCap {
		ds.stats.Violations++
	} else if admitted, wait = ds.bucket.take(at); !admitted {
		ds.stats.Throttled++
	}
	w.mu.Unlock()

	// finish releases the in-flight slot and logs the request. It runs before
	// the response leaves the server (the body is buffered until ServeHTTP
	// returns, and /reset calls it before closing), so a client never sees an
	// answer while the server still counts the request in flight.
	finished := false
	finish := func(status int) {
		if finished {
			return
		}
		finished = true
		rec.Status = status
		w.mu.Lock()
		ds.inFlight--
		w.log = append(w.log, rec)
		w.mu.Unlock()
	}
	// A request that ends without an answer (client gone, web closing) is
	// logged with status 0 and aborted with http.ErrAbortHandler, so the
	// server closes the connection instead of sending an implicit empty 200.
	defer finish(0)

	switch {
	case overCap:
		rw.Header().Set("Retry-After", "1")
		finish(http.StatusServiceUnavailable)
		w.write(rw, http.StatusServiceUnavailable, "too many concurrent requests")
		return
	case !admitted:
		status := http.StatusTooManyRequests
		switch mode {
		case Throttle429Seconds:
			rw.Header().Set("Retry-After", strconv.FormatInt(retryAfterSeconds(wait), 10))
		case Throttle429Date:
			rw.Header().Set("Retry-After", retryAfterDate(at, wait))
		case Throttle503:
			status = http.StatusServiceUnavailable
			rw.Header().Set("Retry-After", strconv.FormatInt(retryAfterSeconds(wait), 10))
		}
		finish(status)
		w.write(rw, status, "rate limit exceeded")
		return
	}

	if h.Latency > 0 {
		if err := w.clk.Sleep(r.Context(), h.Latency); err != nil {
			panic(http.ErrAbortHandler) // client gone: logged with status 0
		}
	}
	if h.HeadHostile && r.Method == http.MethodHead {
		rw.Header().Set("Allow", "GET")
		finish(http.StatusMethodNotAllowed)
		w.write(rw, http.StatusMethodNotAllowed, "HEAD not allowed")
		return
	}

	a := route(r.URL.Path)
	w.mu.Lock()
	if st, set := w.status[name+r.URL.Path]; set {
		a = action{kind: actStatus, status: st}
	}
	w.mu.Unlock()
	switch a.kind {
	case actOK:
		finish(http.StatusOK)
		w.write(rw, http.StatusOK, "ok")
	case actStatus:
		msg := http.StatusText(a.status)
		if a.why != "" {
			msg = a.why
		}
		finish(a.status)
		w.write(rw, a.status, msg)
	case actRedirect:
		loc := a.location
		if r.URL.RawQuery != "" {
			loc += "?" + r.URL.RawQuery
		}
		rw.Header().Set("Location", loc)
		finish(a.status)
		w.write(rw, a.status, "moved to "+loc)
	case actTo:
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		loc := scheme + "://" + a.toHost + "/" + a.toRest
		if r.URL.RawQuery != "" {
			loc += "?" + r.URL.RawQuery
		}
		rw.Header().Set("Location", loc)
		finish(a.status)
		w.write(rw, a.status, "moved to "+loc)
	case actHang:
		wallCap := time.NewTimer(10 * time.Minute)
		defer wallCap.Stop()
		select {
		case <-r.Context().Done():
			panic(http.ErrAbortHandler)
		case <-w.done:
			panic(http.ErrAbortHandler)
		case <-wallCap.C:
			finish(http.StatusGatewayTimeout)
			w.write(rw, http.StatusGatewayTimeout, "hung for 10 minutes")
		}
	case actReset:
		w.reset(rw, finish)
	case actBot:
		rw.Header().Set("cf-mitigated", "challenge")
		finish(http.StatusForbidden)
		w.write(rw, http.StatusForbidden, "Just a moment...")
	case actSlow:
		if err := w.clk.Sleep(r.Context(), a.delay); err != nil {
			panic(http.ErrAbortHandler)
		}
		finish(http.StatusOK)
		w.write(rw, http.StatusOK, "slow ok")
	}
}

// reset hijacks the connection and closes it with SO_LINGER 0, so the peer
// gets a TCP RST instead of a response. finish(0) runs before the close.
func (w *Web) reset(rw http.ResponseWriter, finish func(int)) {
	conn, _, err := http.NewResponseController(rw).Hijack()
	if err != nil {
		finish(http.StatusInternalServerError)
		w.write(rw, http.StatusInternalServerError, "cannot hijack: "+err.Error())
		return
	}
	raw := conn
	if tc, ok := conn.(interface{ NetConn() net.Conn }); ok {
		raw = tc.NetConn()
	}
	if tcp, ok := raw.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	finish(0)
	_ = raw.Close()
}

// write sends status with a Date header from the clock and, except for HEAD
// (which the server strips) and for 204 and 304 (which have no content,
// RFC 9110 §15.3.5 and §15.4.5), a small HTML body saying msg.
func (w *Web) write(rw http.ResponseWriter, status int, msg string) {
	hd := rw.Header()
	hd.Set("Date", w.clk.Now().UTC().Format(http.TimeFormat))
	if status == http.StatusNoContent || status == http.StatusNotModified {
		rw.WriteHeader(status)
		return
	}
	body := "<!doctype html><html><head><title>" + strconv.Itoa(status) + "</title></head><body><p>" +
		html.EscapeString(msg) + "</p></body></html>\n"
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	rw.WriteHeader(status)
	_, _ = rw.Write([]byte(body))
}
