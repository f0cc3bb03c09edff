package chaos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// ballastName is the file that fills a broker's store file system during
// a disk-full fault (in the store root, which the broker does not scan).
const ballastName = "chaos-ballast"

// A broker's store is an ext4 file system of its own, on a loop device
// whose image lives on a tmpfs:
//
//	<host>/disk   tmpfs (the image's RAM, sizeMiB + slack)
//	<host>/disk/store.img  ->  loop device  ->  ext4 at <host>/store
//
// so a disk-full fault fills the broker's file system, not the
// machine's, writes fail with ENOSPC the way they do on a real disk, and a
// slow-disk fault can throttle the block device the broker writes to (a
// tmpfs has none).

// diskDir is the tmpfs holding the image of the store at dir.
func diskDir(dir string) string { return filepath.Join(filepath.Dir(dir), "disk") }

// mountStore creates and mounts the store file system of sizeMiB at dir.
// It returns the mount points, innermost first (the order to unmount).
func mountStore(dir string, sizeMiB int) ([]string, error) {
	disk := diskDir(dir)
	for _, d := range []string{dir, disk} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := run("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", sizeMiB+16), "tmpfs", disk); err != nil {
		return nil, err
	}
	img := filepath.Join(disk, "store.img")
	// -m 0: no blocks reserved for root (the broker runs as root), so
	// "full" means full; lazy init off: no background writes of its own.
	steps := [][]string{
		{"truncate", "-s", fmt.Sprintf("%dM", sizeMiB), img},
		{"mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0", img},
		{"mount", "-t", "ext4", "-o", "loop", img, dir}, // the loop device is freed on unmount
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			_ = unmountStore([]string{disk})
			return nil, err
		}
	}
	return []string{dir, disk}, nil
}

// unmountStore unmounts the mount points mountStore returned (lazily: a
// daemon that is still exiting may hold a file).
func unmountStore(mounts []string) error {
	var errs []error
	for _, m := range mounts {
		errs = append(errs, run("umount", "-l", m))
	}
	return errors.Join(errs...)
}

// FillDisk fills the file system holding dir until pct percent of it is
// used, with one fallocated ballast file (pct 100: until fallocate finds
// no free block). It returns the ballast's size.
func FillDisk(dir string, pct int) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bs := int64(st.Bsize)
	total := int64(st.Blocks-st.Bfree+st.Bavail) * bs
	used := int64(st.Blocks-st.Bfree) * bs
	want := total*int64(pct)/100 - used
	if want <= 0 {
		return 0, nil
	}
	f, err := os.OpenFile(filepath.Join(dir, ballastName), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if pct < 100 {
		if err := syscall.Fallocate(int(f.Fd()), 0, 0, want); err != nil {
			return 0, fmt.Errorf("fallocate %d bytes: %w", want, err)
		}
		return want, nil
	}
	// Every free block: allocate in shrinking steps until ENOSPC at one
	// block (metadata takes some of what statfs reported free).
	var size int64
	for step := want; step >= bs; {
		if err := syscall.Fallocate(int(f.Fd()), 0, size, step); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				return size, fmt.Errorf("fallocate %d bytes at %d: %w", step, size, err)
			}
			step /= 2
			continue
		}
		size += step
	}
	return size, nil
}

// FreeDisk removes the ballast FillDisk created.
func FreeDisk(dir string) error {
	err := os.Remove(filepath.Join(dir, ballastName))
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

// blkioRoot is the cgroup v1 blkio hierarchy; the tool's own processes
// are in its root group.
const blkioRoot = "/sys/fs/cgroup/blkio"

// SlowDisk throttles the writes of process pid to the block device of the
// file system at dir (the store's loop device) to bps bytes and iops
// operations per second, by moving it into a blkio cgroup of its own
// (name). The broker's fsyncs then wait for the throttled writes.
func SlowDisk(name string, pid int, dir string, bps, iops int) error {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return err
	}
	dev := fmt.Sprintf("%d:%d", devMajor(st.Dev), devMinor(st.Dev))
	cg := filepath.Join(blkioRoot, name)
	if err := os.MkdirAll(cg, 0o755); err != nil {
		return fmt.Errorf("blkio cgroup: %w", err)
	}
	for file, v := range map[string]int{"blkio.throttle.write_bps_device": bps, "blkio.throttle.write_iops_device": iops} {
		if err := os.WriteFile(filepath.Join(cg, file), []byte(dev+" "+strconv.Itoa(v)), 0o644); err != nil {
			return fmt.Errorf("blkio %s: %w", file, err)
		}
	}
	return os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

// FastDisk ends SlowDisk: pid (0: none, e.g. it was restarted) goes back
// to the root group and the cgroup is removed.
func FastDisk(name string, pid int) error {
	cg := filepath.Join(blkioRoot, name)
	if _, err := os.Stat(cg); os.IsNotExist(err) {
		return nil
	}
	var errs []error
	if pid > 0 {
		if err := os.WriteFile(filepath.Join(blkioRoot, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, os.Remove(cg))
	return errors.Join(errs...)
}

// devMajor and devMinor split a Linux dev_t.
func devMajor(dev uint64) uint64 { return (dev >> 8) & 0xfff }
func devMinor(dev uint64) uint64 { return (dev & 0xff) | ((dev >> 12) & 0xfff00) }
