package eventsource

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// MaxRequestPayload is API Gateway's request payload limit: 10 MB
// (10 × 2^20 bytes). Larger request bodies get 413.
const MaxRequestPayload = 10 << 20

// APIHandler is a Lambda handler behind an API Gateway HTTP API (payload
// format 2.0).
type APIHandler func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// HTTP returns an http.Handler that emulates an API Gateway HTTP API whose
// routes all integrate h (Lambda proxy integration, payload format 2.0).
//
// routes are API Gateway route keys: "METHOD /path", where METHOD is an HTTP
// method or ANY and path segments may be path variables ("{id}") or, as the
// last segment, a greedy path variable ("{proxy+}"); or "$default", which
// catches every request no other route matches. A request is matched
// against its escaped path, preferring (segment by segment from the left) a
// literal segment to a variable and a variable to a greedy variable, then a
// specific method to ANY. Path parameter values are URL-decoded. A request
// that matches no route gets 404 {"message":"Not Found"}. HTTP panics if a
// route key is malformed (like http.ServeMux with a bad pattern).
//
// The event: Version "2.0"; RouteKey; RawPath (escaped path);
// RawQueryString; QueryStringParameters (decoded, repeated keys joined by
// ","); Headers (lower-case names, repeated headers joined by ",", plus
// host, x-forwarded-for, x-forwarded-port and x-forwarded-proto; the cookie
// header is moved to Cookies); PathParameters; Body, base64-encoded with
// IsBase64Encoded unless the Content-Type is textual (text/*,
// application/json, application/*+json, application/xml,
// application/*+xml, application/javascript,
// application/x-www-form-urlencoded; an approximation of API Gateway, which
// also base64-encodes bodies without a Content-Type); RequestContext with
// HTTP.{Method, Path (decoded), Protocol, SourceIP, UserAgent}, a random
// RequestID, Stage "$default", Time and TimeEpoch (ms), DomainName and
// DomainPrefix from the Host, APIID "local", AccountID "000000000000".
// Request bodies over MaxRequestPayload get 413 {"message":"Request Entity
// Too Large"}.
//
// The response: StatusCode (0 means 200), Headers, then MultiValueHeaders
// (added), Cookies as Set-Cookie headers, and Body (base64-decoded if
// IsBase64Encoded). A handler error, a panic or a body that is not valid
// base64 gets 500 {"message":"Internal Server Error"}. Every response
// carries an apigw-requestid header.
func HTTP(h APIHandler, routes []string) http.Handler {
	a := &apiGateway{h: h}
	for _, key := range routes {
		r, err := parseRoute(key)
		if err != nil {
			panic(err)
		}
		a.routes = append(a.routes, r)
	}
	sort.SliceStable(a.routes, func(i, j int) bool { return a.routes[i].less(a.routes[j]) })
	return a
}

type apiGateway struct {
	h      APIHandler
	routes []route // most specific first
}

type segKind int

// Segment kinds, most specific first.
const (
	segLiteral segKind = iota
	segParam
	segGreedy
)

type segment struct {
	kind segKind
	text string // literal text (escaped form) or parameter name
}

type route struct {
	key     string
	method  string // "" for $default, "ANY" for any method
	segs    []segment
	catches bool // $default
}

// less reports whether r is more specific than o.
func (r route) less(o route) bool {
	if r.catches != o.catches {
		return o.catches
	}
	for i := 0; i < len(r.segs) && i < len(o.segs); i++ {
		if r.segs[i].kind != o.segs[i].kind {
			return r.segs[i].kind < o.segs[i].kind
		}
	}
	if len(r.segs) != len(o.segs) {
		return len(r.segs) > len(o.segs)
	}
	return r.method != "ANY" && o.method == "ANY"
}

func parseRoute(key string) (route, error) {
	if key == "$default" {
		return route{key: key, catches: true}, nil
	}
	method, path, ok := strings.Cut(key, " ")
	if !ok || method == "" || !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " ?#") {
		return route{}, fmt.Errorf("eventsource: route key %q: want \"METHOD /path\" or \"$default\"", key)
	}
	if method != strings.ToUpper(method) {
		return route{}, fmt.Errorf("eventsource: route key %q: method must be upper case", key)
	}
	r := route{key: key, method: method}
	parts := strings.Split(path[1:], "/")
	for i, p := range parts {
		switch {
		case strings.HasPrefix(p, "{") && strings.HasSuffix(p, "+}"):
			if i != len(parts)-1 || len(p) < 4 {
				return route{}, fmt.Errorf("eventsource: route key %q: a greedy path variable must be the last segment", key)
			}
			r.segs = append(r.segs, segment{kind: segGreedy, text: p[1 : len(p)-2]})
		case strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}"):
			if len(p) < 3 {
				return route{}, fmt.Errorf("eventsource: route key %q: empty path variable name", key)
			}
			r.segs = append(r.segs, segment{kind: segParam, text: p[1 : len(p)-1]})
		case strings.ContainsAny(p, "{}"):
			return route{}, fmt.Errorf("eventsource: route key %q: malformed path variable %q", key, p)
		default:
			r.segs = append(r.segs, segment{kind: segLiteral, text: p})
		}
	}
	return r, nil
}

