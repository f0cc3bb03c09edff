package pidstate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/tidemq/tide/broker/internal/jsonfile"
)

// Snapshot is the table written to disk by the follower: everything the
// commit log holds below Offset is in it. On start the broker loads it and
// applies the commit log from Offset on (Follower.CatchUp).
//
// File layout (JSON, jsonfile's atomic replace; written compact, a queue a
// line, shown indented here):
//
//	{"offset": <commit log offset covered>,
//	 "producers": [{"id": 46116..., "epoch": 1733..., "lastUsed": 1733...,
//	   "queues": [{"topic": "t", "queueId": 1, "epoch": 1733..., "floor": 0,
//	     "runs": [{"seq": 17, "qo": 40, "phys": [1024], "born": 1733..., "end": 1230}]}]}]}
type Snapshot struct {
	Offset    int64          `json:"offset"`
	Producers []snapProducer `json:"producers"`
}

type snapProducer struct {
	ID       int64       `json:"id"`
	Epoch    int64       `json:"epoch"`
	LastUsed int64       `json:"lastUsed"`
	Queues   []snapQueue `json:"queues"`
}

type snapQueue struct {
	Topic   string `json:"topic"`
	QueueID int32  `json:"queueId"`
	Epoch   int64  `json:"epoch"`
	Floor   int64  `json:"floor"`
	Runs    []Run  `json:"runs"`
}

// queueRef and producerRef list the table for a snapshot: taken under the
// table lock (pointers only), each queue then encoded under its own lock,
// so a snapshot never copies the whole table nor holds a lock while
// writing.
type queueRef struct {
	key QueueKey
	q   *queueState
}

type producerRef struct {
	id, epoch, lastUsed int64
	queues              []queueRef
}

func (t *Table) refs() []producerRef {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]producerRef, 0, len(t.producers))
	for id, p := range t.producers {
		pr := producerRef{id: id, epoch: p.epoch, lastUsed: p.lastUsed, queues: make([]queueRef, 0, len(p.queues))}
		for k, q := range p.queues {
			pr.queues = append(pr.queues, queueRef{k, q})
		}
		out = append(out, pr)
	}
	return out
}

// writeSnapshot streams the table as a Snapshot (compact JSON, one queue
// a line) covering the commit log below offset. With thousands of queues
// the snapshot is megabytes: encoding it whole in memory every
// pidSnapshotInterval raised the broker's heap (and, at GOGC=400, its
// RSS) by several times that.
func (t *Table) writeSnapshot(w io.Writer, offset int64) error {
	// A queue is encoded into buf under its lock and written after: a
	// write that blocks on the disk never holds a sender's queue.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if _, err := fmt.Fprintf(w, `{"offset":%d,"producers":[`, offset); err != nil {
		return err
	}
	for i, p := range t.refs() {
		sep := ""
		if i > 0 {
			sep = ","
		}
		if _, err := fmt.Fprintf(w, "%s\n{\"id\":%d,\"epoch\":%d,\"lastUsed\":%d,\"queues\":[", sep, p.id, p.epoch, p.lastUsed); err != nil {
			return err
		}
		for j, r := range p.queues {
			if j > 0 {
				if _, err := io.WriteString(w, ","); err != nil {
					return err
				}
			}
			buf.Reset()
			r.q.mu.Lock()
			err := enc.Encode(snapQueue{Topic: r.key.Topic, QueueID: r.key.QueueID, Epoch: r.q.epoch, Floor: r.q.floor, Runs: r.q.runs})
			r.q.mu.Unlock()
			if err != nil {
				return err
			}
			if _, err := w.Write(buf.Bytes()); err != nil {
				return err
			}
		}
		if _, err := io.WriteString(w, "]}"); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "]}\n")
	return err
}

// restore replaces the table's content with s.
func (t *Table) restore(s *Snapshot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.producers = make(map[int64]*producer, len(s.Producers))
	for _, sp := range s.Producers {
		p := &producer{epoch: sp.Epoch, lastUsed: sp.LastUsed, queues: make(map[QueueKey]*queueState, len(sp.Queues))}
		for _, sq := range sp.Queues {
			p.queues[QueueKey{sq.Topic, sq.QueueID}] = &queueState{runs: sq.Runs, floor: sq.Floor, epoch: sq.Epoch}
		}
		t.producers[sp.ID] = p
	}
}

// Save writes the table as covering the commit log below offset.
func (t *Table) Save(path string, offset int64) error {
	if err := jsonfile.SaveWith(path, func(w io.Writer) error { return t.writeSnapshot(w, offset) }); err != nil {
		return fmt.Errorf("pidstate: %w", err)
	}
	return nil
}

// Load replaces the table with the snapshot at path and returns the
// offset it covers; found is false (and the table untouched) without one.
func (t *Table) Load(path string) (offset int64, found bool, err error) {
	var s Snapshot
	found, err = jsonfile.Load(path, &s)
	if err != nil || !found {
		return 0, found, err
	}
	t.restore(&s)
	return s.Offset, true, nil
}
