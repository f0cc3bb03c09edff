package protocol

import "time"

// TideGetElectionHistory (Tide extension of the controller): the
// controller's replicated history of master elections, the last
// MaxElectionHistory per broker group, oldest first. Header:
// GetElectionHistoryRequestHeader (brokerName empty: every group); body
// of the response: ElectionHistory. Every controller node answers from
// the state it has applied (a follower may lag the leader by the entries
// in flight); a RocketMQ controller answers REQUEST_CODE_NOT_SUPPORTED.
const TideGetElectionHistory int16 = 10050

// MaxElectionHistory is how many elections the controller keeps per
// broker group.
const MaxElectionHistory = 100

// GetElectionHistoryRequestHeader is the header of TideGetElectionHistory.
//
//rmq:codec
type GetElectionHistoryRequestHeader struct {
	BrokerName string `rmq:"brokerName,omitempty"` // empty: every group
}

// Election is one master election as the controller applied it: the
// master of Group changed from OldMaster to NewMaster (NoBrokerID: none)
// at master epoch Epoch, with the SyncStateSet that followed.
type Election struct {
	// Time is when the leader proposed the election (its clock); zero for
	// elections replayed from a log written before the history existed.
	Time          time.Time `json:"time"`
	Group         string    `json:"group"`
	OldMaster     int64     `json:"oldMaster"`
	OldMasterAddr string    `json:"oldMasterAddr,omitempty"`
	NewMaster     int64     `json:"newMaster"`
	NewMasterAddr string    `json:"newMasterAddr,omitempty"`
	Epoch         int32     `json:"epoch"` // the master epoch after the election
	// Reason is what triggered it: "controller" (the leader found the
	// master dead), "broker" (a broker's CONTROLLER_ELECT_MASTER) or
	// "admin" (an operator's designated election); empty when unknown.
	Reason       string  `json:"reason,omitempty"`
	SyncStateSet []int64 `json:"syncStateSet"`
}

// ElectionHistory is the body of the TideGetElectionHistory response.
type ElectionHistory struct {
	Elections []Election `json:"elections"`
}

// Encode returns the JSON body ([] for none).
func (h *ElectionHistory) Encode() []byte {
	c := *h
	if c.Elections == nil {
		c.Elections = []Election{}
	}
	return mustMarshal(c)
}

// DecodeElectionHistory parses a TideGetElectionHistory body.
func DecodeElectionHistory(data []byte) (*ElectionHistory, error) {
	var h ElectionHistory
	if err := decodeBody("election history", data, &h); err != nil {
		return nil, err
	}
	return &h, nil
}
