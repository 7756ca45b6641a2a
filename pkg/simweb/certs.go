package simweb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// authority is an in-memory certificate authority.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// newAuthority creates a self-signed ECDSA P-256 CA valid from notBefore to
// notAfter.
func newAuthority(name string, notBefore, notAfter time.Time) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA %q key: %w", name, err)
	}
	sn, err := serialNumber()
	if err != nil {
		return nil, fmt.Errorf("CA %q: %w", name, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"urlcheck simweb"}},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("CA %q certificate: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("CA %q certificate: %w", name, err)
	}
	return &authority{cert: cert, key: key}, nil
}

// issue creates an ECDSA P-256 server certificate for name (a DNS name or an
// IP literal) signed by a.
func (a *authority) issue(name string, notBefore, notAfter time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("leaf %q key: %w", name, err)
	}
	sn, err := serialNumber()
	if err != nil {
		return nil, fmt.Errorf("leaf %q: %w", name, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		tmpl.IPAddresses = []net.IP{ip.AsSlice()}
	} else {
		tmpl.DNSNames = []string{name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("leaf %q certificate: %w", name, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("leaf %q certificate: %w", name, err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// certKey identifies a cached leaf: the SNI name and which CA signed it.
type certKey struct {
	name string
	bad  bool
}

// certEntry is one cached leaf, generated once.
type certEntry struct {
	once sync.Once
	cert *tls.Certificate
	err  error
}

// validity returns a certificate validity window that covers both the wall
// clock (which TLS clients verify against by default) and the simulation
// clock (which a client may pass as tls.Config.Time), with years to spare.
func (w *Web) validity(years int) (time.Time, time.Time) {
	wall, sim := time.Now(), w.clk.Now()
	lo, hi := wall, sim
	if sim.Before(wall) {
		lo, hi = sim, wall
	}
	return lo.Add(-48 * time.Hour).Truncate(time.Second), hi.AddDate(years, 0, 0).Truncate(time.Second)
}

// getCertificate is the HTTPS listener's tls.Config.GetCertificate: it picks
// (and on first use generates) a leaf for the SNI name. A host flagged BadCert
// gets a leaf from the rogue CA, which CertPool does not contain. A handshake
// without SNI (a client dialing by IP) gets a leaf for 127.0.0.1.
func (w *Web) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := normalizeHost(hello.ServerName)
	if name == "" {
		name = "127.0.0.1"
	}
	w.mu.Lock()
	h, known := w.hosts[name]
	k := certKey{name: name, bad: known && h.BadCert}
	e := w.certs[k]
	if e == nil {
		e = &certEntry{}
		w.certs[k] = e
	}
	w.mu.Unlock()
	e.once.Do(func() {
		ca := w.ca
		if k.bad {
			ca = w.rogue
		}
		nb, na := w.validity(2)
		e.cert, e.err = ca.issue(name, nb, na)
	})
	if e.err != nil {
		return nil, fmt.Errorf("simweb: certificate for %q: %w", name, e.err)
	}
	return e.cert, nil
}

// normalizeHost turns a Host header, SNI name or resolver query into the key
// of the host table: lower case, without a port and without trailing dots.
// A bracketed IPv6 literal loses its brackets.
func normalizeHost(s string) string {
	s = strings.TrimSpace(s)
	if h, _, err := net.SplitHostPort(s); err == nil {
		s = h
	}
	s = strings.TrimPrefix(s, "[")
	s = strings.TrimSuffix(s, "]")
	s = strings.TrimRight(s, ".")
	return strings.ToLower(s)
}
