package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Event types, as in Jepsen: an operation is invoked, then completes as ok
// (it happened), fail (it definitely did not happen) or info (unknown: a
// timeout or a lost connection; it may have happened). Deliveries and
// faults are single ok/info events.
const (
	Invoke = "invoke"
	OK     = "ok"
	Fail   = "fail"
	Info   = "info"
)

// Operations recorded in a history.
const (
	OpSetup   = "setup"   // the run's configuration: groups and their topics
	OpSend    = "send"    // one message, sync
	OpAsync   = "async"   // one message, SendAsync (the outcome is its callback's)
	OpBatch   = "batch"   // several messages in one request
	OpOrdered = "ordered" // one message of a key's sequence (ShardingKey)
	OpTx      = "tx"      // a transactional message with an intended outcome
	OpDelay   = "delay"   // a message with a RocketMQ 4 delay level
	OpTimer   = "timer"   // a message with DeliverAt (timer message)
	OpRecall  = "recall"  // recall of a timer message (Admin.RecallTimer)
	OpConsume = "consume" // a delivery to a consumer group
	OpFault   = "fault"   // a fault started (invoke) or healed (ok)
	OpHeal    = "heal"    // every fault healed, producers stopped
	OpDrain   = "drain"   // the consumers' drain ended (ok: all seen; info: deadline)
	OpOffset  = "offset"  // a group's committed offset of a queue, read from the master, when it changed
	OpMaster  = "master"  // the NameServers route another broker as master (Detail: its address)
	// OpOffsetMoved is a broker's PULL_OFFSET_MOVED answer to a group's
	// pull of Queue (Offset: the offset it told the consumer to move to,
	// Detail: the offset asked for), read from the broker's log after the
	// drain: these events come last in a history, with the log's times.
	OpOffsetMoved = "offset-moved"
	// OpPromoted is a broker's promotion to master in controller mode
	// (Process: its host), read from its log after the drain like
	// OpOffsetMoved: the offsets watcher sees a change of master only
	// when its 2 s poll of the NameServers' route shows it, which can be
	// seconds after the promotion.
	OpPromoted = "promoted"
	// OpReset is an operator's reset of a group's committed offset of a
	// queue (offset-reset fault; Offset: the offset after it).
	OpReset = "offset-reset"
	// OpCrash is a daemon that exited without being killed by a fault
	// (Process: its name, Detail: how it ended).
	OpCrash = "crash"
)

// Event is one line of a history file (JSON lines).
//
// Message operations name their messages by ID, the id the workload gave
// each message (user property chaos-id and the message key), unique in a
// run. A batch carries several IDs.
type Event struct {
	Time    time.Time `json:"time"`
	Index   int64     `json:"index"`
	Process string    `json:"process"`
	Type    string    `json:"type"`
	Op      string    `json:"op"`

	Topic string   `json:"topic,omitempty"`
	IDs   []string `json:"ids,omitempty"`
	Key   string   `json:"key,omitempty"` // ordering key (OpOrdered)
	Seq   int      `json:"seq,omitempty"` // position in the key's sequence, from 1

	// Intent is a transaction's intended outcome: "commit" or "rollback",
	// and "unknown-commit"/"unknown-rollback" when the local transaction
	// answers UNKNOWN and the check-back decides.
	Intent string `json:"intent,omitempty"`
	// NotBefore is the earliest time a delayed or timer message may be
	// delivered.
	NotBefore *time.Time `json:"not_before,omitempty"`
	// Status is the broker's send status (SEND_OK, FLUSH_SLAVE_TIMEOUT, ...).
	Status string `json:"status,omitempty"`
	// MsgID is the broker's message id (UNIQ_KEY) of a send or delivery.
	MsgID string `json:"msg_id,omitempty"`
	Error string `json:"error,omitempty"`

	// Deliveries.
	Group     string     `json:"group,omitempty"`
	Client    string     `json:"client,omitempty"` // "tide" or "official"
	Queue     string     `json:"queue,omitempty"`
	Offset    int64      `json:"offset,omitempty"`
	StoreTime *time.Time `json:"store_time,omitempty"`
	Reconsume int32      `json:"reconsume,omitempty"`

	// Faults.
	Fault  string `json:"fault,omitempty"`
	Target string `json:"target,omitempty"`
	Detail string `json:"detail,omitempty"`
	// SkewMS is a clock-jump fault's step of the broker's wall clock in
	// milliseconds (negative: back).
	SkewMS int64 `json:"skew_ms,omitempty"`

	// Setup: consumer group -> topics it must receive, and ordered groups.
	Groups  map[string][]string `json:"groups,omitempty"`
	Ordered []string            `json:"ordered_groups,omitempty"`
	Config  map[string]string   `json:"config,omitempty"`
}

// Recorder appends events to a history file. It is safe for concurrent
// use; each event gets its time and index under one lock, so the file's
// order is the order of the events' times. Close flushes and closes.
type Recorder struct {
	mu    sync.Mutex
	f     *os.File
	w     *bufio.Writer
	enc   *json.Encoder
	n     int64
	err   error
	count map[string]int64 // op/type -> events
}

// NewRecorder creates (truncates) the history file at path.
func NewRecorder(path string) (*Recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	return &Recorder{f: f, w: w, enc: json.NewEncoder(w), count: map[string]int64{}}, nil
}

// Record stamps e with the current time and the next index and writes it.
// It returns the stamped event.
func (r *Recorder) Record(e Event) Event {
	return r.RecordAt(e, time.Now())
}

// RecordAt records e with time at: an event observed earlier (a daemon's
// log line) and recorded now.
func (r *Recorder) RecordAt(e Event, at time.Time) Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Time = at
	r.n++
	e.Index = r.n
	r.count[e.Op+"/"+e.Type]++
	if r.err == nil {
		r.err = r.enc.Encode(&e)
	}
	return e
}

// Flush writes buffered events to the file.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = r.w.Flush()
	}
	return r.err
}

// Counts returns the number of events per "op/type".
func (r *Recorder) Counts() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.count))
	for k, v := range r.count {
		out[k] = v
	}
	return out
}

// Close flushes and closes the file; it returns the first write error.
func (r *Recorder) Close() error {
	err := r.Flush()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadHistory parses a history file. A last line without its newline is
// an event still being written (a campaign that is running, or was
// killed): it is left out. Any other line that does not parse is an error.
func ReadHistory(rd io.Reader) ([]Event, error) {
	br := bufio.NewReaderSize(rd, 64<<10)
	var out []Event
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err == io.EOF {
			return out, nil // b, if any, is an unfinished last line
		}
		if err != nil {
			return out, err
		}
		if len(b) <= 1 {
			continue
		}
		var e Event
		if err := json.Unmarshal(b, &e); err != nil {
			return out, fmt.Errorf("%w: line %d: %v", ErrBadHistory, line, err)
		}
		out = append(out, e)
	}
}

// ReadHistoryFile parses the history file at path.
func ReadHistoryFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadHistory(f)
}
