// Package shutdown is the one shutdown sequence of sluice's servers: the
// gateway's (gateway.Gateway.Run) and the decision service's beside it or
// alone (sluice serve). Once the context ends or a server fails, the
// servers say they are stopping (/readyz answers 503), keep serving for
// the shutdown delay so that load balancers take them out of rotation
// (unless one failed), then drain (stop taking requests, answer those in
// flight within the drain timeout), then stop the last one (the admin
// endpoints, so that /readyz answers 503 while the others drain), and
// wait for every server to have returned.
//
// It imports only the standard library: each caller hands it what its
// steps are.
package shutdown

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"
)

// Sequence is one shutdown: what each step does for the servers at hand.
type Sequence struct {
	// Name prefixes the error of an unclean shutdown ("gateway":
	// "gateway: shutdown: ...").
	Name string
	// Delay is server.shutdown_delay: how long the servers keep serving
	// after Stopping; 0: none. A server failing ends it early.
	Delay time.Duration
	// Stopping is called first, once: byServer whether a server returned
	// (with its error or none) before the context ended, delaying whether
	// Delay is waited for. Nil: nothing to do.
	Stopping func(byServer, delaying bool)
	// Drain stops the servers taking requests and waits for those in
	// flight, within the drain timeout; its error makes the shutdown
	// unclean.
	Drain func() error
	// Last, if set, stops what must answer until the drain has ended
	// (the admin endpoints); its error makes the shutdown unclean.
	Last func() error
}

// Run waits until ctx ends or a server fails (a value on errc, nil: it
// stopped without an error), then runs the sequence, then receives the
// remaining of running servers' values on errc. It returns the first
// server's error, else the wrapped error of an unclean Drain or Last,
// else nil.
func (s Sequence) Run(ctx context.Context, errc <-chan error, running int) error {
	var err error
	byServer := false
	select {
	case <-ctx.Done():
	case err = <-errc:
		running--
		byServer = true
	}
	delaying := err == nil && s.Delay > 0
	if s.Stopping != nil {
		s.Stopping(byServer, delaying)
	}
	if delaying {
		select {
		case <-time.After(s.Delay):
		case err = <-errc:
			running--
		}
	}
	stopErr := s.Drain()
	if s.Last != nil {
		stopErr = errors.Join(stopErr, s.Last())
	}
	for ; running > 0; running-- {
		err = cmp.Or(err, <-errc) // the first error, if any
	}
	if err == nil && stopErr != nil {
		err = fmt.Errorf("%s: shutdown: %w", s.Name, stopErr)
	}
	return err
}
