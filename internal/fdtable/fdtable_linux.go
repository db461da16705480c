package fdtable

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Reserve grows the process's descriptor table to hold n descriptors,
// or as many as the soft RLIMIT_NOFILE allows if that is fewer. It opens
// two descriptors for a moment (an eventfd and its duplicate at the
// table's last place) and closes them: the table keeps its size.
func Reserve(n int) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("fdtable: getrlimit: %w", err)
	}
	if lim.Cur < uint64(n) {
		n = int(lim.Cur)
	}
	if n <= 0 {
		return nil
	}
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("fdtable: eventfd: %w", err)
	}
	defer unix.Close(fd)
	if fd >= n-1 {
		return nil // already that large
	}
	last, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, n-1)
	if err != nil {
		return fmt.Errorf("fdtable: dup to descriptor %d: %w", n-1, err)
	}
	return unix.Close(last)
}
