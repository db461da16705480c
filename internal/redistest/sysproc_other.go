//go:build !linux

package redistest

import "syscall"

// sysProcAttr returns nil: only Linux can tie a child's life to its parent.
// Elsewhere a test binary that dies without cleanups leaves its servers
// running.
func sysProcAttr() *syscall.SysProcAttr { return nil }
