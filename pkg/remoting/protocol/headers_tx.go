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
//
//rmq:codec
type EndTransactionRequestHeader struct {
	ProducerGroup        string `rmq:"producerGroup,required"`
	TranStateTableOffset int64  `rmq:"tranStateTableOffset,required"` // queue offset of the half message
	CommitLogOffset      int64  `rmq:"commitLogOffset,required"`      // commit log offset of the half message
	CommitOrRollback     int32  `rmq:"commitOrRollback,required"`
	FromTransactionCheck bool   `rmq:"fromTransactionCheck"`
	MsgID                string `rmq:"msgId,required"`
	TransactionID        string `rmq:"transactionId"` // often empty
}

// validate is Java's checkFields, called by the generated Decode.
func (h *EndTransactionRequestHeader) validate() error {
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
//
//rmq:codec
type CheckTransactionStateRequestHeader struct {
	TranStateTableOffset int64  `rmq:"tranStateTableOffset,required"`
	CommitLogOffset      int64  `rmq:"commitLogOffset,required"`
	MsgID                string `rmq:"msgId"`
	TransactionID        string `rmq:"transactionId"`
	OffsetMsgID          string `rmq:"offsetMsgId"`
}
