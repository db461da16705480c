package gateway

import "time"

// SetParkAfter makes idle connections park after d until the test ends.
func SetParkAfter(d time.Duration) (restore func()) {
	old := parkAfter
	parkAfter = d
	return func() { parkAfter = old }
}
