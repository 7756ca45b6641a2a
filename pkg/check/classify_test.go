package check

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestClassPredicates(t *testing.T) {
	tests := []struct {
		c                 Class
		broken, transient bool
	}{
		{ClassOK, false, false},
		{ClassRedirect, false, false},
		{ClassClientError, true, false},
		{ClassServerError, true, false},
		{ClassRateLimited, true, true},
		{ClassBotProtection, true, false},
		{ClassTimeout, true, true},
		{ClassDNS, true, false},
		{ClassTLS, true, false},
		{ClassRefused, true, true},
		{ClassReset, true, true},
		{ClassTooManyRedirects, true, false},
		{ClassInvalid, true, false},
		{ClassForbiddenTarget, true, false},
	}
	for _, tc := range tests {
		if got := tc.c.Broken(); got != tc.broken {
			t.Errorf("%s.Broken() = %v, want %v", tc.c, got, tc.broken)
		}
		if got := tc.c.Transient(); got != tc.transient {
			t.Errorf("%s.Transient() = %v, want %v", tc.c, got, tc.transient)
		}
	}
}

func TestOutcomeTransient(t *testing.T) {
	tests := []struct {
		o    Outcome
		want bool
	}{
		{Outcome{Class: ClassServerError, Status: 500}, false},
		{Outcome{Class: ClassServerError, Status: 502}, true},
		{Outcome{Class: ClassServerError, Status: 503}, true},
		{Outcome{Class: ClassServerError, Status: 504}, true},
		{Outcome{Class: ClassServerError, Status: 0}, false},
		{Outcome{Class: ClassClientError, Status: 503}, false},
		{Outcome{Class: ClassRateLimited, Status: 429}, true},
		{Outcome{Class: ClassDNS}, false},
		{Outcome{Class: ClassOK, Status: 200}, false},
	}
	for _, tc := range tests {
		if got := tc.o.Transient(); got != tc.want {
			t.Errorf("%+v.Transient() = %v, want %v", tc.o, got, tc.want)
		}
	}
}

func TestClassifyStatus(t *testing.T) {
	h := func(kv ...string) http.Header {
		x := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			x.Set(kv[i], kv[i+1])
		}
		return x
	}
	tests := []struct {
		status int
		h      http.Header
		want   Class
	}{
		{200, nil, ClassOK},
		{204, nil, ClassOK},
		{206, nil, ClassOK},
		{300, nil, ClassServerError},
		{304, nil, ClassServerError},
		{400, nil, ClassClientError},
		{401, nil, ClassClientError},
		{403, nil, ClassClientError},
		{403, h("Cf-Mitigated", "challenge"), ClassBotProtection},
		{503, h("cf-mitigated", "Challenge"), ClassBotProtection},
		{403, h("Cf-Mitigated", "block"), ClassClientError},
		{202, h("X-Amzn-Waf-Action", "challenge"), ClassBotProtection},
		{405, h("X-Amzn-Waf-Action", "captcha"), ClassBotProtection},
		{200, h("X-Amzn-Waf-Action", "allow"), ClassOK},
		{999, nil, ClassBotProtection},
		{404, nil, ClassClientError},
		{429, nil, ClassRateLimited},
		{429, h("Retry-After", "5"), ClassRateLimited},
		{500, nil, ClassServerError},
		{503, nil, ClassServerError},
		{503, h("Retry-After", "30"), ClassRateLimited},
		{599, nil, ClassServerError},
		{600, nil, ClassServerError},
	}
	for _, tc := range tests {
		got, text := classifyStatus(tc.status, tc.h)
		if got != tc.want {
			t.Errorf("classifyStatus(%d, %v) = %q, want %q", tc.status, tc.h, got, tc.want)
		}
		if (got == ClassOK) != (text == "") {
			t.Errorf("classifyStatus(%d) text %q: want text exactly for failures", tc.status, text)
		}
	}
}

