package mqclient

import (
	"crypto/tls"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Credentials are the RocketMQ plain-ACL credentials of a client (the
// accessKey/secretKey pair of an account in the broker's plain_acl.yml;
// SecurityToken is optional and sent as is).
type Credentials struct {
	AccessKey     string
	SecretKey     string
	SecurityToken string
}

// WithCredentials signs every request as RocketMQ clients do: ext fields
// AccessKey, optionally SecurityToken, and Signature =
// Base64(HMAC-SHA1(SecretKey, the values of all other ext fields sorted by
// key, then the body)). Brokers without ACL ignore the fields.
func WithCredentials(c Credentials) Option { return func(s *settings) { s.credentials = c } }

// WithTLS makes the client dial NameServers and brokers over TLS with cfg
// (give RootCAs for a private CA; Certificates for mutual TLS). The
// official Go client cannot do this; Tide's daemons can (tlsEnable).
func WithTLS(cfg *tls.Config) Option { return func(s *settings) { s.tlsConfig = cfg } }

// remotingOptions are the transport options the settings ask for.
func (s settings) remotingOptions() remoting.ClientOptions {
	o := remoting.ClientOptions{Logger: s.logger, TLSConfig: s.tlsConfig, JSONHeaders: s.jsonHeaders}
	if s.credentials.AccessKey != "" {
		o.RequestHook = s.credentials.sign
	}
	return o
}

// sign adds the ACL fields to req (a copy the transport owns).
func (c Credentials) sign(req *protocol.Command) {
	req.Sign(c.AccessKey, c.SecretKey, c.SecurityToken)
}
