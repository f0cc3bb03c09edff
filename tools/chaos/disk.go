package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ballastName is the file that fills a broker's store file system during
// a disk-full fault (in the store root, which the broker does not scan).
const ballastName = "chaos-ballast"

// mountStore mounts a tmpfs of sizeMiB at dir, so that a disk-full fault
// fills a file system of the broker's own rather than the machine's.
func mountStore(dir string, sizeMiB int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return run("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", sizeMiB), "tmpfs", dir)
}

// unmountStore unmounts dir (lazily: a daemon that is still exiting may
// hold a file).
func unmountStore(dir string) error { return run("umount", "-l", dir) }

// FillDisk fills the file system holding dir until pct percent of it is
// used, with one fallocated ballast file. It returns the ballast's size.
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
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, want); err != nil {
		return 0, fmt.Errorf("fallocate %d bytes: %w", want, err)
	}
	return want, nil
}

// FreeDisk removes the ballast FillDisk created.
func FreeDisk(dir string) error {
	err := os.Remove(filepath.Join(dir, ballastName))
	if os.IsNotExist(err) {
		return nil
	}
	return err
}
