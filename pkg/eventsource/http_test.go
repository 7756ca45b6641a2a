package eventsource

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

func TestHTTPRequest(t *testing.T) {
	routes := []string{"POST /jobs", "GET /jobs/{id}", "GET /jobs/summary", "ANY /jobs/{id}/results", "GET /files/{path+}", "DELETE /", "GET /"}
	tests := []struct {
		name, method, target, contentType string
		body                              string
		headers                           map[string][]string
		wantStatus                        int
		wantRoute                         string
		wantParams                        map[string]string
		wantQuery                         map[string]string
		wantRawQuery, wantRawPath         string
		wantBody                          string
		wantB64                           bool
		check                             func(t *testing.T, ev events.APIGatewayV2HTTPRequest)
	}{
		{name: "literal route, json body", method: "POST", target: "/jobs", contentType: "application/json", body: `{"urls":["https://a/"]}`,
			wantStatus: 200, wantRoute: "POST /jobs", wantRawPath: "/jobs", wantBody: `{"urls":["https://a/"]}`},
		{name: "path parameter", method: "GET", target: "/jobs/j-42", wantStatus: 200, wantRoute: "GET /jobs/{id}",
			wantRawPath: "/jobs/j-42", wantParams: map[string]string{"id": "j-42"}},
		{name: "encoded path parameter is decoded", method: "GET", target: "/jobs/a%20b%2Fc", wantStatus: 200, wantRoute: "GET /jobs/{id}",
			wantRawPath: "/jobs/a%20b%2Fc", wantParams: map[string]string{"id": "a b/c"}},
		{name: "literal beats variable", method: "GET", target: "/jobs/summary", wantStatus: 200, wantRoute: "GET /jobs/summary", wantRawPath: "/jobs/summary"},
		{name: "ANY method", method: "PATCH", target: "/jobs/7/results", wantStatus: 200, wantRoute: "ANY /jobs/{id}/results",
			wantRawPath: "/jobs/7/results", wantParams: map[string]string{"id": "7"}},
		{name: "greedy", method: "GET", target: "/files/a/b/c.txt", wantStatus: 200, wantRoute: "GET /files/{path+}",
			wantRawPath: "/files/a/b/c.txt", wantParams: map[string]string{"path": "a/b/c.txt"}},
		{name: "root", method: "DELETE", target: "/", wantStatus: 200, wantRoute: "DELETE /", wantRawPath: "/"},
		{name: "query string", method: "GET", target: "/jobs/1?a=1&b=x%20y&a=2&empty=", wantStatus: 200, wantRoute: "GET /jobs/{id}",
			wantRawPath: "/jobs/1", wantParams: map[string]string{"id": "1"}, wantRawQuery: "a=1&b=x%20y&a=2&empty=",
			wantQuery: map[string]string{"a": "1,2", "b": "x y", "empty": ""}},
		{name: "binary body is base64", method: "POST", target: "/jobs", contentType: "application/octet-stream", body: "\x00\x01\xff",
			wantStatus: 200, wantRoute: "POST /jobs", wantRawPath: "/jobs", wantBody: base64.StdEncoding.EncodeToString([]byte("\x00\x01\xff")), wantB64: true},
		{name: "no content type is base64", method: "POST", target: "/jobs", body: "hello",
			wantStatus: 200, wantRoute: "POST /jobs", wantRawPath: "/jobs", wantBody: base64.StdEncoding.EncodeToString([]byte("hello")), wantB64: true},
		{name: "text/plain with charset is text", method: "POST", target: "/jobs", contentType: "text/plain; charset=utf-8", body: "hello",
			wantStatus: 200, wantRoute: "POST /jobs", wantRawPath: "/jobs", wantBody: "hello"},
		{name: "+json is text", method: "POST", target: "/jobs", contentType: "application/problem+json", body: "{}",
			wantStatus: 200, wantRoute: "POST /jobs", wantRawPath: "/jobs", wantBody: "{}"},
		{name: "form is text", method: "POST", target: "/jobs", contentType: "application/x-www-form-urlencoded", body: "a=1",
			wantStatus: 200, wantRoute: "POST /jobs", wantRawPath: "/jobs", wantBody: "a=1"},
		{name: "headers and cookies", method: "GET", target: "/jobs/1", wantStatus: 200, wantRoute: "GET /jobs/{id}", wantRawPath: "/jobs/1",
			wantParams: map[string]string{"id": "1"},
			headers:    map[string][]string{"X-Multi": {"a", "b"}, "Cookie": {"s=1; t=2", "u=3"}, "User-Agent": {"ua/1"}},
			check: func(t *testing.T, ev events.APIGatewayV2HTTPRequest) {
				if ev.Headers["x-multi"] != "a,b" || ev.Headers["user-agent"] != "ua/1" || ev.Headers["host"] != "api.local:8080" {
					t.Errorf("headers %v", ev.Headers)
				}
				if _, ok := ev.Headers["cookie"]; ok {
					t.Errorf("cookie header kept: %v", ev.Headers)
				}
				if !reflect.DeepEqual(ev.Cookies, []string{"s=1", "t=2", "u=3"}) {
					t.Errorf("cookies %q", ev.Cookies)
				}
				if ev.RequestContext.HTTP.UserAgent != "ua/1" {
					t.Errorf("user agent %q", ev.RequestContext.HTTP.UserAgent)
				}
			}},
		{name: "not found path", method: "GET", target: "/nope", wantStatus: 404},
		{name: "not found method", method: "PUT", target: "/jobs", wantStatus: 404},
		{name: "trailing slash is another path", method: "POST", target: "/jobs/", wantStatus: 404},
		{name: "empty path parameter", method: "GET", target: "/jobs//results", wantStatus: 404},
		{name: "too large", method: "POST", target: "/jobs", contentType: "application/json", body: strings.Repeat("x", MaxRequestPayload+1), wantStatus: 413},
		{name: "exactly the limit", method: "POST", target: "/jobs", contentType: "text/plain", body: strings.Repeat("x", MaxRequestPayload),
			wantStatus: 200, wantRoute: "POST /jobs", wantRawPath: "/jobs", wantBody: strings.Repeat("x", MaxRequestPayload)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *events.APIGatewayV2HTTPRequest
			h := HTTP(func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				got = &req
				return events.APIGatewayV2HTTPResponse{}, nil
			}, routes)
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			r := httptest.NewRequest(tt.method, "http://api.local:8080"+tt.target, body)
			r.RemoteAddr = "192.0.2.7:5555"
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			for k, vs := range tt.headers {
				r.Header[k] = vs
			}
			before := time.Now().UnixMilli()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d (body %.200s)", w.Code, tt.wantStatus, w.Body.String())
			}
			if w.Header().Get("Apigw-Requestid") == "" {
				t.Errorf("no apigw-requestid header")
			}
			switch tt.wantStatus {
			case 404, 413:
				want := map[int]string{404: `{"message":"Not Found"}`, 413: `{"message":"Request Entity Too Large"}`}[tt.wantStatus]
				if w.Body.String() != want || w.Header().Get("Content-Type") != "application/json" {
					t.Errorf("body %q (%s), want %q", w.Body.String(), w.Header().Get("Content-Type"), want)
				}
				if got != nil {
					t.Errorf("handler invoked")
				}
				return
			}
			if got == nil {
				t.Fatal("handler not invoked")
			}
			ev := *got
			if ev.Version != "2.0" || ev.RouteKey != tt.wantRoute || ev.RequestContext.RouteKey != tt.wantRoute {
				t.Errorf("version %q route %q/%q, want 2.0 %q", ev.Version, ev.RouteKey, ev.RequestContext.RouteKey, tt.wantRoute)
			}
			if ev.RawPath != tt.wantRawPath || ev.RawQueryString != tt.wantRawQuery {
				t.Errorf("raw path %q query %q, want %q %q", ev.RawPath, ev.RawQueryString, tt.wantRawPath, tt.wantRawQuery)
			}
			if !reflect.DeepEqual(ev.PathParameters, tt.wantParams) {
				t.Errorf("path parameters %v, want %v", ev.PathParameters, tt.wantParams)
			}
			if !reflect.DeepEqual(ev.QueryStringParameters, tt.wantQuery) {
				t.Errorf("query parameters %v, want %v", ev.QueryStringParameters, tt.wantQuery)
			}
			if ev.Body != tt.wantBody || ev.IsBase64Encoded != tt.wantB64 {
				t.Errorf("body %.40q base64 %v, want %.40q %v", ev.Body, ev.IsBase64Encoded, tt.wantBody, tt.wantB64)
			}
			rc := ev.RequestContext
			if rc.HTTP.Method != tt.method || rc.HTTP.SourceIP != "192.0.2.7" || rc.HTTP.Protocol != "HTTP/1.1" || rc.Stage != "$default" ||
				rc.RequestID == "" || rc.RequestID != w.Header().Get("Apigw-Requestid") || rc.TimeEpoch < before || rc.TimeEpoch > time.Now().UnixMilli() ||
				rc.DomainName != "api.local" || rc.DomainPrefix != "api" {
				t.Errorf("request context %+v", rc)
			}
			if ev.Headers["x-forwarded-for"] != "192.0.2.7" || ev.Headers["x-forwarded-proto"] != "http" || ev.Headers["x-forwarded-port"] != "8080" {
				t.Errorf("forwarding headers %v", ev.Headers)
			}
			if tt.check != nil {
				tt.check(t, ev)
			}
		})
	}
}

