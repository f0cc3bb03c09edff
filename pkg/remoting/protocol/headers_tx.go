package protocol

import "fmt"

// Transactions (codes 37, 39)

// Values of EndTransactionRequestHeader.CommitOrRollback: the transaction
// bits of a message sysFlag.
const (
	TransactionUnknown  = SysFlagTxNotType  // 0: keep the half message, check back later
	TransactionCommit   = SysFlagTxCommit   // 8
	TransactionRollback = SysFlagTxRollback // 12
)

// EndTransactionRequestHeader is END_TRANSACTION (37). Required:
// producerGroup, tranStateTableOffset, commitLogOffset, commitOrRollback,
// msgId. Decode also rejects a commitOrRollback other than 0, 8 or 12
// (ErrBadField), as Java's checkFields does.
type EndTransactionRequestHeader struct {
	ProducerGroup        string
	TranStateTableOffset int64 // queue offset of the half message
	CommitLogOffset      int64 // commit log offset of the half message
	CommitOrRollback     int32
	FromTransactionCheck bool
	MsgID                string
	TransactionID        string // often empty
}

// Encode implements Header.
func (h *EndTransactionRequestHeader) Encode() map[string]string {
	return map[string]string{
		"producerGroup":        h.ProducerGroup,
		"tranStateTableOffset": itoa64(h.TranStateTableOffset),
		"commitLogOffset":      itoa64(h.CommitLogOffset),
		"commitOrRollback":     itoa32(h.CommitOrRollback),
		"fromTransactionCheck": btoa(h.FromTransactionCheck),
		"msgId":                h.MsgID,
		"transactionId":        h.TransactionID,
	}
}

// Decode implements Header.
func (h *EndTransactionRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = EndTransactionRequestHeader{
		ProducerGroup:        r.str("producerGroup", true),
		TranStateTableOffset: r.i64("tranStateTableOffset", true),
		CommitLogOffset:      r.i64("commitLogOffset", true),
		CommitOrRollback:     r.i32("commitOrRollback", true),
		FromTransactionCheck: r.bool("fromTransactionCheck", false),
		MsgID:                r.str("msgId", true),
		TransactionID:        r.str("transactionId", false),
	}
	if r.err != nil {
		return r.err
	}
	switch h.CommitOrRollback {
	case TransactionUnknown, TransactionCommit, TransactionRollback:
		return nil
	}
	return fmt.Errorf("%w: commitOrRollback=%d, want 0, 8 or 12", ErrBadField, h.CommitOrRollback)
}

// CheckTransactionStateRequestHeader is CHECK_TRANSACTION_STATE (39),
// broker to client. Required: tranStateTableOffset, commitLogOffset.
// rocketmq-client-go v2.1.2 trusts only the two offsets (its decoder
// mixes up the string fields).
type CheckTransactionStateRequestHeader struct {
	TranStateTableOffset int64
	CommitLogOffset      int64
	MsgID                string
	TransactionID        string
	OffsetMsgID          string
}

// Encode implements Header.
func (h *CheckTransactionStateRequestHeader) Encode() map[string]string {
	return map[string]string{
		"tranStateTableOffset": itoa64(h.TranStateTableOffset),
		"commitLogOffset":      itoa64(h.CommitLogOffset),
		"msgId":                h.MsgID,
		"transactionId":        h.TransactionID,
		"offsetMsgId":          h.OffsetMsgID,
	}
}

// Decode implements Header.
func (h *CheckTransactionStateRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = CheckTransactionStateRequestHeader{
		TranStateTableOffset: r.i64("tranStateTableOffset", true),
		CommitLogOffset:      r.i64("commitLogOffset", true),
		MsgID:                r.str("msgId", false),
		TransactionID:        r.str("transactionId", false),
		OffsetMsgID:          r.str("offsetMsgId", false),
	}
	return r.err
}
