package broker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/tidemq/tide/broker/internal/acl"
	"github.com/tidemq/tide/broker/internal/timer"
	"github.com/tidemq/tide/broker/internal/transaction"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// newTransactions builds the transaction service (after the store host is
// known, since committed copies carry it).
// endWait bounds how long END_TRANSACTION waits for the transaction
// service's recovery after a start.
const endWait = 10 * time.Second

func (b *Broker) newTransactions() (*transaction.Service, error) {
	o := b.opts
	return transaction.New(transaction.Options{
		Store:     b.store,
		Check:     b.sendCheck,
		StatePath: filepath.Join(o.Store.StorePathRootDir, "config", "transaction.json"),
		StoreHost: b.storeHost,
		Timeout:   time.Duration(o.TransactionTimeOut) * time.Millisecond,
		Interval:  time.Duration(o.TransactionCheckInterval) * time.Millisecond,
		MaxChecks: o.TransactionCheckMax,
		Divert:    b.divertCommitted,
		Created: func(t string) {
			if _, created, err := b.topics.CreateSystem(t, 1, protocol.PermRead|protocol.PermWrite); err == nil && created {
				b.registry.Trigger()
			}
		},
		BeforeRecover: b.hooks.beforeRestore,
		Logger:        b.log,
	})
}

// sendCheck sends a check-back to the producer of group heard from most
// recently. Under aclEnable only a producer whose account has PUB on the
// half message's topic qualifies: the check carries the message, and a
// heartbeat naming a producer group proves nothing.
func (b *Broker) sendCheck(ctx context.Context, group string, req *protocol.Command) error {
	var need acl.Resource
	if b.sec.acl != nil {
		v, err := protocol.ViewRecord(req.Body, false)
		if err != nil {
			return fmt.Errorf("check-back body: %w", err)
		}
		need = acl.Topic(string(v.Topic), acl.Pub)
	}
	for _, m := range b.clients.ProducerChannels(group) {
		c, ok := m.Channel.(*remoting.Conn)
		if !ok {
			continue
		}
		if b.sec.acl != nil {
			id, _ := c.Value(identityKey{}).(acl.Identity)
			if !b.allowed(id, need) {
				b.log.Warn("check-back not sent to a producer without PUB on the topic", "group", group, "client", m.ClientID,
					"accessKey", id.AccessKey, "topic", need.Name)
				continue
			}
		}
		if err := c.InvokeOneway(ctx, req); err != nil {
			b.log.Debug("check-back to producer failed, trying another", "group", group, "client", m.ClientID, "err", err)
			continue
		}
		return nil
	}
	return transaction.ErrNoProducer
}

// handleEndTransaction serves END_TRANSACTION: 8 commits, 12 rolls back,
// 0 (unknown) leaves the half message to the check-back.
func (b *Broker) handleEndTransaction(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.EndTransactionRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "bad end-transaction header: %v", err)
	}
	if !b.isMaster() {
		return b.errorResponse(c, req, protocol.SlaveNotAvailable, "the broker[%s] is a slave; end transactions on the master", b.addr)
	}
	var d transaction.Decision
	switch h.CommitOrRollback {
	case protocol.SysFlagTxCommit:
		d = transaction.Commit
	case protocol.SysFlagTxRollback:
		d = transaction.Rollback
	default: // unknown: the check-back will ask again
		b.log.Debug("transaction state unknown, left for check-back", "group", h.ProducerGroup, "msgId", h.MsgID, "fromCheck", h.FromTransactionCheck)
		return protocol.NewResponse(req, protocol.Success, "")
	}
	if refused := b.authorizeEnd(c, req, &h); refused != nil {
		return refused
	}
	// After a restart the decision waits for the transaction service's
	// recovery (it must know the decisions taken before); a bounded wait,
	// then SYSTEM_BUSY (the producer's check-back answers again later).
	ctx, cancel := context.WithTimeout(ctx, endWait)
	defer cancel()
	out, err := b.tx().End(ctx, transaction.EndRequest{ProducerGroup: h.ProducerGroup, TranStateTableOffset: h.TranStateTableOffset,
		CommitLogOffset: h.CommitLogOffset, Decision: d, FromCheck: h.FromTransactionCheck})
	if err != nil {
		code := protocol.SystemError
		if errors.Is(err, transaction.ErrNotReady) {
			code = protocol.SystemBusy
		}
		return b.errorResponse(c, req, code, "end transaction %s for msgId %s: %v", d, h.MsgID, err)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	switch out {
	case transaction.Duplicate:
		resp.Remark = "duplicate decision ignored"
	case transaction.Conflict:
		resp.Remark = "another decision was taken first; ignored"
	}
	return resp
}

