package store

import (
	"errors"
	"math"
	"os"
	"time"

	"github.com/tidemq/tide/broker/internal/store/checkpoint"
)

// recover restores a consistent state before the store serves anything:
//
//  1. commit log: validate records from the checkpoint on (all of it with
//     no usable checkpoint), truncate after the last valid one;
//  2. consume queues: drop trailing units pointing past that end and
//     correct their minimum to the commit log's start;
//  3. re-dispatch from the checkpoint's logics offset (idempotent: units
//     already present are skipped), so consume queues and index cover
//     every valid record;
//  4. queue offset counters = consume queue max offsets, or past the
//     records the dispatch limit holds back (WithDispatchLimit).
func (s *Store) recover() error {
	_, err := os.Stat(s.cfg.abortPath())
	abnormal := err == nil
	cp, ok, err := checkpoint.Load(s.cfg.checkpointPath())
	if err != nil {
		s.log.Warn("checkpoint unusable, scanning the whole commit log", "err", err)
	}
	from, reput := int64(-1), s.cl.MinOffset()
	if ok {
		from = min(cp.PhysicOffset, cp.LogicsOffset)
		reput = cp.LogicsOffset
	}
	checkCRC := abnormal && s.cfg.CheckCRCOnRecover
	res, err := s.cl.Recover(from, checkCRC)
	if err != nil {
		return err
	}
	if abnormal || res.Reason != nil {
		s.log.Warn("commit log recovered", "abnormal", abnormal, "scanFrom", res.Start, "end", res.End,
			"records", res.Records, "truncatedBytes", res.Truncated, "stopReason", errString(res.Reason))
	}
	for _, e := range res.Skipped {
		s.corrupt.Add(1)
		s.log.Error("commit log damage inside a segment; its rest is skipped", "err", e)
	}
	end := s.cl.MaxOffset()
	clMin := s.cl.MinOffset()
	for _, q := range s.queues() {
		if n := q.Recover(end); n > 0 {
			s.log.Warn("consume queue units past the commit log end dropped", "topic", q.Topic(), "queue", q.ID(), "units", n)
		}
		q.CorrectMinOffset(clMin)
	}
	s.reputFrom = max(clMin, min(reput, end))
	if s.idx != nil {
		// Entries at or past the end point at nothing now; keep indexing
		// from the end then, else skip what the index already holds.
		switch e := s.idx.EndPhyOffset(); {
		case e >= end:
			s.indexFrom = end
		case e > 0:
			s.indexFrom = e + 1 // the newest entry's record is indexed
		}
	}
	s.dispatched.Store(s.reputFrom)
	s.dispatchAvailable()
	for _, q := range s.queues() {
		s.qoff[queueKey{q.Topic(), q.ID()}] = q.MaxOffset()
	}
	if s.reputFrom < end {
		// Held back by the dispatch limit (WithDispatchLimit): the
		// counters go past those records too, as TakeWrites does.
		_, next := s.scanTail(s.reputFrom)
		for k, n := range next {
			s.qoff[k] = max(s.qoff[k], n)
		}
	}
	s.lastCP = cp
	return s.saveCheckpoint(false)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// saveCheckpoint records the durable state. At shutdown everything has
// just been flushed, so both offsets are the end.
func (s *Store) saveCheckpoint(final bool) error {
	cp := s.lastCP
	if final {
		cp.PhysicOffset = s.cl.FlushedOffset()
		cp.LogicsOffset = s.dispatched.Load()
	}
	if cp == s.lastCP && !final {
		if _, err := os.Stat(s.cfg.checkpointPath()); err == nil {
			return nil
		}
	}
	if err := checkpoint.Save(s.cfg.checkpointPath(), cp); err != nil {
		return err
	}
	s.lastCP = cp
	return nil
}

// flushLogics flushes consume queues and index and then advances the
// checkpoint to what is known durable. Called by the flush goroutine and
// Close (never concurrently).
//
// As RocketMQ's FlushConsumeQueueService does, a round that is not
// thorough flushes only the queues with at least flushConsumeQueueLeastPages
// dirty pages, and moves the checkpoint's logics offset no further than
// the first unflushed unit of the queues it left (recovery re-dispatches
// from there); a thorough round (every flushConsumeQueueThoroughInterval,
// and at Close) flushes every queue. With thousands of queues each
// receiving a few messages a second, an fdatasync per queue per second
// was a fifth of the broker's CPU (docs/benchmarks/analysis.md); the price
// is that recovery may re-validate and re-dispatch up to one thorough
// interval of the commit log when a quiet queue holds the logics offset
// back. A process crash loses nothing either way: the page cache keeps
// what the mappings hold.
func (s *Store) flushLogics(thorough bool) error {
	d := s.dispatched.Load() // everything below is in the queues being flushed
	least := int64(s.cfg.FlushConsumeQueueLeastPages) * 4096
	if least <= 0 {
		thorough = true
	}
	var errs []error
	// keep is the lowest commit log offset of a unit left unflushed this
	// round: the logics offset must not pass it.
	keep := int64(math.MaxInt64)
	for _, q := range s.queues() {
		if !thorough && q.DirtyBytes() < least {
			if phy, ok := q.FirstUnflushed(); ok {
				keep = min(keep, phy)
			}
			continue
		}
		if err := q.Flush(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.idx != nil {
		if err := s.idx.Flush(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	cp := s.lastCP
	cp.PhysicOffset = s.cl.FlushedOffset()
	cp.LogicsOffset = min(d, cp.PhysicOffset, keep)
	now := s.now().UnixMilli()
	if cp.PhysicOffset != s.lastCP.PhysicOffset {
		cp.PhysicTimestamp = now
	}
	if cp.LogicsOffset != s.lastCP.LogicsOffset {
		cp.LogicsTimestamp, cp.IndexTimestamp = now, now
	}
	if cp == s.lastCP {
		return nil
	}
	if err := checkpoint.Save(s.cfg.checkpointPath(), cp); err != nil {
		return err
	}
	s.lastCP = cp
	s.indexTS.Store(cp.IndexTimestamp)
	return nil
}

// flushLogicsLoop runs flushLogics every flushIntervalConsumeQueue,
// thoroughly every flushConsumeQueueThoroughInterval, and refreshes the
// disk-full flag.
func (s *Store) flushLogicsLoop() {
	defer s.wg.Done()
	t := newTicker(ms(s.cfg.FlushIntervalConsumeQueue))
	defer t.Stop()
	lastThorough := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.checkDisk()
		thorough := time.Since(lastThorough) >= ms(s.cfg.FlushConsumeQueueThoroughInterval)
		if thorough {
			lastThorough = time.Now()
		}
		s.runMu.Lock()
		err := s.flushLogics(thorough)
		s.runMu.Unlock()
		if err != nil {
			s.log.Error("flush consume queues", "err", err)
		}
	}
}
