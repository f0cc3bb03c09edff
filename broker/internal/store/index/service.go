package index

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tidemq/tide/broker/internal/clock"
	"github.com/tidemq/tide/broker/internal/store/segment"
)

// Options configure a Service.
type Options struct {
	Dir      string
	SlotNum  int // maxHashSlotNum
	IndexNum int // maxIndexNum
}

// Service is the set of index files. Put is called by one goroutine (the
// dispatcher); Query, Flush and RemoveBefore are safe concurrently with it.
type Service struct {
	opts  Options
	mu    sync.RWMutex
	files []*file // oldest first; the last is the one being filled
}

// Open opens every index file in opts.Dir.
func Open(opts Options) (*Service, error) {
	if opts.SlotNum <= 0 || opts.IndexNum <= 1 {
		return nil, fmt.Errorf("index: slot num %d, index num %d", opts.SlotNum, opts.IndexNum)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	ents, err := os.ReadDir(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	s := &Service{opts: opts}
	var names []string
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".tmp" {
			os.Remove(filepath.Join(opts.Dir, e.Name()))
			continue
		}
		if len(e.Name()) == 17 && !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	for _, n := range names {
		x, err := openFile(filepath.Join(opts.Dir, n), opts.SlotNum, opts.IndexNum)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.files = append(s.files, x)
	}
	return s, nil
}

// Put indexes key (already "topic#key") for the record at phy stored at
// storeTS (ms), rolling to a new file when the current one is full.
func (s *Service) Put(key string, phy, storeTS int64) error {
	return s.put(keyHash(key), phy, storeTS)
}

// PutTopicKey is Put(topic+"#"+string(key), phy, storeTS) without
// building the key (the dispatcher's path: no allocation per entry for
// ASCII topics and keys). key is not retained.
func (s *Service) PutTopicKey(topic string, key []byte, phy, storeTS int64) error {
	return s.put(topicKeyHash(topic, key), phy, storeTS)
}

func (s *Service) put(h int32, phy, storeTS int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cur *file
	if n := len(s.files); n > 0 {
		cur = s.files[n-1]
	}
	if cur == nil || cur.full() {
		now := clock.Now()
		if cur != nil {
			// Names must stay unique and ordered, even for files created
			// within one millisecond or after a clock step back.
			if last, err := time.ParseInLocation("20060102150405.000", cur.name[:14]+"."+cur.name[14:], time.Local); err == nil && now.UnixMilli() <= last.UnixMilli() {
				now = last.Add(time.Millisecond)
			}
		}
		x, err := createFile(s.opts.Dir, now, s.opts.SlotNum, s.opts.IndexNum)
		if err != nil {
			return err
		}
		s.files = append(s.files, x)
		cur = x
	}
	cur.put(h, phy, storeTS)
	return nil
}

// Query returns up to max commit log offsets of records indexed under key
// with store times in [begin, end] ms, newest file first. Offsets may
// include hash collisions and stale entries: callers check the records.
func (s *Service) Query(key string, max int, begin, end int64) []int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []int64
	for i := len(s.files) - 1; i >= 0 && len(out) < max; i-- {
		x := s.files[i]
		if x.count() <= 1 || x.endTS() < begin-1000 || x.beginTS() > end {
			continue
		}
		out = x.query(out, key, max, begin, end)
	}
	return out
}

// Flush makes every file durable.
func (s *Service) Flush() error {
	s.mu.RLock()
	files := slices.Clone(s.files)
	s.mu.RUnlock()
	for _, x := range files {
		if !x.dirty.Swap(false) {
			continue
		}
		x.f.SetFlushedPosition(0)
		if _, err := x.f.Flush(); err != nil && !errors.Is(err, segment.ErrClosed) {
			x.dirty.Store(true)
			return err
		}
	}
	return nil
}

// RemoveBefore deletes files (never the current one) whose entries all
// point before clMin, and returns how many.
func (s *Service) RemoveBefore(clMin int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for n < len(s.files)-1 && s.files[n].endPhy() < clMin {
		s.files[n].f.Remove()
		n++
	}
	s.files = slices.Delete(s.files, 0, n)
	return n
}

// EndPhyOffset returns the commit log offset of the newest entry (0 when
// empty); re-dispatch after recovery skips records below it.
func (s *Service) EndPhyOffset() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := len(s.files) - 1; i >= 0; i-- {
		if s.files[i].count() > 1 {
			return s.files[i].endPhy()
		}
	}
	return 0
}

// Files returns the number of index files.
func (s *Service) Files() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.files)
}

// Close unmaps every file. It does not flush.
func (s *Service) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.files {
		x.f.Close()
	}
	s.files = nil
}
