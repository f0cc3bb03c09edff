package timer

import (
	"math"
	"sync"
	"time"
)

// latenessBounds are the upper bounds of the lateness histogram buckets;
// a final bucket (Le = Inf) takes the rest.
var latenessBounds = []time.Duration{
	0, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond, time.Second,
	2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute,
}

// Inf is the Le of the histogram's last bucket.
const Inf = time.Duration(math.MaxInt64)

// Bucket is one cumulative histogram bucket: Count deliveries were at most
// Le late (Prometheus style).
type Bucket struct {
	Le    time.Duration
	Count int64
}

// Lateness summarises delivery lateness: the store time of the delivered
// message (as the service's clock saw it after the put) minus the
// requested delivery time. Never negative.
type Lateness struct {
	Count   int64
	Sum     time.Duration
	Last    time.Duration
	Max     time.Duration
	Buckets []Bucket // cumulative, ascending Le, last Le is Inf
}

// Quantile returns an upper bound of the q-quantile (0 < q <= 1): the Le
// of the first bucket holding it (Max for the last bucket), 0 without data.
func (l Lateness) Quantile(q float64) time.Duration {
	if l.Count == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(l.Count)))
	for _, b := range l.Buckets {
		if b.Count >= rank {
			if b.Le == Inf {
				return l.Max
			}
			return min(b.Le, l.Max)
		}
	}
	return l.Max
}

type latenessRecorder struct {
	mu     sync.Mutex
	counts []int64 // per bucket, allocated on first use
	l      Lateness
}

func (r *latenessRecorder) record(d time.Duration) {
	d = max(d, 0)
	i := len(latenessBounds)
	for j, b := range latenessBounds {
		if d <= b {
			i = j
			break
		}
	}
	r.mu.Lock()
	if r.counts == nil {
		r.counts = make([]int64, len(latenessBounds)+1)
	}
	r.counts[i]++
	r.l.Count++
	r.l.Sum += d
	r.l.Last = d
	r.l.Max = max(r.l.Max, d)
	r.mu.Unlock()
}

func (r *latenessRecorder) snapshot() Lateness {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.l
	l.Buckets = make([]Bucket, 0, len(latenessBounds)+1)
	var cum int64
	for i := range len(latenessBounds) + 1 {
		if r.counts != nil {
			cum += r.counts[i]
		}
		le := Inf
		if i < len(latenessBounds) {
			le = latenessBounds[i]
		}
		l.Buckets = append(l.Buckets, Bucket{Le: le, Count: cum})
	}
	return l
}
