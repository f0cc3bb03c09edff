package broker

import (
	"github.com/tidemq/tide/broker/internal/acl"
	"github.com/tidemq/tide/broker/internal/topic"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// This file holds the checks handlers make themselves under aclEnable,
// once they know what a request really touches (aclrules.go says which
// codes do). checkACL has verified the request's signature before any
// handler runs, so the access key a handler reads is authentic.

// identityKey is the connection value holding the acl.Identity of the
// connection's last heartbeat (the account its producers registered as).
type identityKey struct{}

// identity is who sent req on c.
func identity(c *remoting.Conn, req *protocol.Command) acl.Identity {
	return acl.Identity{AccessKey: req.Ext(acl.FieldAccessKey), Remote: remoteIP(c.RemoteAddr())}
}

// authorize checks res (and admin) for the sender of req. It returns nil
// when allowed or ACL is off, else the NO_PERMISSION response to send.
func (b *Broker) authorize(c *remoting.Conn, req *protocol.Command, admin bool, res ...acl.Resource) *protocol.Command {
	if b.sec.acl == nil {
		return nil
	}
	if err := b.sec.acl.Authorize(identity(c, req), admin, res...); err != nil {
		return b.errorResponse(c, req, protocol.NoPermission, "%v", err)
	}
	return nil
}

// allowed reports whether id may access res (always, with ACL off).
func (b *Broker) allowed(id acl.Identity, res ...acl.Resource) bool {
	return b.sec.acl == nil || b.sec.acl.Authorize(id, false, res...) == nil
}

// recordResource is what reading a stored record needs: SUB on the topic
// it belongs to. A record parked in a system topic for another (a half,
// delayed or timer message) belongs to its REAL_TOPIC; any other system
// topic record (transaction decisions, ...) is an operator's: admin.
func recordResource(recordTopic string, realTopic string) (res acl.Resource, admin bool) {
	if topic.IsSendForbidden(recordTopic) {
		if realTopic == "" {
			return acl.Resource{}, true
		}
		return acl.Topic(realTopic, acl.Sub), false
	}
	return acl.Topic(recordTopic, acl.Sub), false
}

// decodeSend decodes the send header of any send code (10, 310, 320,
// 324, 325) as handleSend acts on it: the long-name form for 10 and 324,
// the short-name form for the others. The header may be req's own (typed
// by the frame decoder, without a map): changing it changes req.
func decodeSend(req *protocol.Command) (*protocol.SendMessageRequestHeader, error) {
	return protocol.DecodeSendRequest(req)
}

// decodeRecall decodes the header of TideRecallTimer: handle is the
// timer's UNIQ_KEY; topic, its topic, binds the recall to it (without a
// topic the recall is an operator's, in any topic, and admin-only). An
// empty handle is not an error here: no timer has it (QUERY_NOT_FOUND).
func decodeRecall(req *protocol.Command) protocol.RecallTimerRequestHeader {
	var h protocol.RecallTimerRequestHeader
	_ = h.Decode(req.ExtFields)
	return h
}
