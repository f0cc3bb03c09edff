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

// childCache holds the children of one vector by key (a label value, or
// a key several label values are made from).
type childCache[K comparable, T any] struct {
	mu sync.RWMutex
	m  map[K]T
	// with returns the child for a key not cached yet, and the key to
	// keep for it (a copy the caller cannot change).
	with func(k K) (K, T)
}

func newChildCache[K comparable, T any](with func(K) (K, T)) *childCache[K, T] {
	return &childCache[K, T]{m: make(map[K]T), with: with}
}

// newLabelCache caches the children of a vector with one label. It keeps
// its own copy of the label: the caller's may be a slice of a request's
// header.
func newLabelCache[T any](with func(...string) T) *childCache[string, T] {
	return newChildCache(func(l string) (string, T) {
		l = strings.Clone(l)
		return l, with(l)
	})
}

// get returns the child for k, looking it up on first use.
func (c *childCache[K, T]) get(k K) T {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok = c.m[k]; !ok {
		k, v = c.with(k)
		c.m[k] = v
	}
	return v
}

// topicMetrics are the children of the per-topic vectors in use.
type topicMetrics struct {
	msgsIn, bytesIn, msgsOut *childCache[string, prometheus.Counter]
	appendTime               *childCache[string, prometheus.Observer]
}

func newTopicMetrics(m *metrics) topicMetrics {
	return topicMetrics{msgsIn: newLabelCache(m.msgsIn.WithLabelValues), bytesIn: newLabelCache(m.bytesIn.WithLabelValues),
		msgsOut: newLabelCache(m.msgsOut.WithLabelValues), appendTime: newLabelCache(m.appendTime.WithLabelValues)}
}

// requestKey identifies a request duration series: the request code and
// the response code, or held (no response yet).
func requestKey(code int16, resp *protocol.Command) uint64 {
	if resp == nil {
		return uint64(uint16(code))<<32 | requestHeld
	}
	return uint64(uint16(code))<<32 | uint64(uint16(resp.Code))
}

// requestHeld marks the key of a request without a response.
const requestHeld = 1 << 16

// newRequestCache caches the children of the request duration vector by
// requestKey, labelled by requestName and the response's code name
// ("HELD" for none).
func newRequestCache(requests *prometheus.HistogramVec) *childCache[uint64, prometheus.Observer] {
	return newChildCache(func(k uint64) (uint64, prometheus.Observer) {
		outcome := "HELD"
		if k&requestHeld == 0 {
			outcome = protocol.CodeName(int16(uint16(k)))
		}
		return k, requests.WithLabelValues(requestName(int16(uint16(k>>32))), outcome)
	})
}

// request returns the request duration series of code answered by resp
// (nil: held).
func (m *metrics) request(code int16, resp *protocol.Command) prometheus.Observer {
	return m.reqCache.get(requestKey(code, resp))
}
