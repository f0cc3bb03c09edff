package pidstate

import (
	"fmt"

	"github.com/tidemq/tide/broker/internal/jsonfile"
)

// Snapshot is the table written to disk by the follower: everything the
// commit log holds below Offset is in it. On start the broker loads it and
// applies the commit log from Offset on (Follower.CatchUp).
//
// File layout (JSON, jsonfile's atomic replace):
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

// snapshot copies the table.
func (t *Table) snapshot(offset int64) *Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := &Snapshot{Offset: offset, Producers: make([]snapProducer, 0, len(t.producers))}
	for id, p := range t.producers {
		sp := snapProducer{ID: id, Epoch: p.epoch, LastUsed: p.lastUsed}
		for k, q := range p.queues {
			q.mu.Lock()
			runs := make([]Run, len(q.runs))
			for i, r := range q.runs {
				r.Phys = append([]int64(nil), r.Phys...)
				runs[i] = r
			}
			sp.Queues = append(sp.Queues, snapQueue{Topic: k.Topic, QueueID: k.QueueID, Epoch: q.epoch, Floor: q.floor, Runs: runs})
			q.mu.Unlock()
		}
		s.Producers = append(s.Producers, sp)
	}
	return s
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
	if err := jsonfile.Save(path, t.snapshot(offset)); err != nil {
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
