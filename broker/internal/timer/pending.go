package timer

import "sort"

// entry is one pending timer: 24 bytes, the whole per-timer cost of the
// heap. Everything else about the message stays in the commit log.
type entry struct {
	at   int64  // delivery time, Unix ms
	phy  int64  // commit log offset of the timer record
	hash uint64 // maphash of the timer's UNIQ_KEY (0 when it has none)
}

// before orders the heap: by delivery time, then by store order, so
// timers due at the same millisecond are delivered in the order they were
// stored.
func (a entry) before(b entry) bool {
	return a.at < b.at || (a.at == b.at && a.phy < b.phy)
}

// pending is the set of timers waiting for delivery: a binary min-heap by
// (at, phy), an index from UNIQ_KEY hash to commit log offset for recalls
// (recalled timers stay in the heap as tombstones in gone until they
// surface), and the live list of offsets in store order for checkpoints.
// Owned by the service goroutine; not safe for concurrent use.
type pending struct {
	heap []entry
	keys map[uint64]int64   // hash -> phy of the only pending timer with it, or -1: see dups
	dups map[uint64][]int64 // hash -> phys when several pending timers share it (a retried send)
	gone map[int64]struct{} // recalled phys still in the heap
	live liveList
}

func newPending() *pending {
	return &pending{keys: map[uint64]int64{}, dups: map[uint64][]int64{}, gone: map[int64]struct{}{}}
}

// len is the number of timers still to deliver (recalled ones excluded).
func (p *pending) len() int { return p.live.n }

// add inserts a timer; phy must be above every phy added before.
func (p *pending) add(e entry) {
	p.heap = append(p.heap, e)
	p.up(len(p.heap) - 1)
	p.live.add(e.phy)
	if e.hash == 0 {
		return
	}
	switch cur, ok := p.keys[e.hash]; {
	case !ok:
		p.keys[e.hash] = e.phy
	case cur >= 0:
		p.keys[e.hash] = -1
		p.dups[e.hash] = []int64{cur, e.phy}
	default:
		p.dups[e.hash] = append(p.dups[e.hash], e.phy)
	}
}

// candidates returns the phys of pending timers whose key hash is h (a
// copy the caller may keep).
func (p *pending) candidates(h uint64) []int64 {
	cur, ok := p.keys[h]
	switch {
	case !ok:
		return nil
	case cur >= 0:
		return []int64{cur}
	default:
		return append([]int64(nil), p.dups[h]...)
	}
}

func (p *pending) unindex(h uint64, phy int64) {
	if h == 0 {
		return
	}
	cur, ok := p.keys[h]
	if !ok {
		return
	}
	if cur >= 0 {
		if cur == phy {
			delete(p.keys, h)
		}
		return
	}
	d := p.dups[h]
	for i, v := range d {
		if v == phy {
			d = append(d[:i], d[i+1:]...)
			break
		}
	}
	if len(d) == 1 {
		p.keys[h] = d[0]
		delete(p.dups, h)
	} else {
		p.dups[h] = d
	}
}

// recall removes the pending timer at phy (whose key hash is h).
func (p *pending) recall(phy int64, h uint64) {
	if !p.live.remove(phy) {
		return
	}
	p.unindex(h, phy)
	p.gone[phy] = struct{}{}
}

// peek returns the next timer to deliver, discarding recalled ones.
func (p *pending) peek() (entry, bool) {
	for len(p.heap) > 0 {
		e := p.heap[0]
		if _, ok := p.gone[e.phy]; !ok {
			return e, true
		}
		delete(p.gone, e.phy)
		p.popTop()
	}
	return entry{}, false
}

// pop removes the timer peek returned: it is finished (delivered or lost).
func (p *pending) pop() entry {
	e := p.popTop()
	p.live.remove(e.phy)
	p.unindex(e.hash, e.phy)
	return e
}

func (p *pending) popTop() entry {
	h := p.heap
	e := h[0]
	last := len(h) - 1
	h[0] = h[last]
	p.heap = h[:last]
	if last > 0 {
		p.down(0)
	}
	if cap(p.heap) > 1024 && len(p.heap) < cap(p.heap)/4 {
		p.heap = append([]entry(nil), p.heap...)
	}
	return e
}

func (p *pending) up(i int) {
	h := p.heap
	for i > 0 {
		parent := (i - 1) / 2
		if !h[i].before(h[parent]) {
			return
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (p *pending) down(i int) {
	h := p.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// liveList holds the commit log offsets of pending timers in ascending
// (store) order; removed offsets stay as their bitwise complement (a
// negative number) until compaction. It gives the oldest pending timer
// and the checkpoint's pending list without sorting: 8 bytes per timer.
type liveList struct {
	phys []int64
	head int // phys[:head] are all removed
	n    int // live entries
}

func decode(v int64) int64 {
	if v < 0 {
		return ^v
	}
	return v
}

func (l *liveList) add(phy int64) {
	l.phys = append(l.phys, phy)
	l.n++
}

// remove marks phy removed; it reports whether phy was live.
func (l *liveList) remove(phy int64) bool {
	s := l.phys[l.head:]
	i := sort.Search(len(s), func(i int) bool { return decode(s[i]) >= phy })
	if i == len(s) || s[i] != phy {
		return false
	}
	s[i] = ^phy
	l.n--
	for l.head < len(l.phys) && l.phys[l.head] < 0 {
		l.head++
	}
	if dead := len(l.phys) - l.head - l.n; l.head > 1024 && l.head > len(l.phys)/2 || dead > 1024 && dead > l.n {
		l.compact()
	}
	return true
}

func (l *liveList) compact() {
	out := make([]int64, 0, l.n+l.n/4)
	for _, v := range l.phys[l.head:] {
		if v >= 0 {
			out = append(out, v)
		}
	}
	l.phys, l.head = out, 0
}

// min returns the smallest live offset.
func (l *liveList) min() (int64, bool) {
	if l.n == 0 {
		return 0, false
	}
	return l.phys[l.head], true // head is always live or past the end
}

// each calls fn for every live offset in ascending order.
func (l *liveList) each(fn func(phy int64)) {
	for _, v := range l.phys[l.head:] {
		if v >= 0 {
			fn(v)
		}
	}
}