func TestHeadFallback(t *testing.T) {
	cf := http.Header{"Cf-Mitigated": {"challenge"}}
	aws := http.Header{"X-Amzn-Waf-Action": {"captcha"}}
	tests := []struct {
		status int
		h      http.Header
		want   bool
	}{
		{200, nil, false},
		{301, nil, false},
		{400, nil, true},
		{403, nil, true},
		{403, cf, false},
		{404, nil, false},
		{405, nil, true},
		{405, aws, false},
		{406, nil, true},
		{410, nil, false},
		{429, nil, false},
		{500, nil, false},
		{501, nil, true},
		{503, nil, false},
	}
	for _, tc := range tests {
		if got := headFallback(tc.status, tc.h); got != tc.want {
			t.Errorf("headFallback(%d, %v) = %v, want %v", tc.status, tc.h, got, tc.want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassifyErr(t *testing.T) {
	op := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", err)}
	}
	wrap := func(err error) error {
		return &requestError{method: "HEAD", url: "http://x.test/", err: err}
	}
	forb := &ForbiddenError{Host: "x.test", Addr: netip.MustParseAddr("10.0.0.1"), Reason: "private"}
	tests := []struct {
		name string
		err  error
		want Class
		text string // exact Outcome.Error text, "" to skip
	}{
		{"forbidden", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: forb}), ClassForbiddenTarget, "dial tcp: refusing private address 10.0.0.1 (resolved from x.test)"},
		{"deadline", wrap(context.DeadlineExceeded), ClassTimeout, "context deadline exceeded"},
		{"net timeout", wrap(&net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}), ClassTimeout, ""},
		{"dns", wrap(&net.DNSError{Err: "no such host", Name: "x.test", IsNotFound: true}), ClassDNS, "lookup x.test: no such host"},
		{"dns timeout is dns", wrap(&net.DNSError{Err: "timeout", Name: "x.test", IsTimeout: true}), ClassDNS, ""},
		{"resolver error", wrap(&resolveError{host: "x.test", err: errors.New("boom")}), ClassDNS, "lookup x.test: boom"},
		{"lookup cut by the connect deadline is dns", wrap(&resolveError{host: "x.test", err: &net.DNSError{Err: context.DeadlineExceeded.Error(), Name: "x.test", IsTimeout: true, UnwrapErr: context.DeadlineExceeded}}), ClassDNS, ""},
		{"unknown CA", wrap(&url.Error{Op: "Get", URL: "u", Err: x509.UnknownAuthorityError{}}), ClassTLS, ""},
		{"hostname", wrap(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "x.test"}), ClassTLS, ""},
		{"remote alert", wrap(&net.OpError{Op: "remote error", Err: errors.New("tls: handshake failure")}), ClassTLS, ""},
		{"refused", wrap(op(syscall.ECONNREFUSED)), ClassRefused, ""},
		{"host unreachable", wrap(op(syscall.EHOSTUNREACH)), ClassRefused, ""},
		{"reset", wrap(op(syscall.ECONNRESET)), ClassReset, ""},
		{"broken pipe", wrap(op(syscall.EPIPE)), ClassReset, ""},
		{"EOF", wrap(io.EOF), ClassReset, "EOF"},
		{"unexpected EOF", wrap(fmt.Errorf("reading: %w", io.ErrUnexpectedEOF)), ClassReset, ""},
		{"flattened reset text", wrap(errors.New("http2: client connection lost: connection reset by peer")), ClassReset, ""},
		{"other", wrap(errors.New("net/http: HTTP/1.x transport connection broken: malformed HTTP status code")), ClassServerError, ""},
	}
	for _, tc := range tests {
		got, text := classifyErr(context.Background(), tc.err)
		if got != tc.want {
			t.Errorf("%s: class %q, want %q (text %q)", tc.name, got, tc.want, text)
		}
		if tc.text != "" && text != tc.text {
			t.Errorf("%s: text %q, want %q", tc.name, text, tc.text)
		}
	}

	// An expired or cancelled check is a timeout whatever the error says.
	ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	if got, text := classifyErr(ctx, wrap(op(syscall.ECONNRESET))); got != ClassTimeout {
		t.Errorf("expired ctx: class %q (%s), want timeout", got, text)
	}
}
