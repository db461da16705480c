package redistest

import (
	"fmt"
	"net"
	"strconv"
)

// maxClusterPort keeps a cluster node's bus port (port+10000) below 65536.
const maxClusterPort = 55000

// freePort returns a loopback port that was free a moment ago. With bus set,
// the port is below maxClusterPort and port+10000 was free as well, as a
// cluster node needs both. Another process may still take the port before
// redis-server binds it; callers retry with a new port when that happens.
func freePort(bus bool) (int, error) {
	const attempts = 100
	for range attempts {
		port, err := probePort(0)
		if err != nil {
			return 0, err
		}
		if !bus {
			return port, nil
		}
		if port >= maxClusterPort {
			continue
		}
		if _, err := probePort(port + 10000); err == nil {
			return port, nil
		}
	}
	return 0, fmt.Errorf("redistest: no free port pair (port, port+10000) after %d attempts", attempts)
}

// probePort listens on 127.0.0.1:port, closes the listener and returns the
// port that was bound (the kernel's choice when port is 0).
func probePort(port int) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return 0, fmt.Errorf("redistest: find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
