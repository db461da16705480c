//go:build !linux

package idlepark

import "time"

// Parker is not available here: New returns ErrUnsupported.
type Parker struct{}

// New returns ErrUnsupported: there is no epoll.
func New(Options) (*Parker, error) { return nil, ErrUnsupported }

// Park returns ErrUnsupported, c left open.
func (p *Parker) Park(Conn, time.Duration, func(), any) error { return ErrUnsupported }

// Parked is 0.
func (p *Parker) Parked() int { return 0 }

// Close does nothing.
func (p *Parker) Close() error { return nil }
