package store

import (
	"fmt"
	"syscall"
	"time"
)

// Retention (RocketMQ CleanCommitLogService and friends). Every
// cleanResourceInterval:
//   - usage >= diskSpaceWarningLevelRatio: writes are refused (ErrDiskFull)
//     until usage drops again (also re-checked every consume-queue flush);
//   - at a deleteWhen hour, or usage >= diskMaxUsedSpaceRatio: commit log
//     segments older than fileReservedTime hours are deleted;
//   - usage >= diskSpaceCleanForciblyRatio: the oldest segments are deleted
//     even if not expired.
// At most deleteFileBatchMax segments go per round, never the current one
// nor one the dispatcher has not finished. Consume-queue and index files
// whose entries all point below the new commit log start follow; reads
// below it then report OffsetTooSmall / MessageWasRemoving with the new
// minimum.

func (s *Store) cleanLoop() {
	defer s.wg.Done()
	t := newTicker(ms(s.cfg.CleanResourceInterval))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.Clean(false)
	}
}

// Clean runs one retention round now; manual deletes expired segments
// whatever the hour and disk usage (RocketMQ's manual delete). It returns
// the number of commit log segments deleted. Safe concurrently with
// everything else.
func (s *Store) Clean(manual bool) int {
	usage := s.checkDisk()
	hours, _ := parseDeleteWhen(s.cfg.DeleteWhen)
	now := s.now()
	expiredTime := manual || hours[now.Hour()] || usage >= s.cfg.DiskMaxUsedSpaceRatio
	force := usage >= s.cfg.DiskSpaceCleanForciblyRatio
	if !expiredTime && !force {
		return 0
	}
	n := s.deleteSegments(now, force)
	if n > 0 {
		s.log.Info("retention deleted commit log segments", "count", n, "newMinOffset", s.cl.MinOffset(), "diskUsagePercent", usage, "forced", force)
		s.checkDisk()
	}
	return n
}

func (s *Store) deleteSegments(now time.Time, force bool) int {
	files := s.cl.Segments()
	reserved := time.Duration(s.cfg.FileReservedTime) * time.Hour
	dispatched := s.dispatched.Load()
	n := 0
	for i := 0; i+1 < len(files) && n < s.cfg.DeleteFileBatchMax; i++ {
		next := files[i+1]
		if next.Base() > dispatched {
			break
		}
		// A segment's last record was stored just before the next
		// segment's first one; that time says when it expired.
		last, err := s.storeTime(next.Base())
		if err != nil {
			last = files[i].ModTime()
		}
		if !force && now.Sub(time.UnixMilli(last)) < reserved {
			break
		}
		n++
	}
	if n == 0 {
		return 0
	}
	n = s.cl.RemoveFront(n)
	clMin := s.cl.MinOffset()
	for _, q := range s.queues() {
		q.RemoveBefore(clMin)
	}
	if s.idx != nil {
		s.idx.RemoveBefore(clMin)
	}
	return n
}

// checkDisk refreshes the disk-full flag and returns the usage percent.
func (s *Store) checkDisk() int {
	usage, err := s.usage()
	if err != nil {
		s.log.Warn("disk usage unknown", "err", err)
		return 0
	}
	full := usage >= s.cfg.DiskSpaceWarningLevelRatio
	if full != s.diskFull.Swap(full) {
		if full {
			s.log.Error("disk nearly full, refusing writes", "usagePercent", usage, "limit", s.cfg.DiskSpaceWarningLevelRatio)
		} else {
			s.log.Info("disk usage back below the limit, accepting writes", "usagePercent", usage)
		}
	}
	return usage
}

// DiskFull reports whether writes are being refused for lack of space.
func (s *Store) DiskFull() bool { return s.diskFull.Load() }

// diskUsage returns the used percentage of the file system holding dir,
// counting blocks reserved for root as used (what df shows).
func diskUsage(dir string) (int, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	total := st.Blocks - st.Bfree + st.Bavail
	if total == 0 {
		return 0, nil
	}
	used := st.Blocks - st.Bfree
	return int((used*100 + total - 1) / total), nil
}
