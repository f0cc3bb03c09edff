package remoting

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"time"
)

// TLSMode says what a server port accepts, as RocketMQ's tls.server.mode
// (TlsSystemConfig; "permissive" is RocketMQ's default). The server reads
// the first bytes of every connection: a TLS ClientHello starts with the
// handshake record type 0x16, which no RocketMQ frame does (it would
// announce a frame of over 350 MiB).
type TLSMode string

// TLS modes.
const (
	// TLSDisabled: plain connections only; a client that starts a TLS
	// handshake is logged and closed.
	TLSDisabled TLSMode = "disabled"
	// TLSPermissive: plain and TLS clients on the same port.
	TLSPermissive TLSMode = "permissive"
	// TLSEnforcing: TLS only; a plain client is logged and closed.
	TLSEnforcing TLSMode = "enforcing"
)

// tlsRecordHandshake is the first byte of a TLS ClientHello.
const tlsRecordHandshake = 0x16

// ErrTLSMode: a connection was refused for speaking (or not speaking)
// TLS against the port's TLSMode.
var ErrTLSMode = errors.New("remoting: connection refused by the TLS mode")

// ParseTLSMode parses RocketMQ's tls.server.mode values (case-sensitive,
// as RocketMQ's TlsMode.parse).
func ParseTLSMode(s string) (TLSMode, error) {
	switch m := TLSMode(s); m {
	case TLSDisabled, TLSPermissive, TLSEnforcing:
		return m, nil
	}
	return "", fmt.Errorf("%w: TLS mode %q: want disabled, permissive or enforcing", ErrInvalidOptions, s)
}

// effectiveTLSMode is the mode a server runs: the zero mode means
// enforcing with a TLSConfig and disabled without.
func effectiveTLSMode(mode TLSMode, cfg *tls.Config) TLSMode {
	if mode == "" {
		if cfg != nil {
			return TLSEnforcing
		}
		return TLSDisabled
	}
	return mode
}

// sniffTLS reads the first bytes of a new server connection (waiting at
// most wait; 0: within the deadline the caller set, if any) and applies mode: it returns the connection to
// speak on -- a TLS server connection not yet handshaken, or nc itself --
// and, for a plain one, the bytes already read, which come first.
func sniffTLS(nc net.Conn, mode TLSMode, cfg *tls.Config, wait time.Duration) (net.Conn, []byte, error) {
	if wait > 0 {
		_ = nc.SetReadDeadline(time.Now().Add(wait))
	}
	buf := make([]byte, 512)
	n, err := nc.Read(buf)
	if n == 0 {
		if err == nil {
			err = io.ErrNoProgress
		}
		return nil, nil, fmt.Errorf("remoting: first read: %w", err)
	}
	if wait > 0 {
		_ = nc.SetReadDeadline(time.Time{})
	}
	buf = buf[:n]
	isTLS := buf[0] == tlsRecordHandshake
	switch {
	case isTLS && mode == TLSDisabled:
		return nil, nil, fmt.Errorf("%w: the client starts a TLS handshake, this port runs TLS mode disabled (plain only)", ErrTLSMode)
	case !isTLS && mode == TLSEnforcing:
		return nil, nil, fmt.Errorf("%w: the client speaks plain TCP, this port runs TLS mode enforcing (TLS only)", ErrTLSMode)
	case isTLS:
		return tls.Server(&prefixConn{Conn: nc, prefix: buf}, cfg), nil, nil
	}
	return nc, buf, nil
}

// prefixConn replays bytes already read before reading on.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// prefixReader is what a plain connection's reader reads: the sniffed
// bytes, then the connection.
func prefixReader(prefix []byte, nc net.Conn) io.Reader {
	if len(prefix) == 0 {
		return nc
	}
	return io.MultiReader(bytes.NewReader(prefix), nc)
}

// SelfSignedTLS returns a server TLS configuration with a fresh
// self-signed ECDSA P-256 certificate for hosts (valid one year, kept in
// memory only), as RocketMQ's permissive mode uses when no certificate is
// configured (tls.test.mode.enable). Clients can encrypt with it but not
// authenticate the server: configure a real certificate for that.
func SelfSignedTLS(hosts ...string) (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("remoting: self-signed key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("remoting: self-signed serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "tide self-signed"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("remoting: self-signed certificate: %w", err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
