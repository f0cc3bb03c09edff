package mqclient

import (
	"sync"
	"time"
)

// faultTable isolates brokers that failed or answered slowly, so that the
// producer's default queue selection avoids them while another broker can
// take the message. Safe for concurrent use.
type faultTable struct {
	mu  sync.Mutex
	m   map[string]time.Time // broker name -> isolated until
	now func() time.Time
}

func (f *faultTable) init() {
	f.m = map[string]time.Time{}
	f.now = time.Now
}

// isolation maps a send latency (or a failure) to how long the broker is
// avoided. Fast brokers are never isolated; the steps follow RocketMQ's
// latency fault strategy, with failures isolating for 30 s.
func isolation(latency time.Duration, failed bool) time.Duration {
	switch {
	case failed:
		return 30 * time.Second
	case latency < 550*time.Millisecond:
		return 0
	case latency < time.Second:
		return 30 * time.Second
	case latency < 2*time.Second:
		return time.Minute
	case latency < 3*time.Second:
		return 2 * time.Minute
	case latency < 15*time.Second:
		return 3 * time.Minute
	}
	return 10 * time.Minute
}

// record notes the outcome of one send to broker.
func (f *faultTable) record(broker string, latency time.Duration, failed bool) {
	d := isolation(latency, failed)
	f.mu.Lock()
	defer f.mu.Unlock()
	if d == 0 {
		delete(f.m, broker)
		return
	}
	f.m[broker] = f.now().Add(d)
}

// available reports whether broker is not isolated now.
func (f *faultTable) available(broker string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	until, ok := f.m[broker]
	if !ok {
		return true
	}
	if f.now().After(until) {
		delete(f.m, broker)
		return true
	}
	return false
}

// isolateFor makes key unavailable for d.
func (f *faultTable) isolateFor(key string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[key] = f.now().Add(d)
}

// clear makes key available again.
func (f *faultTable) clear(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.m) > 0 {
		delete(f.m, key)
	}
}
