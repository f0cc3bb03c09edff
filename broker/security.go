package broker

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tidemq/tide/broker/internal/acl"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// aclReloadInterval is how often the ACL file is checked for changes.
var aclReloadInterval = acl.DefaultReloadInterval

// AclFile returns the ACL file the broker reads when AclEnable is set:
// PlainAclFile if given, else $ROCKETMQ_HOME/conf/plain_acl.yml when
// ROCKETMQ_HOME is set (RocketMQ's location), else
// <storePathRootDir>/config/plain_acl.yml.
func (o *Options) AclFile() string {
	switch {
	case o.PlainAclFile != "":
		return o.PlainAclFile
	case os.Getenv("ROCKETMQ_HOME") != "":
		return filepath.Join(os.Getenv("ROCKETMQ_HOME"), "conf", "plain_acl.yml")
	}
	return filepath.Join(o.Store.StorePathRootDir, "config", "plain_acl.yml")
}

// securityProblems validates the security and limit options.
func (o *Options) securityProblems() []string {
	var errs []string
	if o.TLSEnable && (o.TLSCertPath == "" || o.TLSKeyPath == "") {
		errs = append(errs, "tlsEnable needs tlsCertPath and tlsKeyPath")
	}
	if o.TLSClientAuth && o.TLSCAPath == "" {
		errs = append(errs, "tlsClientAuth needs tlsCAPath")
	}
	if o.TLSMode != "" {
		if _, err := remoting.ParseTLSMode(o.TLSMode); err != nil {
			errs = append(errs, fmt.Sprintf("tlsMode %q: want disabled, permissive or enforcing", o.TLSMode))
		}
	}
	if o.tlsMode() == remoting.TLSEnforcing && (o.TLSCertPath == "" || o.TLSKeyPath == "") {
		errs = append(errs, "tlsMode enforcing needs tlsCertPath and tlsKeyPath")
	}
	if _, err := o.innerCredentials(); err != nil {
		errs = append(errs, err.Error())
	}
	for k, v := range map[string]int{"serverMaxConnections": o.ServerMaxConnections,
		"serverChannelMaxIdleTimeSeconds": o.ServerChannelMaxIdleTimeSeconds, "serverMaxInFlightPerConn": o.ServerMaxInFlightPerConn,
		"serverMaxHeaderSize": o.ServerMaxHeaderSize, "serverFrameReadTimeoutMillis": o.ServerFrameReadTimeoutMillis,
		"maxHeldPullRequests": o.MaxHeldPullRequests, "maxHeldPullRequestsPerConn": o.MaxHeldPullRequestsPerConn} {
		if v < 0 {
			errs = append(errs, fmt.Sprintf("%s %d is negative", k, v))
		}
	}
	return errs
}

// innerCredentials are the account of InnerClientAuthenticationCredentials
// (zero when unset).
type innerCredentials struct {
	AccessKey string `json:"accessKey"`
	SecretKey string `json:"secretKey"`
}

func (o *Options) innerCredentials() (innerCredentials, error) {
	var c innerCredentials
	if strings.TrimSpace(o.InnerClientAuthenticationCredentials) == "" {
		return c, nil
	}
	if err := json.Unmarshal([]byte(o.InnerClientAuthenticationCredentials), &c); err != nil || c.AccessKey == "" || c.SecretKey == "" {
		return c, fmt.Errorf(`innerClientAuthenticationCredentials: want {"accessKey":"...","secretKey":"..."}`)
	}
	return c, nil
}

// signInner signs req with the inner credentials, if any (as the official
// clients sign: AccessKey, then Signature over the other fields and the
// body).
func (b *Broker) signInner(req *protocol.Command) {
	c, _ := b.opts.innerCredentials() // validated by Validate
	if c.AccessKey == "" {
		return
	}
	req.Sign(c.AccessKey, c.SecretKey, "")
}

// tlsMode is the server ports' TLS mode: TLSMode, else enforcing with
// tlsEnable (its meaning before tlsMode existed), else permissive
// (RocketMQ's default).
func (o *Options) tlsMode() remoting.TLSMode {
	if m, err := remoting.ParseTLSMode(o.TLSMode); err == nil {
		return m
	}
	if o.TLSEnable {
		return remoting.TLSEnforcing
	}
	return remoting.TLSPermissive
}

// security is what the broker loaded for ACL and TLS in New.
type security struct {
	acl       *acl.Validator // nil: ACL off
	tlsMode   remoting.TLSMode
	serverTLS *tls.Config // nil: plain TCP only
	clientTLS *tls.Config
	// haTLS makes the HA port TLS-only (nil: plain). The HA port has no
	// permissive mode: its master speaks first (the authentication
	// challenge), so there is no first byte of the slave's to tell TLS
	// from plain by. It speaks what this cluster's slaves dial: TLS with
	// tlsEnable (or tlsMode enforcing), else plain.
	haTLS *tls.Config
}

