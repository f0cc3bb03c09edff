package store

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/tidemq/tide/broker/internal/store/consumequeue"
)

// openQueues opens every consumequeue/<topic>/<queueId> directory.
func (s *Store) openQueues() error {
	root := s.cfg.consumeQueueDir()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	topics, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, t := range topics {
		if !t.IsDir() {
			continue
		}
		ids, err := os.ReadDir(filepath.Join(root, t.Name()))
		if err != nil {
			return err
		}
		for _, d := range ids {
			id, err := strconv.ParseInt(d.Name(), 10, 32)
			if !d.IsDir() || err != nil || id < 0 {
				continue
			}
			q, err := consumequeue.Open(filepath.Join(root, t.Name(), d.Name()), t.Name(), int32(id), s.cfg.MappedFileSizeConsumeQueue)
			if err != nil {
				return err
			}
			s.cqs[queueKey{t.Name(), int32(id)}] = q
		}
	}
	return nil
}

// queue returns the consume queue of topic/id, creating it when create is
// set; nil when it does not exist.
func (s *Store) queue(topic string, id int32, create bool) *consumequeue.Queue {
	k := queueKey{topic, id}
	s.cqMu.RLock()
	q := s.cqs[k]
	s.cqMu.RUnlock()
	if q != nil || !create {
		return q
	}
	s.cqMu.Lock()
	defer s.cqMu.Unlock()
	if q = s.cqs[k]; q != nil {
		return q
	}
	q, err := consumequeue.Open(filepath.Join(s.cfg.consumeQueueDir(), topic, itoa(id)), topic, id, s.cfg.MappedFileSizeConsumeQueue)
	if err != nil {
		s.log.Error("open consume queue", "topic", topic, "queue", id, "err", err)
		return nil
	}
	s.cqs[k] = q
	return q
}

func (s *Store) queues() []*consumequeue.Queue {
	s.cqMu.RLock()
	defer s.cqMu.RUnlock()
	out := make([]*consumequeue.Queue, 0, len(s.cqs))
	for _, q := range s.cqs {
		out = append(out, q)
	}
	return out
}

// Topics returns every topic with a consume queue and its queue ids, sorted.
func (s *Store) Topics() map[string][]int32 {
	out := map[string][]int32{}
	for _, q := range s.queues() {
		out[q.Topic()] = append(out[q.Topic()], q.ID())
	}
	for _, ids := range out {
		slices.Sort(ids)
	}
	return out
}

// DeleteTopics removes the consume queues and queue offset counters of
// the topics. Their records stay in the commit log until retention.
func (s *Store) DeleteTopics(topics ...string) {
	del := map[string]bool{}
	for _, t := range topics {
		del[t] = true
	}
	s.cqMu.Lock()
	var gone []*consumequeue.Queue
	for k, q := range s.cqs {
		if del[k.topic] {
			gone = append(gone, q)
			delete(s.cqs, k)
		}
	}
	s.cqMu.Unlock()
	s.offMu.Lock()
	for k := range s.qoff {
		if del[k.topic] {
			delete(s.qoff, k)
		}
	}
	s.offMu.Unlock()
	for _, q := range gone {
		q.Destroy()
	}
	for t := range del {
		os.Remove(filepath.Join(s.cfg.consumeQueueDir(), t))
	}
}
