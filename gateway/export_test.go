package gateway

import "time"

// SetParkAfter makes idle connections park after d (after their first
// answer too) until the test ends.
func SetParkAfter(d time.Duration) (restore func()) { return SetParkWaits(d, d) }

// SetParkWaits makes idle connections park first after their first
// answer, later after a later one, until the test ends.
func SetParkWaits(first, later time.Duration) (restore func()) {
	oldFirst, old := parkFirst, parkAfter
	parkFirst, parkAfter = first, later
	return func() { parkFirst, parkAfter = oldFirst, old }
}