func loadSecurity(o Options, log *slog.Logger) (security, error) {
	var s security
	s.tlsMode = o.tlsMode()
	switch {
	case s.tlsMode == remoting.TLSDisabled:
	case o.TLSCertPath != "" && o.TLSKeyPath != "":
		ca := ""
		if o.TLSClientAuth {
			ca = o.TLSCAPath
		}
		var err error
		if s.serverTLS, err = remoting.ServerTLSFiles(o.TLSCertPath, o.TLSKeyPath, ca); err != nil {
			return s, err
		}
	default: // permissive without a certificate (enforcing needs one: securityProblems)
		var err error
		if s.serverTLS, err = remoting.SelfSignedTLS(o.BrokerIP1); err != nil {
			return s, err
		}
		log.Info("TLS mode permissive without tlsCertPath/tlsKeyPath: TLS clients get a self-signed certificate generated at start (they can encrypt, not authenticate the broker)")
	}
	if s.serverTLS != nil && (o.TLSEnable || s.tlsMode == remoting.TLSEnforcing) {
		s.haTLS = s.serverTLS
	}
	if o.TLSEnable {
		var err error
		cert, key := "", ""
		if o.TLSClientAuth {
			cert, key = o.TLSCertPath, o.TLSKeyPath
		}
		if s.clientTLS, err = remoting.ClientTLSFiles(o.TLSCAPath, cert, key, ""); err != nil {
			return s, err
		}
	}
	if o.AclEnable {
		v, err := acl.Open(o.AclFile(), aclReloadInterval, log)
		if err != nil {
			return s, fmt.Errorf("aclEnable: %w", err)
		}
		s.acl = v
	}
	return s, nil
}

func (s *security) close() {
	if s.acl != nil {
		s.acl.Close()
	}
}

// serverOptions are the client port's transport options.
func (b *Broker) serverOptions() remoting.ServerOptions {
	o := b.opts
	so := remoting.ServerOptions{
		MaxFrameSize:                 o.ServerSocketMaxFrame,
		Logger:                       b.log,
		MaxConnections:               o.ServerMaxConnections,
		IdleTimeout:                  time.Duration(o.ServerChannelMaxIdleTimeSeconds) * time.Second,
		MaxConcurrentRequestsPerConn: o.ServerMaxInFlightPerConn,
		MaxHeaderSize:                o.ServerMaxHeaderSize,
		FrameReadTimeout:             time.Duration(o.ServerFrameReadTimeoutMillis) * time.Millisecond,
		TLSConfig:                    b.sec.serverTLS,
		TLSMode:                      b.sec.tlsMode,
	}
	if b.sec.acl != nil {
		so.Interceptor = b.checkACL
	}
	return so
}

// clientOptions are the options of the broker's outgoing client
// (NameServers, and the master for a slave's metadata sync).
func (b *Broker) clientOptions() remoting.ClientOptions {
	return remoting.ClientOptions{Logger: b.log, TLSConfig: b.sec.clientTLS}
}

// checkACL is the client port's interceptor when aclEnable is set. The
// code's rule (aclRules) says what the request needs: admin, the topics
// and groups its typed header names, or nothing but a valid signature;
// a code without a rule is refused. A refused request is answered
// NO_PERMISSION with the reason, and its handler never runs: nothing is
// stored or returned. Handlers whose rule is resolved check the rest once
// they have looked up what the request names (isolation.go).
func (b *Broker) checkACL(_ context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	rule, ok := aclRules[req.Code]
	if !ok {
		return b.errorResponse(c, req, protocol.NoPermission, "%v: request code %d has no access rule in this broker", acl.ErrDenied, req.Code)
	}
	// A signature covers every field, a typed send or pull header's too:
	// Check signs the header's fields from the header, without a map.
	r := acl.Request{Code: req.Code, Ext: req.ExtFields, Header: req.Header, Body: req.Body, Remote: remoteIP(c.RemoteAddr()),
		Admin: rule.admin}
	var badHeader error
	if rule.resources != nil {
		res, admin, err := rule.resources(req)
		r.Resources, r.Admin, badHeader = res, r.Admin || admin, err
	}
	err := b.sec.acl.Check(r)
	switch {
	case err == nil && badHeader != nil:
		// Signed, but its header does not decode: the handler would refuse
		// it the same way (it decodes with the same function).
		return b.errorResponse(c, req, protocol.SystemError, "bad header: %v", badHeader)
	case err == nil:
		return nil
	case !errors.Is(err, acl.ErrDenied):
		return b.errorResponse(c, req, protocol.SystemError, "acl: %v", err)
	}
	return b.errorResponse(c, req, protocol.NoPermission, "%v", err)
}

func remoteIP(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			return ip.Unmap()
		}
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// OpenConnections returns the number of open client-port connections.
func (b *Broker) OpenConnections() int {
	if b.server == nil {
		return 0
	}
	return len(b.server.Conns())
}
