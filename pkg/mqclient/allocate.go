package mqclient

import (
	"crypto/md5"
	"encoding/binary"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// AllocateStrategy splits a clustering group's queues among its members.
// Every member computes the split on its own, so a strategy must be a
// pure function of its arguments: all queues (sorted by topic, broker name
// and queue id), all member ids (sorted), and the caller's id. It returns
// the caller's queues. It is called from one goroutine at a time per
// consumer, but may be shared by consumers.
type AllocateStrategy interface {
	Name() string
	Allocate(queues []Queue, members []string, self string) []Queue
}

// AllocateAveragely gives each member a contiguous block of queues, the
// first members one more when the count does not divide evenly. It is
// RocketMQ's AllocateMessageQueueAveragely, so Java, rocketmq-client-go and
// Tide members of one group agree.
func AllocateAveragely() AllocateStrategy { return averagely{} }

type averagely struct{}

func (averagely) Name() string { return "AVG" }

func (averagely) Allocate(qs []Queue, ids []string, self string) []Queue {
	idx := slices.Index(ids, self)
	if idx < 0 || len(qs) == 0 {
		return nil
	}
	n, c := len(qs), len(ids)
	mod := n % c
	size := 1
	if n > c {
		size = n / c
		if mod > 0 && idx < mod {
			size++
		}
	}
	start := idx*size + mod
	if mod > 0 && idx < mod {
		start = idx * size
	}
	var out []Queue
	for i := 0; i < min(size, n-start); i++ {
		out = append(out, qs[(start+i)%n])
	}
	return out
}

// AllocateByCircle deals queues to members in turn, like cards
// (RocketMQ AllocateMessageQueueAveragelyByCircle).
func AllocateByCircle() AllocateStrategy { return circle{} }

type circle struct{}

func (circle) Name() string { return "AVG_BY_CIRCLE" }

func (circle) Allocate(qs []Queue, ids []string, self string) []Queue {
	idx := slices.Index(ids, self)
	if idx < 0 {
		return nil
	}
	var out []Queue
	for i := idx; i < len(qs); i += len(ids) {
		out = append(out, qs[i])
	}
	return out
}

// AllocateConsistentHash places members on a hash ring with virtualNodes
// points each (10 if <= 0) and gives each queue to the next member on the
// ring, so a joining or leaving member moves few queues. Every member of
// the group must use the same virtualNodes. The ring uses MD5 like
// RocketMQ's AllocateMessageQueueConsistentHash, but the exact placement is
// Tide's own: do not mix it with Java members.
func AllocateConsistentHash(virtualNodes int) AllocateStrategy {
	if virtualNodes <= 0 {
		virtualNodes = 10
	}
	return consistentHash{v: virtualNodes}
}

type consistentHash struct{ v int }

func (consistentHash) Name() string { return "CONSISTENT_HASH" }

func ringHash(s string) uint64 {
	sum := md5.Sum([]byte(s))
	return binary.BigEndian.Uint64(sum[:8])
}

func (h consistentHash) Allocate(qs []Queue, ids []string, self string) []Queue {
	if !slices.Contains(ids, self) {
		return nil
	}
	type point struct {
		h  uint64
		id string
	}
	ring := make([]point, 0, len(ids)*h.v)
	for _, id := range ids {
		for i := 0; i < h.v; i++ {
			ring = append(ring, point{ringHash(id + "-" + strconv.Itoa(i)), id})
		}
	}
	sort.Slice(ring, func(i, j int) bool {
		if ring[i].h != ring[j].h {
			return ring[i].h < ring[j].h
		}
		return ring[i].id < ring[j].id
	})
	var out []Queue
	for _, q := range qs {
		k := ringHash(q.Key())
		i := sort.Search(len(ring), func(i int) bool { return ring[i].h >= k })
		if i == len(ring) {
			i = 0
		}
		if ring[i].id == self {
			out = append(out, q)
		}
	}
	return out
}

// AllocateByMachineRoom considers only queues of brokers in the given
// machine rooms (a broker named "room@name" is in room "room") and splits
// those averagely (RocketMQ AllocateMessageQueueByMachineRoom). Queues of
// other rooms are left to members that list them.
func AllocateByMachineRoom(rooms ...string) AllocateStrategy {
	return machineRoom{rooms: rooms}
}

type machineRoom struct{ rooms []string }

func (machineRoom) Name() string { return "MACHINE_ROOM" }

func (m machineRoom) Allocate(qs []Queue, ids []string, self string) []Queue {
	var in []Queue
	for _, q := range qs {
		room, _, ok := strings.Cut(q.BrokerName, "@")
		if ok && slices.Contains(m.rooms, room) {
			in = append(in, q)
		}
	}
	return averagely{}.Allocate(in, ids, self)
}
