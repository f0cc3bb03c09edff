package mqclient

import (
	"hash/fnv"
	"sync/atomic"
)

// QueueSelector picks the queue a message is sent to among the topic's
// writable queues (never empty, sorted by broker name and queue id). It is
// called concurrently and must not keep queues.
type QueueSelector interface {
	Select(msg *Message, queues []Queue) Queue
}

// QueueSelectorFunc adapts a function to QueueSelector.
type QueueSelectorFunc func(msg *Message, queues []Queue) Queue

// Select calls f.
func (f QueueSelectorFunc) Select(msg *Message, queues []Queue) Queue { return f(msg, queues) }

// RoundRobin returns a selector that cycles through the queues.
func RoundRobin() QueueSelector { return &roundRobin{} }

type roundRobin struct{ n atomic.Uint64 }

func (r *roundRobin) Select(_ *Message, qs []Queue) Queue {
	return qs[(r.n.Add(1)-1)%uint64(len(qs))]
}

// ByHash returns a selector that maps key(msg) to a queue with FNV-1a, so
// equal keys share a queue as long as the queue count does not change.
// Messages whose key is empty go round robin.
func ByHash(key func(*Message) string) QueueSelector {
	return &byHash{key: key}
}

type byHash struct {
	key func(*Message) string
	rr  roundRobin
}

func (h *byHash) Select(m *Message, qs []Queue) Queue {
	k := h.key(m)
	if k == "" {
		return h.rr.Select(m, qs)
	}
	return qs[hashIndex(k, len(qs))]
}

func hashIndex(k string, n int) int {
	f := fnv.New32a()
	f.Write([]byte(k))
	return int(f.Sum32() % uint32(n))
}

// ByShardingKey is the default selector: ByHash on Message.ShardingKey,
// round robin for messages without one.
func ByShardingKey() QueueSelector {
	return ByHash(func(m *Message) string { return m.ShardingKey })
}
