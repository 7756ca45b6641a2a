package simweb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"testing"
	"time"
)

func TestSNICertificates(t *testing.T) {
	w := New(newManualClock())
	w.AddHost(Host{Name: "www.a.test", Domain: "a.test"})
	w.AddHost(Host{Name: "docs.b.test", Domain: "b.test"})
	w.AddHost(Host{Name: "secure.b.test", Domain: "b.test", BadCert: true})
	startWeb(t, w)
	c := rawClient(t, w)
	tests := []struct {
		host    string
		badCert bool
	}{
		{"www.a.test", false},
		{"docs.b.test", false},
		{"secure.b.test", true},
	}
	for _, tc := range tests {
		resp, err := c.Get("https://" + tc.host + "/ok")
		if tc.badCert {
			var unknown x509.UnknownAuthorityError
			if !errors.As(err, &unknown) {
				t.Errorf("%s: err = %v, want x509.UnknownAuthorityError", tc.host, err)
			}
			if resp != nil {
				resp.Body.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.host, err)
			continue
		}
		resp.Body.Close()
		leaf := resp.TLS.PeerCertificates[0]
		if err := leaf.VerifyHostname(tc.host); err != nil {
			t.Errorf("%s: leaf does not name the host: %v", tc.host, err)
		}
		for _, other := range tests {
			if other.host != tc.host && leaf.VerifyHostname(other.host) == nil {
				t.Errorf("%s: leaf is also valid for %s; want one leaf per SNI name", tc.host, other.host)
			}
		}
		if pub, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
			t.Errorf("%s: leaf key %T, want ECDSA P-256", tc.host, leaf.PublicKey)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: w.CertPool(), DNSName: tc.host, CurrentTime: time.Now()}); err != nil {
			t.Errorf("%s: leaf does not verify against CertPool: %v", tc.host, err)
		}
		if resp.TLS.NegotiatedProtocol == "h2" {
			t.Errorf("%s: negotiated h2, want HTTP/1.1", tc.host)
		}
	}
}

func TestCertificateCache(t *testing.T) {
	w := New(newManualClock())
	w.AddHost(Host{Name: "www.a.test"})
	get := func(name string) *tls.Certificate {
		t.Helper()
		c, err := w.getCertificate(&tls.ClientHelloInfo{ServerName: name})
		if err != nil {
			t.Fatalf("getCertificate(%q): %v", name, err)
		}
		return c
	}
	a1, a2, b := get("www.a.test"), get("WWW.A.TEST"), get("other.test")
	if a1 != a2 {
		t.Error("second handshake for the same name generated a new leaf; want it cached")
	}
	if a1 == b {
		t.Error("two names share one leaf")
	}
	if ip := get(""); len(ip.Leaf.IPAddresses) != 1 || !ip.Leaf.IPAddresses[0].IsLoopback() {
		t.Errorf("no-SNI leaf names %v, want 127.0.0.1", ip.Leaf.IPAddresses)
	}
	// The validity window covers both the wall clock and the simulation clock.
	for _, at := range []time.Time{time.Now(), epoch} {
		if at.Before(a1.Leaf.NotBefore) || at.After(a1.Leaf.NotAfter) {
			t.Errorf("leaf valid %v..%v, not at %v", a1.Leaf.NotBefore, a1.Leaf.NotAfter, at)
		}
	}
}
