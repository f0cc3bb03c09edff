package broker

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/tidemq/tide/broker/internal/acl"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// ACL that follows the master. The master's plain ACL document travels in
// the slave's metadata sync (BrokerMetadata.ACL); a slave with aclEnable
// writes it to its own ACL file and reloads, so that a promoted slave
// enforces the accounts and permissions the old master enforced. The
// admin requests UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG and
// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (RocketMQ 4.x) edit the file of the
// broker they reach.

// masterACL is the master's side: its document as it enforces it, nil
// when ACL is off (the slave then keeps its own file).
func (b *Broker) masterACL() *protocol.PlainACLConfig {
	if b.sec.acl == nil {
		return nil
	}
	d := b.sec.acl.Config().Document()
	return &d
}

// aclChecksum is the checksum of the ACL in force ("" with ACL off): a
// held metadata poll ends when it changes, so an ACL change reaches the
// slaves at once.
func (b *Broker) aclChecksum() string {
	if b.sec.acl == nil {
		return ""
	}
	return b.sec.acl.Config().Checksum()
}

// applyMasterACL is the slave's side of the ACL sync. Nothing happens when
// the master sent no document (ACL off there, or a master from before
// the ACL sync), when this broker has ACL off (it enforces nothing, and
// a file it does not read would be a surprise; it warns once, since after
// a failover it would serve without ACL), or when it already enforces a
// document with the master's checksum.
func (b *Broker) applyMasterACL(master string, doc *protocol.PlainACLConfig) {
	if doc == nil || b.isMaster() {
		return
	}
	v := b.sec.acl
	if v == nil {
		if b.aclOffWarned.CompareAndSwap(false, true) {
			b.log.Warn("the master enforces ACL but this broker has aclEnable=false: its ACL is not copied, and after a failover this broker would serve without ACL",
				"master", master)
		}
		return
	}
	sum := doc.Checksum
	if sum == "" {
		sum = protocol.ACLChecksum(doc)
	}
	if sum == v.Config().Checksum() {
		return
	}
	if err := v.Replace(acl.FromDocument(doc)); err != nil {
		// retried at every sync, logged once per document (a read-only
		// or bind-mounted file would log every 2 s)
		if prev, _ := b.aclSyncFailed.Swap(sum).(string); prev != sum {
			b.log.Error("apply the master's ACL, own file kept (the directory of the file must be writable, and the file not a mount point: it is replaced by a rename)",
				"master", master, "file", v.Path(), "err", err)
		}
		return
	}
	b.aclSyncFailed.Store("")
	b.log.Info("ACL replaced by the master's", "master", master, "file", v.Path(), "accounts", len(doc.Accounts), "checksum", sum)
}

// handleUpdateACL serves UPDATE_AND_CREATE_ACL_CONFIG.
func (b *Broker) handleUpdateACL(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.CreateAccessConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.UpdateAndCreateACLFailed, "bad header: %v", err)
	}
	return b.editACL(c, req, protocol.UpdateAndCreateACLFailed, "account created or updated", h.AccessKey, func(f *acl.File) error {
		acl.UpsertAccount(f, &h)
		return nil
	})
}

// handleDeleteACL serves DELETE_ACL_CONFIG.
func (b *Broker) handleDeleteACL(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.DeleteAccessConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.DeleteACLFailed, "bad header: %v", err)
	}
	return b.editACL(c, req, protocol.DeleteACLFailed, "account deleted", h.AccessKey, func(f *acl.File) error {
		return acl.DeleteAccount(f, h.AccessKey)
	})
}

// handleUpdateGlobalWhite serves UPDATE_GLOBAL_WHITE_ADDRS_CONFIG.
func (b *Broker) handleUpdateGlobalWhite(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.UpdateGlobalWhiteAddrsConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.UpdateGlobalWhiteAddrsFail, "bad header: %v", err)
	}
	return b.editACL(c, req, protocol.UpdateGlobalWhiteAddrsFail, "globalWhiteRemoteAddresses replaced", h.GlobalWhiteAddrs, func(f *acl.File) error {
		f.GlobalWhiteRemoteAddresses = protocol.SplitList(h.GlobalWhiteAddrs)
		return nil
	})
}

// handleACLInfo serves GET_BROKER_CLUSTER_ACL_INFO: the version of the ACL
// in force and, for Tide, its checksum. A broker with ACL off answers
// SYSTEM_ERROR, as RocketMQ's (it has no plain ACL validator then).
func (b *Broker) handleACLInfo(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	v := b.sec.acl
	if v == nil {
		return b.errorResponse(c, req, protocol.SystemError, "aclEnable is false on broker %s: there is no ACL version to show", b.addr)
	}
	ver := v.Version()
	files, _ := json.Marshal(map[string]protocol.DataVersion{v.Path(): ver})
	h := protocol.GetBrokerACLConfigResponseHeader{Version: string(ver.Encode()), AllACLFileVersion: string(files),
		BrokerName: b.opts.BrokerName, BrokerAddr: b.addr, ClusterName: b.opts.BrokerClusterName, TideACLChecksum: v.Config().Checksum()}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtFields = h.Encode()
	return resp
}

// editACL applies edit to the broker's ACL file and answers. A broker with
// ACL off answers fail (RocketMQ's broker has no validator to update then
// and fails the same way). On a slave the edit is applied, as RocketMQ
// does (mqadmin sends ACL updates to every broker of a cluster), but the
// remark says that its master's document replaces it at the next sync.
func (b *Broker) editACL(c *remoting.Conn, req *protocol.Command, fail int16, what, subject string, edit func(*acl.File) error) *protocol.Command {
	v := b.sec.acl
	if v == nil {
		return b.errorResponse(c, req, fail, "aclEnable is false on broker %s: there is no ACL to change", b.addr)
	}
	if err := v.Update(edit); err != nil {
		if errors.Is(err, acl.ErrConfig) || errors.Is(err, acl.ErrNoAccount) {
			return b.errorResponse(c, req, fail, "%v", err)
		}
		return b.errorResponse(c, req, fail, "acl file %s: %v", v.Path(), err)
	}
	b.log.Info("ACL changed by an admin request", "change", what, "subject", subject, "file", v.Path(), "by", c.RemoteAddr())
	b.meta.ring() // held metadata polls answer now: the slaves get the change at once
	remark := ""
	if !b.isMaster() {
		remark = "applied on a slave: its master's ACL replaces it at the next metadata sync; change the master"
	}
	return protocol.NewResponse(req, protocol.Success, remark)
}
