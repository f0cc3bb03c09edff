package broker

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// The request and per-topic metrics are updated on every send and pull.
// WithLabelValues hashes its label values and takes the vector's lock on
// each call (four times per send), so the children are looked up once and
// kept here. The series, their names and labels are the same as without
// the cache, and each is still created on its first update (a topic that
// is only pulled has no messages_in_total series). Children are never
// deleted from the vectors (a deleted topic's series stays, as before), so
// a cached child is never stale.

// childCache holds the children of one vector by label value.
type childCache[T any] struct {
	mu   sync.RWMutex
	m    map[string]T
	with func(label string) T // the vector's WithLabelValues
}

func newChildCache[T any](with func(...string) T) *childCache[T] {
	return &childCache[T]{m: make(map[string]T), with: func(l string) T { return with(l) }}
}

// get returns the child for label, looking it up on first use. The cache
// keeps its own copy of the label: the caller's may be a slice of a
// request's header.
func (c *childCache[T]) get(label string) T {
	c.mu.RLock()
	v, ok := c.m[label]
	c.mu.RUnlock()
	if ok {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok = c.m[label]; !ok {
		label = strings.Clone(label)
		v = c.with(label)
		c.m[label] = v
	}
	return v
}

// topicMetrics are the children of the per-topic vectors in use.
type topicMetrics struct {
	msgsIn, bytesIn, msgsOut *childCache[prometheus.Counter]
	appendTime               *childCache[prometheus.Observer]
}

func newTopicMetrics(m *metrics) topicMetrics {
	return topicMetrics{msgsIn: newChildCache(m.msgsIn.WithLabelValues), bytesIn: newChildCache(m.bytesIn.WithLabelValues),
		msgsOut: newChildCache(m.msgsOut.WithLabelValues), appendTime: newChildCache(m.appendTime.WithLabelValues)}
}

// requestMetrics are the children of the request duration vector in use,
// by request code and response code.
type requestMetrics struct {
	mu sync.RWMutex
	m  map[uint64]prometheus.Observer // by requestKey
}

// requestKey identifies a request duration series: the request code and
// the response code, or held (no response yet).
func requestKey(code int16, resp *protocol.Command) uint64 {
	if resp == nil {
		return uint64(uint16(code))<<32 | 1<<16
	}
	return uint64(uint16(code))<<32 | uint64(uint16(resp.Code))
}

// request returns the request duration series of code answered by resp
// (nil: held), labelled by requestName and the response's code name
// ("HELD" for nil).
func (m *metrics) request(code int16, resp *protocol.Command) prometheus.Observer {
	c := &m.reqCache
	k := requestKey(code, resp)
	c.mu.RLock()
	o, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return o
	}
	outcome := "HELD"
	if resp != nil {
		outcome = protocol.CodeName(resp.Code)
	}
	o = m.requests.WithLabelValues(requestName(code), outcome)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[uint64]prometheus.Observer)
	}
	c.m[k] = o
	c.mu.Unlock()
	return o
}