// authorizeEnd checks, under aclEnable, that the sender of an
// END_TRANSACTION may decide the half message it names: the request's
// producerGroup must be the half message's, and its account needs PUB on
// the half message's real topic (the topic the commit writes to).
func (b *Broker) authorizeEnd(c *remoting.Conn, req *protocol.Command, h *protocol.EndTransactionRequestHeader) *protocol.Command {
	if b.sec.acl == nil {
		return nil
	}
	half, err := b.store.LookMessage(h.CommitLogOffset)
	if err != nil || half.Topic != transaction.HalfTopic {
		return b.errorResponse(c, req, protocol.SystemError, "end transaction: no half message at commit log offset %d", h.CommitLogOffset)
	}
	if g := half.Property(protocol.PropProducerGroup); g != h.ProducerGroup {
		return b.errorResponse(c, req, protocol.NoPermission, "%v: the half message at %d belongs to producer group %q, not %q",
			acl.ErrDenied, h.CommitLogOffset, g, h.ProducerGroup)
	}
	return b.authorize(c, req, false, acl.Topic(half.Property(protocol.PropRealTopic), acl.Pub))
}

// handleListHalf serves TideListHalfMessages. Under aclEnable it lists
// only the half messages of topics the account has PUB on.
func (b *Broker) handleListHalf(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	tx := b.tx()
	if b.isMaster() && !tx.Recovered() {
		return b.errorResponse(c, req, protocol.SystemBusy, "%v after the broker's start; retry shortly", transaction.ErrNotReady)
	}
	list := tx.List()
	if b.sec.acl != nil {
		id, mine := identity(c, req), list[:0]
		for _, h := range list {
			if b.allowed(id, acl.Topic(h.Topic, acl.Pub)) {
				mine = append(mine, h)
			}
		}
		list = mine
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = protocol.EncodeHalfMessages(list)
	return resp
}

func (b *Broker) handleResumeHalf(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.HalfActionRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, endWait)
	defer cancel()
	if err := b.tx().Resume(ctx, h.TranStateTableOffset, operator(c, h.Operator)); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "%v", err)
	}
	return protocol.NewResponse(req, protocol.Success, "")
}

func (b *Broker) handleForceEnd(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.HalfActionRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return b.errorResponse(c, req, protocol.SystemError, "%v", err)
	}
	var d transaction.Decision
	switch h.CommitOrRollback {
	case protocol.SysFlagTxCommit:
		d = transaction.Commit
	case protocol.SysFlagTxRollback:
		d = transaction.Rollback
	default:
		return b.errorResponse(c, req, protocol.SystemError, "commitOrRollback must be 8 (commit) or 12 (rollback), got %q", req.Ext("commitOrRollback"))
	}
	ctx, cancel := context.WithTimeout(ctx, endWait)
	defer cancel()
	out, err := b.tx().Force(ctx, h.TranStateTableOffset, d, operator(c, h.Operator))
	if err != nil {
		code := protocol.SystemError
		if errors.Is(err, transaction.ErrNotFound) {
			code = protocol.QueryNotFound
		}
		return b.errorResponse(c, req, code, "%v", err)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	if out != transaction.Applied {
		resp.Remark = "a decision was already taken; nothing changed"
	}
	return resp
}

// operator names who asked for an admin action, for the audit log: the
// operator the request names (if any) at the caller's address.
func operator(c *remoting.Conn, op string) string {
	if op != "" {
		return op + "@" + c.RemoteAddr().String()
	}
	return c.RemoteAddr().String()
}

// HalfMessages lists the pending and parked half messages, oldest first,
// as TideListHalfMessages answers them, for an embedding program (tests
// and tools in the same process). It works whatever TideExtensions says:
// it is not a client request. Safe for concurrent use once started.
func (b *Broker) HalfMessages() []protocol.HalfMessage { return b.tx().List() }

// handleRecallTimer serves TideRecallTimer: ext handle = the UNIQ_KEY of a
// timer message, topic = its topic (the recall cancels only a timer of
// that topic; checkACL asked for PUB on it, or admin without a topic).
// SUCCESS means the timer will never fire; QUERY_NOT_FOUND that no pending
// timer of the topic has this handle; a remark tells when it already
// fired.
func (b *Broker) handleRecallTimer(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	r := decodeRecall(req)
	handle := r.Handle
	err := b.timers().Recall(ctx, r.Topic, handle)
	switch {
	case err == nil:
		b.log.Info("timer recalled", "handle", handle, "by", operator(c, req.Ext("operator")))
		return protocol.NewResponse(req, protocol.Success, "")
	case errors.Is(err, timer.ErrAlreadyDelivered):
		return b.errorResponse(c, req, protocol.TideAlreadyDelivered, "timer %s already delivered", handle)
	case errors.Is(err, timer.ErrNotFound), errors.Is(err, timer.ErrBadHandle):
		return b.errorResponse(c, req, protocol.QueryNotFound, "%v: %s", err, handle)
	default:
		return b.errorResponse(c, req, protocol.SystemError, "recall %s: %v", handle, err)
	}
}
