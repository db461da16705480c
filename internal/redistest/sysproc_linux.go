package redistest

import "syscall"

// sysProcAttr asks the kernel to kill redis-server if the test binary dies
// without running its cleanups (a panic, or go test's -timeout), so no
// server outlives the test run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