// match reports whether r matches method and the escaped path, with its
// decoded path parameters.
func (r route) match(method, escPath string) (map[string]string, bool) {
	if r.catches {
		return nil, true
	}
	if r.method != "ANY" && r.method != method {
		return nil, false
	}
	parts := strings.Split(strings.TrimPrefix(escPath, "/"), "/")
	var params map[string]string
	set := func(name, esc string) bool {
		v, err := url.PathUnescape(esc)
		if err != nil {
			return false
		}
		if params == nil {
			params = map[string]string{}
		}
		params[name] = v
		return true
	}
	for i, s := range r.segs {
		if i >= len(parts) {
			return nil, false
		}
		switch s.kind {
		case segLiteral:
			if parts[i] != s.text {
				return nil, false
			}
		case segParam:
			if parts[i] == "" || !set(s.text, parts[i]) {
				return nil, false
			}
		case segGreedy:
			rest := strings.Join(parts[i:], "/")
			if rest == "" || !set(s.text, rest) {
				return nil, false
			}
			return params, true
		}
	}
	if len(parts) != len(r.segs) {
		return nil, false
	}
	return params, true
}

func writeMessage(w http.ResponseWriter, status int, msg string) {
	body := `{"message":"` + msg + `"}` // msg is a fixed ASCII text
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (a *apiGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	reqID := newRequestID()
	w.Header().Set("Apigw-Requestid", reqID)

	escPath := r.URL.EscapedPath()
	var (
		rt     route
		params map[string]string
		found  bool
	)
	for _, c := range a.routes {
		if params, found = c.match(r.Method, escPath); found {
			rt = c
			break
		}
	}
	if !found {
		writeMessage(w, http.StatusNotFound, "Not Found")
		return
	}
	if r.ContentLength > MaxRequestPayload {
		writeMessage(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestPayload+1))
	if err != nil {
		writeMessage(w, http.StatusBadRequest, "Bad Request")
		return
	}
	if len(body) > MaxRequestPayload {
		writeMessage(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	ev := a.event(r, rt.key, params, body, reqID, now)
	resp, err := callAPI(r.Context(), a.h, ev)
	if err != nil {
		writeMessage(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	out := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if out, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			writeMessage(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
	}
	hdr := w.Header()
	for k, v := range resp.Headers {
		hdr.Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			hdr.Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		hdr.Add("Set-Cookie", c)
	}
	hdr.Set("Content-Length", strconv.Itoa(len(out)))
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// errHandlerPanic stands for a panic in an APIHandler.
var errHandlerPanic = errors.New("eventsource: handler panicked")

func callAPI(ctx context.Context, h APIHandler, req events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v", errHandlerPanic, v)
		}
	}()
	return h(ctx, req)
}

// event builds the payload format 2.0 event for r.
func (a *apiGateway) event(r *http.Request, routeKey string, params map[string]string, body []byte, reqID string, now time.Time) events.APIGatewayV2HTTPRequest {
	sourceIP := r.RemoteAddr
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		sourceIP = host
	}
	proto, port := "http", "80"
	if r.TLS != nil {
		proto, port = "https", "443"
	}
	if _, p, err := net.SplitHostPort(r.Host); err == nil {
		port = p
	}

	headers := map[string]string{}
	var cookies []string
	for k, vs := range r.Header {
		name := strings.ToLower(k)
		if name == "cookie" {
			for _, v := range vs {
				for c := range strings.SplitSeq(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[name] = strings.Join(vs, ",")
	}
	headers["host"] = r.Host
	if xff := headers["x-forwarded-for"]; xff != "" {
		headers["x-forwarded-for"] = xff + ", " + sourceIP
	} else {
		headers["x-forwarded-for"] = sourceIP
	}
	headers["x-forwarded-port"] = port
	headers["x-forwarded-proto"] = proto
	if r.ContentLength >= 0 && len(body) > 0 {
		headers["content-length"] = strconv.Itoa(len(body))
	}

	var query map[string]string
	if r.URL.RawQuery != "" {
		if q, err := url.ParseQuery(r.URL.RawQuery); err == nil || len(q) > 0 {
			query = make(map[string]string, len(q))
			for k, vs := range q {
				query[k] = strings.Join(vs, ",")
			}
		}
	}

	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              routeKey,
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     routeKey,
			AccountID:    "000000000000",
			Stage:        "$default",
			RequestID:    reqID,
			APIID:        "local",
			DomainName:   hostOnly(r.Host),
			DomainPrefix: strings.SplitN(hostOnly(r.Host), ".", 2)[0],
			Time:         now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		if isTextual(r.Header.Get("Content-Type")) {
			ev.Body = string(body)
		} else {
			ev.Body = base64.StdEncoding.EncodeToString(body)
			ev.IsBase64Encoded = true
		}
	}
	return ev
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// isTextual reports whether API Gateway passes a body of content type ct to
// Lambda as text rather than base64.
func isTextual(ct string) bool {
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	if strings.HasPrefix(mt, "text/") {
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-www-form-urlencoded":
		return true
	}
	return strings.HasPrefix(mt, "application/") && (strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml"))
}
