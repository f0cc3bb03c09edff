package acl

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"sort"
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

// ErrDenied matches (errors.Is) every refusal of Check.
var ErrDenied = errors.New("acl: access denied")

// adminCodes are the request codes that need an admin account
// (RocketMQ's Permission.ADMIN_CODE, plus Tide's transaction overrides).
var adminCodes = map[int16]bool{
	protocol.UpdateAndCreateTopic:        true,
	protocol.UpdateBrokerConfig:          true,
	protocol.DeleteTopicInBroker:         true,
	protocol.UpdateAndCreateSubscription: true,
	protocol.DeleteSubscriptionGroup:     true,
	protocol.TideForceEndTransaction:     true,
	protocol.TideResumeHalfCheck:         true,
}

// NeedsAdmin reports whether code is an admin-only request.
func NeedsAdmin(code int16) bool { return adminCodes[code] }

// Request is what Check needs of a request.
type Request struct {
	Code int16
	Ext  map[string]string
	Body []byte
	// Remote is the client's IP address (invalid if unknown: then only
	// "*" whitelists match).
	Remote netip.Addr
}

// Resource is one topic or group a request touches. Groups are named
// RetryPrefix+group.
type Resource struct {
	Name string
	Perm Perm
}

func deny(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrDenied, fmt.Sprintf(format, args...))
}

// Check decides one request against cfg. It returns nil or an error
// matching ErrDenied whose text says why (it is sent to the client as the
// response remark, so it names the access key, never the secret).
func (c *Config) Check(r Request) error {
	for _, p := range c.globalWhite {
		if p.match(r.Remote) {
			return nil
		}
	}
	ak, ok := r.Ext[FieldAccessKey]
	if !ok || ak == "" {
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
	if adminCodes[r.Code] && !a.admin {
		return deny("Need admin permission for request code=%d, but accessKey=%s is not", r.Code, ak)
	}
	if a.perms == nil && a.admin {
		return nil
	}
	res, err := Resources(r.Code, r.Ext, r.Body)
	if err != nil {
		return deny("%v", err)
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

// verify checks the Signature field. The content is the values of every
// other ext field sorted by key, followed by the body. rocketmq-client-go
// leaves SecurityToken out of what it signs while Java includes it, so
// both are accepted.
func verify(r Request, secret []byte) bool {
	sig, err := base64.StdEncoding.DecodeString(r.Ext[FieldSignature])
	if err != nil || len(sig) == 0 {
		return false
	}
	if hmac.Equal(sig, mac(r.Ext, r.Body, secret, "")) {
		return true
	}
	_, hasToken := r.Ext[FieldSecurityToken]
	return hasToken && hmac.Equal(sig, mac(r.Ext, r.Body, secret, FieldSecurityToken))
}

func mac(ext map[string]string, body, secret []byte, skip string) []byte {
	keys := make([]string, 0, len(ext))
	for k := range ext {
		if k != FieldSignature && k != uniqueKeyQuery && k != skip {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	h := hmac.New(sha1.New, secret)
	for _, k := range keys {
		h.Write([]byte(ext[k]))
	}
	h.Write(body)
	return h.Sum(nil)
}

// Sign returns the Signature value for ext (which must already hold the
// AccessKey field) and body under secret, as the official clients compute
// it. Used by tests and tools.
func Sign(ext map[string]string, body []byte, secret string) string {
	return base64.StdEncoding.EncodeToString(mac(ext, body, []byte(secret), ""))
}

// Resources lists the topics and groups a request touches with the
// permission each needs (RocketMQ's PlainAccessResource.parse, plus
// SEND_BATCH_MESSAGE and QUERY_CONSUMER_OFFSET which Java forgets).
// Codes not listed touch nothing: they only need a valid signature.
func Resources(code int16, ext map[string]string, body []byte) ([]Resource, error) {
	// A send to a retry topic (a consumer's fallback when send-back
	// fails) is a group access: the retry topic is the group's resource.
	send := func(topic string) []Resource {
		if strings.HasPrefix(topic, RetryPrefix) {
			return []Resource{{topic, Sub}}
		}
		return []Resource{{topic, Pub}}
	}
	switch code {
	case protocol.SendMessage:
		return send(ext["topic"]), nil
	case protocol.SendMessageV2, protocol.SendBatchMessage:
		if t, v1 := ext["topic"]; v1 {
			return send(t), nil
		}
		return send(ext["b"]), nil
	case protocol.ConsumerSendMsgBack:
		return []Resource{{RetryPrefix + ext["group"], Sub}, {ext["originTopic"], Pub}}, nil
	case protocol.PullMessage:
		return []Resource{{ext["topic"], Sub}, {RetryPrefix + ext["consumerGroup"], Sub}}, nil
	case protocol.QueryMessage:
		return []Resource{{ext["topic"], Sub}}, nil
	case protocol.HeartBeat:
		hb, err := protocol.DecodeHeartbeatData(body)
		if err != nil {
			return nil, fmt.Errorf("heartbeat body: %v", err)
		}
		var out []Resource
		for _, cd := range hb.ConsumerDataSet {
			out = append(out, Resource{RetryPrefix + cd.GroupName, Sub})
			for _, s := range cd.SubscriptionDataSet {
				out = append(out, Resource{s.Topic, Sub})
			}
		}
		return out, nil
	case protocol.UnregisterClient, protocol.GetConsumerListByGroup:
		return []Resource{{RetryPrefix + ext["consumerGroup"], Sub}}, nil
	case protocol.UpdateConsumerOffset, protocol.QueryConsumerOffset:
		return []Resource{{RetryPrefix + ext["consumerGroup"], Sub}, {ext["topic"], Sub}}, nil
	}
	return nil, nil
}
