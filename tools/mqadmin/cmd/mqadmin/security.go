package main

import (
	"crypto/tls"
	"flag"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting"
)

// security are the ACL credentials and TLS settings of a run.
type security struct {
	accessKey, secretKey string
	tls                  bool
	tlsCA                string
	tlsCert, tlsKey      string
	tlsServerName        string
}

// register adds the credential and TLS flags to fs. The keys default to
// $TIDE_ACCESS_KEY / $TIDE_SECRET_KEY: prefer the environment for the
// secret, since command lines are visible to other local users (ps).
func (s *security) register(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&s.accessKey, "access-key", getenv("TIDE_ACCESS_KEY"), "ACL access key, signs every request (default $TIDE_ACCESS_KEY)")
	fs.StringVar(&s.secretKey, "secret-key", getenv("TIDE_SECRET_KEY"), "ACL secret key (default $TIDE_SECRET_KEY; prefer the variable, flags show in ps)")
	fs.BoolVar(&s.tls, "tls", false, "connect to NameServers and brokers over TLS (implied by the other --tls-* flags)")
	fs.StringVar(&s.tlsCA, "tls-ca", "", "PEM `file` of the CA(s) to trust instead of the system roots")
	fs.StringVar(&s.tlsCert, "tls-cert", "", "client certificate PEM `file`, for brokers with tlsClientAuth")
	fs.StringVar(&s.tlsKey, "tls-key", "", "client key PEM `file` (with --tls-cert)")
	fs.StringVar(&s.tlsServerName, "tls-server-name", "", "`name` to verify in server certificates (default: the dialled host)")
}

// options returns the client options for s; a bad combination is a usage
// error, an unreadable file an error naming it.
func (s *security) options() ([]mqclient.Option, error) {
	var opts []mqclient.Option
	switch {
	case s.accessKey != "" && s.secretKey == "":
		return nil, usagef("--access-key needs --secret-key (or TIDE_SECRET_KEY)")
	case s.accessKey == "" && s.secretKey != "":
		return nil, usagef("--secret-key needs --access-key (or TIDE_ACCESS_KEY)")
	case s.accessKey != "":
		opts = append(opts, mqclient.WithCredentials(mqclient.Credentials{AccessKey: s.accessKey, SecretKey: s.secretKey}))
	}
	cfg, err := s.tlsConfig()
	if err != nil || cfg == nil {
		return opts, err
	}
	return append(opts, mqclient.WithTLS(cfg)), nil
}

// tlsConfig returns the TLS configuration the --tls* flags ask for, nil
// for plain TCP.
func (s *security) tlsConfig() (*tls.Config, error) {
	if (s.tlsCert == "") != (s.tlsKey == "") {
		return nil, usagef("--tls-cert and --tls-key go together")
	}
	if !s.tls && s.tlsCA == "" && s.tlsCert == "" && s.tlsServerName == "" {
		return nil, nil
	}
	return remoting.ClientTLSFiles(s.tlsCA, s.tlsCert, s.tlsKey, s.tlsServerName)
}