func TestHTTPResponse(t *testing.T) {
	tests := []struct {
		name       string
		resp       events.APIGatewayV2HTTPResponse
		err        error
		panics     bool
		wantStatus int
		wantBody   string
		wantHeader http.Header
	}{
		{name: "default status", resp: events.APIGatewayV2HTTPResponse{Body: "hi"}, wantStatus: 200, wantBody: "hi"},
		{name: "status headers cookies", resp: events.APIGatewayV2HTTPResponse{
			StatusCode:        201,
			Headers:           map[string]string{"Content-Type": "application/json", "X-One": "1"},
			MultiValueHeaders: map[string][]string{"X-Many": {"a", "b"}},
			Cookies:           []string{"s=1; Path=/", "t=2"},
			Body:              `{"id":"j"}`,
		}, wantStatus: 201, wantBody: `{"id":"j"}`, wantHeader: http.Header{
			"Content-Type": {"application/json"}, "X-One": {"1"}, "X-Many": {"a", "b"}, "Set-Cookie": {"s=1; Path=/", "t=2"},
		}},
		{name: "base64 body", resp: events.APIGatewayV2HTTPResponse{Body: base64.StdEncoding.EncodeToString([]byte{0, 0xff}), IsBase64Encoded: true,
			Headers: map[string]string{"content-type": "application/octet-stream"}},
			wantStatus: 200, wantBody: "\x00\xff", wantHeader: http.Header{"Content-Type": {"application/octet-stream"}}},
		{name: "bad base64", resp: events.APIGatewayV2HTTPResponse{Body: "!!!", IsBase64Encoded: true},
			wantStatus: 500, wantBody: `{"message":"Internal Server Error"}`},
		{name: "handler error", err: errors.New("boom"), wantStatus: 500, wantBody: `{"message":"Internal Server Error"}`},
		{name: "handler panic", panics: true, wantStatus: 500, wantBody: `{"message":"Internal Server Error"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := HTTP(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				if tt.panics {
					panic("boom")
				}
				return tt.resp, tt.err
			}, []string{"$default"})
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/anything/at/all", nil))
			if w.Code != tt.wantStatus || w.Body.String() != tt.wantBody {
				t.Errorf("got %d %q, want %d %q", w.Code, w.Body.String(), tt.wantStatus, tt.wantBody)
			}
			for k, want := range tt.wantHeader {
				if got := w.Header().Values(k); !reflect.DeepEqual(got, want) {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestHTTPBadRoutes(t *testing.T) {
	for _, key := range []string{"", "GET", "GET jobs", "get /jobs", "GET /jobs/{id", "GET /{p+}/x", "GET /{}", "GET /a b"} {
		t.Run(key, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("HTTP accepted route key %q", key)
				}
			}()
			HTTP(nil, []string{key})
		})
	}
}

// TestHTTPServer goes through a real server, for the 413 on a body without
// Content-Length (chunked).
func TestHTTPServer(t *testing.T) {
	srv := httptest.NewServer(HTTP(func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 202, Body: req.Body}, nil
	}, []string{"POST /echo"}))
	defer srv.Close()
	tests := []struct {
		name       string
		size       int
		wantStatus int
	}{
		{"small chunked", 10, 202},
		{"over the limit chunked", MaxRequestPayload + 1, 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// io.MultiReader hides the length: the client sends it chunked.
			body := io.MultiReader(strings.NewReader(strings.Repeat("y", tt.size)))
			resp, err := http.Post(srv.URL+"/echo", "text/plain", body)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d (%.100s), want %d", resp.StatusCode, b, tt.wantStatus)
			}
			if tt.wantStatus == 202 && string(b) != strings.Repeat("y", tt.size) {
				t.Errorf("echo %q", b)
			}
		})
	}
}
