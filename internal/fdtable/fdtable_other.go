//go:build !linux

package fdtable

// Reserve does nothing but on Linux: it returns 0 and no error.
func Reserve(int) (int, error) { return 0, nil }
