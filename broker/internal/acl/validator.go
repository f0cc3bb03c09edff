package acl

import (
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Ext field names of RocketMQ's ACL (SessionCredentials).
const (
	FieldAccessKey     = "AccessKey"
	FieldSignature     = "Signature"
	FieldSecurityToken = "SecurityToken"
	// uniqueKeyQuery is left out of the signed content by RocketMQ.
	uniqueKeyQuery = "_UNIQUE_KEY_QUERY"
)

// ErrDenied matches (errors.Is) every refusal of Check and Authorize.
var ErrDenied = errors.New("acl: access denied")

// Request is what Check needs of a request. The caller derives Admin and
// Resources from the request (the broker does it from the same typed
// header its handler decodes, so a check and a handler cannot disagree
// about which field names the topic).
type Request struct {
	Code int16
	// Ext, Header and Body are the request's ext fields and body, as in
	// protocol.Command: its fields are Header's (a header the frame
	// decoder typed, or nil) plus Ext. The signature covers both, and is
	// checked without building them into one map.
	Ext    map[string]string
	Header protocol.ExtAppender
	Body   []byte
	// Remote is the client's IP address (invalid if unknown: then only
	// "*" whitelists match).
	Remote netip.Addr
	// Admin: the request needs an admin account.
	Admin bool
	// Resources are the topics and groups the request touches, with the
	// permission each needs.
	Resources []Resource
}

// Identity is who sent a request whose signature Check already verified:
// its access key (empty when it carried none) and address. Authorize
// decides further resources for it, e.g. once a handler has looked up the
// stored record a request names.
type Identity struct {
	AccessKey string
	Remote    netip.Addr
}

// Resource is one topic or group a request touches. Groups are named
// RetryPrefix+group (a retry topic is its group's resource).
type Resource struct {
	Name string
	Perm Perm
}

// Topic is the resource of topic name with perm; a retry topic
// (%RETRY%group) is its group's resource, and needs SUB whatever perm
// was asked (RocketMQ's rule for sends and pulls of retry topics).
func Topic(name string, perm Perm) Resource {
	if strings.HasPrefix(name, RetryPrefix) {
		return Resource{name, Sub}
	}
	return Resource{name, perm}
}

// Group is the resource of consumer group name with perm.
func Group(name string, perm Perm) Resource { return Resource{RetryPrefix + name, perm} }

func deny(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrDenied, fmt.Sprintf(format, args...))
}

// Check decides one request against cfg: whitelists, access key,
// signature, then Authorize. It returns nil or an error matching
// ErrDenied whose text says why (it is sent to the client as the response
// remark, so it names the access key, never the secret).
func (c *Config) Check(r Request) error {
	if c.globallyWhite(r.Remote) {
		return nil
	}
	rc := r.command()
	ak, _ := rc.Field(FieldAccessKey)
	if ak == "" {
		return deny("No accessKey is configured (request code %d from %v carries no AccessKey)", r.Code, r.Remote)
	}
	a := c.accounts[ak]
	if a == nil {
		return deny("No acl config for %s", ak)
	}
	if a.white != nil && a.white.match(r.Remote) {
		return nil
	}
	if !verify(r, a.secretKey) {
		return deny("Check signature failed for accessKey=%s", ak)
	}
	if r.Admin && !a.admin {
		return deny("Need admin permission for request code=%d, but accessKey=%s is not", r.Code, ak)
	}
	return a.allow(ak, r.Resources)
}

// Authorize decides resources (and admin, when needed) for the sender of
// a request whose signature Check has verified. Whitelisted addresses are
// allowed everything, as in Check.
func (c *Config) Authorize(id Identity, admin bool, res ...Resource) error {
	if c.globallyWhite(id.Remote) {
		return nil
	}
	a := c.accounts[id.AccessKey]
	if a == nil {
		return deny("No acl config for %s", id.AccessKey)
	}
	if a.white != nil && a.white.match(id.Remote) {
		return nil
	}
	if admin && !a.admin {
		return deny("Need admin permission, but accessKey=%s is not", id.AccessKey)
	}
	return a.allow(id.AccessKey, res)
}

func (c *Config) globallyWhite(ip netip.Addr) bool {
	for _, p := range c.globalWhite {
		if p.match(ip) {
			return true
		}
	}
	return false
}

// allow checks res against the account's permissions. An admin account
// with no lists at all may do anything.
func (a *account) allow(ak string, res []Resource) error {
	if a.perms == nil && a.admin {
		return nil
	}
	for _, x := range res {
		// An explicit entry decides (so topicA=DENY holds whatever the
		// default, as in RocketMQ 4.9); the default covers the rest.
		owned, listed := a.perms[x.Name]
		if !listed {
			owned = a.defTopic
			if strings.HasPrefix(x.Name, RetryPrefix) {
				owned = a.defGroup
			}
		}
		if !owned.Allows(x.Perm) {
			return deny("No permission %s for %s (accessKey=%s)", x.Perm, describe(x.Name), ak)
		}
	}
	return nil
}

func describe(name string) string {
	if g, ok := strings.CutPrefix(name, RetryPrefix); ok {
		return "group=" + g
	}
	return "topic=" + name
}

// command is r's fields and body as a protocol.Command, to read them.
func (r *Request) command() protocol.Command {
	return protocol.Command{ExtFields: r.Ext, Header: r.Header, Body: r.Body}
}

// verify checks the Signature field. The content is the values of every
// other ext field sorted by key, followed by the body (AclUtils'
// combineRequestContent; RocketMQ leaves _UNIQUE_KEY_QUERY out). A typed
// header's fields are signed from the header, without a map.
// rocketmq-client-go leaves SecurityToken out of what it signs while Java
// includes it, so both are accepted.
func verify(r Request, secret []byte) bool {
	c := r.command()
	text, _ := c.Field(FieldSignature)
	var sig [64]byte // an HMAC-SHA1 is 20 bytes; anything longer cannot match
	if base64.StdEncoding.DecodedLen(len(text)) > len(sig) {
		return false
	}
	n, err := base64.StdEncoding.Decode(sig[:], []byte(text))
	if err != nil || n == 0 {
		return false
	}
	if hmac.Equal(sig[:n], c.FieldsMAC(secret, uniqueKeyQuery, "")) {
		return true
	}
	_, hasToken := c.Field(FieldSecurityToken)
	return hasToken && hmac.Equal(sig[:n], c.FieldsMAC(secret, uniqueKeyQuery, FieldSecurityToken))
}

func mac(ext map[string]string, body, secret []byte, skip string) []byte {
	return protocol.SignatureMAC(ext, body, secret, uniqueKeyQuery, skip)
}

// Sign returns the Signature value for ext (which must already hold the
// AccessKey field) and body under secret, as the official clients compute
// it. Used by tests and tools.
func Sign(ext map[string]string, body []byte, secret string) string {
	return base64.StdEncoding.EncodeToString(mac(ext, body, []byte(secret), ""))
}
