// Package tlstest makes throw-away certificates for TLS tests: a CA, a
// server certificate for 127.0.0.1/localhost and a client certificate,
// written as PEM files too so daemons configured by path can load them.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Files are PEM files in a test's temporary directory.
type Files struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// Set is one CA with a server and a client certificate it signed.
type Set struct {
	Files Files
	Pool  *x509.CertPool // trusts the CA
	// Server and Client certificates, ready for tls.Config.Certificates.
	Server, Client tls.Certificate
}

// ServerConfig returns a server configuration; with mutual set it
// requires and verifies client certificates signed by the CA.
func (s *Set) ServerConfig(mutual bool) *tls.Config {
	c := &tls.Config{Certificates: []tls.Certificate{s.Server}, MinVersion: tls.VersionTLS12}
	if mutual {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = s.Pool
	}
	return c
}

// ClientConfig returns a client configuration trusting the CA and
// presenting the client certificate.
func (s *Set) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: s.Pool, Certificates: []tls.Certificate{s.Client}, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// New makes a Set valid for an hour.
func New(t testing.TB) *Set {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	caTpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tide test CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTpl, caTpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, name string, usage ...x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage,
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	// The server certificate may also authenticate as a client: brokers
	// present theirs to NameServers and masters under mutual TLS.
	sDER, sKey := leaf(2, "tide server", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	cDER, cKey := leaf(3, "tide client", x509.ExtKeyUsageClientAuth)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		b, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	s := &Set{Pool: x509.NewCertPool()}
	s.Pool.AddCert(ca)
	s.Files = Files{
		CA:         write("ca.pem", "CERTIFICATE", caDER),
		ServerCert: write("server.pem", "CERTIFICATE", sDER),
		ServerKey:  write("server.key", "EC PRIVATE KEY", keyDER(sKey)),
		ClientCert: write("client.pem", "CERTIFICATE", cDER),
		ClientKey:  write("client.key", "EC PRIVATE KEY", keyDER(cKey)),
	}
	if s.Server, err = tls.LoadX509KeyPair(s.Files.ServerCert, s.Files.ServerKey); err != nil {
		t.Fatal(err)
	}
	if s.Client, err = tls.LoadX509KeyPair(s.Files.ClientCert, s.Files.ClientKey); err != nil {
		t.Fatal(err)
	}
	return s
}
