// Package segment provides the preallocated, fixed-size, memory-mapped files
// the commit log, the consume queues and the index are made of, and the
// ordered list of such files that forms one logical byte stream.
//
// How data gets in and out, decided by measurements on the CI machine kind
// (docs/store.md has the numbers and the commands):
//
//   - Reads always go through a shared mapping: concurrent, lock-free, no
//     syscall, and a pull copies records straight out of the page cache.
//   - The commit log is written by flush mode. Copying into a writable
//     mapping is the fastest write (6.6-7.6 GB/s against 0.5-1.1 GB/s for
//     one pwrite per 1 KiB record, and pwrite slowed a further 40% with an
//     fdatasync running), so ASYNC_FLUSH copies records into the mapping
//     (Mode MapWrite), like RocketMQ. But fdatasync after writes through a
//     mapping ran at only 290-840/s against 3,200-4,800/s after pwrite on
//     the same preallocated file (writeback must write-protect the mapped
//     pages and the next store faults again), and the fsync rate is what
//     SYNC_FLUSH lives on. So SYNC_FLUSH maps read-only (Mode PWrite) and
//     the commit log's group-commit goroutine writes all staged records
//     with one pwrite before each fdatasync (group write + group commit):
//     64 writers then share each pwrite and each fsync.
//   - Consume queue and index files, fsynced about once a second, take
//     small scattered writes and use a writable mapping of a sparse file
//     (Mode MapWriteSparse): there may be thousands of queues, and
//     reserving 6 MB for each would waste the disk (RocketMQ's files are
//     sparse too). Their mappings are advised MADV_RANDOM: a fault on a
//     hole would otherwise zero-fill a whole readahead window to store one
//     20-byte unit, which with 8,000 queues written round robin took two
//     thirds of the broker's CPU.
//   - New commit log files are fallocated, so a full disk fails at creation and not
//     with SIGBUS on a mapped write, and blocks are reserved (appending to
//     a growing file measured 6-13x slower, perf.md). Zero-filling them as
//     well ("warm", warmMapedFileEnable) makes first writes through a
//     mapping faster (6.6-7.6 GB/s against 0.8-3.2 GB/s on unwritten
//     extents) but costs more CPU than it saves: the zero-fill went through
//     the kernel at about 0.6 GB/s of CPU time, while the store appends at
//     0.4-0.5 GB/s either way; on 2 shared vCPUs that CPU is taken from the
//     appenders and the dispatcher. So warm is off by default, as in
//     RocketMQ. The next commit log file is created in the background (see
//     Queue) so rolling over does not wait, with its first pages
//     prefaulted (PrefaultHead); in use, the commit log keeps a small
//     window past its written end prefaulted (File.Prefault,
//     MADV_POPULATE_WRITE) from a goroutine of its own, off the append
//     lock: commitlog's pretouch.go. SYNC_FLUSH files are always
//     zero-filled (so fdatasync carries no extent conversion), with
//     O_DIRECT writes that bypass the page cache: a fifth or less of the
//     CPU of a buffered fill (zeroFill has the numbers).
//   - fdatasync on the descriptor covers both write paths.
package segment
