package mqclient

import (
	"context"
	"errors"
	"fmt"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TransactionState is the outcome of a local transaction.
type TransactionState int

const (
	// TransactionUnknown leaves the half message to the broker's
	// check-back.
	TransactionUnknown TransactionState = iota
	// TransactionCommit makes the message visible to consumers.
	TransactionCommit
	// TransactionRollback discards it.
	TransactionRollback
)

func (s TransactionState) String() string {
	switch s {
	case TransactionCommit:
		return "COMMIT"
	case TransactionRollback:
		return "ROLLBACK"
	}
	return "UNKNOWN"
}

func (s TransactionState) code() int32 {
	switch s {
	case TransactionCommit:
		return protocol.SysFlagTxCommit
	case TransactionRollback:
		return protocol.SysFlagTxRollback
	}
	return protocol.SysFlagTxNotType
}

// ErrTransactionUnknown, returned by a local transaction function, leaves
// the outcome to the check-back (for example when the database commit
// timed out and its result is unknown).
var ErrTransactionUnknown = errors.New("mqclient: transaction state unknown")

// TransactionChecker answers the broker's check-back for a half message
// whose outcome it never learned (the producer crashed, END_TRANSACTION
// was lost, or the local function returned ErrTransactionUnknown). It must
// look the outcome up in durable state (the local database), never guess:
// returning TransactionRollback for a transaction still in progress loses
// the message. It is called concurrently from transport goroutines; ctx is
// bounded by the request timeout.
type TransactionChecker func(ctx context.Context, msg *MessageExt) TransactionState

// NewTransactionProducer returns a producer that can also send
// transactional messages (SendInTransaction). check answers the broker's
// check-backs; brokers route them to a live producer of the same producer
// group (WithProducerGroup, which should name the application).
func NewTransactionProducer(check TransactionChecker, opts ...Option) (*Producer, error) {
	if check == nil {
		return nil, fmt.Errorf("%w: nil TransactionChecker", ErrInvalidOption)
	}
	p, err := NewProducer(opts...)
	if err != nil {
		return nil, err
	}
	// The Client hands it the check-backs of its producer group from
	// Start to Shutdown (Client.handleCheck).
	p.checker = check
	return p, nil
}

// SendInTransaction sends msg as a half message (invisible to consumers),
// runs local, then commits the message if local returned nil, rolls it
// back if it returned another error, and leaves it to the check-back if it
// returned (an error wrapping) ErrTransactionUnknown or panicked. It
// returns the half message's SendResult, the state sent to the broker and
// local's error (or the send or END_TRANSACTION error). If the half message
// cannot be stored, local is not run. END_TRANSACTION failing is not fatal:
// the check-back then decides, which is why the checker must read durable
// state.
func (p *Producer) SendInTransaction(ctx context.Context, msg *Message, local func(ctx context.Context) error) (*SendResult, TransactionState, error) {
	if err := p.running(); err != nil {
		return nil, TransactionUnknown, err
	}
	if p.checker == nil {
		return nil, TransactionUnknown, fmt.Errorf("%w: not a transaction producer (NewTransactionProducer)", ErrInvalidOption)
	}
	if err := p.before(ctx, msg); err != nil {
		return nil, TransactionUnknown, err
	}
	o, err := p.encode(msg)
	if err != nil {
		return nil, TransactionUnknown, err
	}
	if o.props == nil {
		o.props = map[string]string{}
	}
	o.props[protocol.PropTransactionPrepared] = "true"
	o.props[protocol.PropProducerGroup] = p.s.producerGroup
	o.sysFlag |= protocol.SysFlagTxPrepared
	res, err := p.send(ctx, o, false)
	p.after(ctx, res, err, msg)
	if err != nil {
		return nil, TransactionUnknown, err
	}
	state, lerr := runLocal(ctx, local)
	if state == TransactionUnknown {
		return res, state, lerr
	}
	if err := p.endTransaction(ctx, res, state); err != nil {
		return res, state, errors.Join(lerr, fmt.Errorf("mqclient: end transaction (the check-back will decide): %w", err))
	}
	return res, state, lerr
}

func runLocal(ctx context.Context, local func(context.Context) error) (state TransactionState, err error) {
	defer func() {
		if r := recover(); r != nil {
			state, err = TransactionUnknown, &PanicError{Value: r}
		}
	}()
	err = local(ctx)
	switch {
	case err == nil:
		return TransactionCommit, nil
	case errors.Is(err, ErrTransactionUnknown):
		return TransactionUnknown, err
	}
	return TransactionRollback, err
}

func (p *Producer) endTransaction(ctx context.Context, res *SendResult, state TransactionState) error {
	_, off, err := protocol.ParseOffsetMsgID(res.OffsetMsgID)
	if err != nil {
		return fmt.Errorf("half message id %q: %w", res.OffsetMsgID, err)
	}
	addr, err := p.c.masterAddr(ctx, res.Queue.BrokerName, res.Queue.Topic)
	if err != nil {
		return err
	}
	tid := res.TransactionID
	if tid == "" {
		tid = res.MsgID
	}
	h := protocol.EndTransactionRequestHeader{ProducerGroup: p.s.producerGroup, TranStateTableOffset: res.QueueOffset,
		CommitLogOffset: off, CommitOrRollback: state.code(), MsgID: res.MsgID, TransactionID: tid}
	resp, err := p.c.invoke(ctx, addr, protocol.NewRequest(protocol.EndTransaction, h.Encode(), nil), p.s.requestTimeout)
	if err != nil {
		return err
	}
	return resp.Err()
}

// answerCheck answers one CHECK_TRANSACTION_STATE (header h, half
// message rec) with END_TRANSACTION on the same connection.
func (p *Producer) answerCheck(ctx context.Context, c *remoting.Conn, h *protocol.CheckTransactionStateRequestHeader, rec *protocol.MessageExt) {
	check := p.checker
	m := fromStored(rec, "")
	cctx, cancel := context.WithTimeout(ctx, p.s.requestTimeout)
	state := safeCheck(cctx, check, m)
	cancel()
	if state == TransactionUnknown {
		return
	}
	id := rec.Property(protocol.PropUniqKey)
	if id == "" {
		id = h.MsgID
	}
	tid := rec.Property(protocol.PropTransactionID)
	if tid == "" {
		tid = id
	}
	eh := protocol.EndTransactionRequestHeader{ProducerGroup: p.s.producerGroup, TranStateTableOffset: h.TranStateTableOffset,
		CommitLogOffset: h.CommitLogOffset, CommitOrRollback: state.code(), FromTransactionCheck: true, MsgID: id, TransactionID: tid}
	ectx, cancel := context.WithTimeout(context.Background(), p.s.requestTimeout)
	defer cancel()
	resp, err := c.Invoke(ectx, protocol.NewRequest(protocol.EndTransaction, eh.Encode(), nil))
	if err == nil {
		err = resp.Err()
	}
	if err != nil {
		p.s.logger.Warn("mqclient: end transaction after check-back", "msgId", id, "err", err)
	}
}

func safeCheck(ctx context.Context, check TransactionChecker, m *MessageExt) (s TransactionState) {
	defer func() {
		if recover() != nil {
			s = TransactionUnknown
		}
	}()
	return check(ctx, m)
}
