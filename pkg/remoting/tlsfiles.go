package remoting

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// ServerTLSFiles loads a server TLS configuration from PEM files:
// certificate chain and key, and optionally (clientCA not empty) a CA
// bundle whose signed client certificates are then required (mutual TLS).
// TLS 1.2 is the minimum.
func ServerTLSFiles(certFile, keyFile, clientCA string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: TLS certificate %s / key %s: %w", ErrInvalidOptions, certFile, keyFile, err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCA != "" {
		pool, err := loadPool(clientCA)
		if err != nil {
			return nil, err
		}
		c.ClientCAs = pool
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// ClientTLSFiles loads a client TLS configuration: the CA bundle that
// signs the servers (empty: the system roots) and, for mutual TLS, a
// client certificate and key (both empty: none). serverName overrides the
// name checked in server certificates (needed when dialling by IP an
// address the certificate does not list; empty: the dialled host).
func ClientTLSFiles(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if caFile != "" {
		pool, err := loadPool(caFile)
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: TLS client certificate %s / key %s: %w", ErrInvalidOptions, certFile, keyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

func loadPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: TLS CA: %w", ErrInvalidOptions, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: TLS CA %s holds no PEM certificate", ErrInvalidOptions, file)
	}
	return pool, nil
}
