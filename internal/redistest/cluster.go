package redistest

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	// clusterSize is the number of masters in a Cluster.
	clusterSize = 3
	// clusterSlots is the number of hash slots a Redis Cluster divides.
	clusterSlots = 16384
	// clusterTimeout bounds how long the nodes may take to agree on the
	// cluster. They usually need about 2 s (see StartCluster); the margin
	// is for a loaded 2-core machine, where gossip rounds stretch.
	clusterTimeout = 30 * time.Second
	// commandTimeout bounds each setup command sent to a node.
	commandTimeout = 2 * time.Second
)

// Cluster is a real Redis Cluster of three masters and no replicas, each a
// redis-server on its own free loopback port.
type Cluster struct {
	// Addrs are the nodes' addresses, "127.0.0.1:port"; Addrs[i] is
	// Nodes[i].Addr. Any of them serves as a seed for a cluster client.
	Addrs []string
	// Nodes are the node processes, to Stop, Pause or Restart one of them.
	Nodes []*Server
}

// StartCluster starts three cluster-enabled redis-servers, gives each a
// third of the hash slots and its own config epoch, makes every node meet
// every other, and waits until every node reports cluster_state:ok with all
// 16384 slots assigned and all three nodes known. The nodes are killed when
// the test ends.
//
// It does by hand what `redis-cli --cluster create` does, without
// redis-cli's one-second sleeps between gossip checks: with every pair
// meeting directly, each node learns the others' slots in its own
// handshake instead of through rounds of gossip (redis-cli's create took
// 2–8 s on a loaded 2-core machine and once more than 10 s). What remains
// is mostly Redis's own wait: a fresh master reports cluster_state:ok only
// 2 s after it first checks its state (CLUSTER_WRITABLE_DELAY), so a
// cluster takes 2.05–3.02 s on a 2-core machine, measured with
// `go test -count=15 -run 'TestCluster$' -v ./internal/redistest`.
//
// If redis-server is not on PATH, or the cluster is not ok within
// clusterTimeout, StartCluster calls t.Fatal with the nodes' views and the
// tail of their logs.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	c := &Cluster{}
	for range clusterSize {
		n := startServer(t, true, nil)
		c.Nodes = append(c.Nodes, n)
		c.Addrs = append(c.Addrs, n.Addr)
	}
	if err := c.create(); err != nil {
		t.Fatal(err)
	}
	if err := c.waitOK(time.Now().Add(clusterTimeout)); err != nil {
		t.Fatal(err)
	}
	return c
}

// create assigns each node its slot range and config epoch, then sends
// CLUSTER MEET for every pair of nodes.
func (c *Cluster) create() error {
	for i, addr := range c.Addrs {
		first, last := i*clusterSlots/clusterSize, (i+1)*clusterSlots/clusterSize-1
		if err := command(addr, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(first), strconv.Itoa(last)); err != nil {
			return err
		}
		if err := command(addr, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return err
		}
	}
	for i, addr := range c.Addrs {
		for _, other := range c.Addrs[i+1:] {
			host, port, err := net.SplitHostPort(other)
			if err != nil {
				return fmt.Errorf("redistest: node address %q: %w", other, err)
			}
			if err := command(addr, "CLUSTER", "MEET", host, port); err != nil {
				return err
			}
		}
	}
	return nil
}

// command sends one setup command to addr and fails unless it is answered
// without an error reply.
func command(addr string, args ...string) error {
	if _, err := roundTrip(addr, commandTimeout, args...); err != nil {
		return fmt.Errorf("redistest: cluster setup: %w", err)
	}
	return nil
}

// waitOK polls CLUSTER INFO on every node until each is ok, or until
// deadline; on timeout the error shows what every node sees and the tail
// of each node's log.
func (c *Cluster) waitOK(deadline time.Time) error {
	for {
		var err error
		for _, n := range c.Nodes {
			if err = clusterOK(n.Addr); err != nil {
				break
			}
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster not ok within %v: %w\n%s", clusterTimeout, err, c.describe())
		}
		time.Sleep(pollInterval)
	}
}

// describe reports each node's CLUSTER NODES view and its log's tail.
func (c *Cluster) describe() string {
	var b strings.Builder
	for _, n := range c.Nodes {
		nodes, err := roundTrip(n.Addr, commandTimeout, "CLUSTER", "NODES")
		if err != nil {
			nodes = err.Error()
		}
		fmt.Fprintf(&b, "--- node %s: CLUSTER NODES ---\n%s\n--- last %d lines of its log ---\n%s\n",
			n.Addr, strings.TrimSpace(nodes), logTailLines, tail(n.logSince(0), logTailLines))
	}
	return b.String()
}

// clusterOK checks that the node at addr sees the whole cluster: state ok,
// every slot assigned, every node known.
func clusterOK(addr string) error {
	info, err := roundTrip(addr, 500*time.Millisecond, "CLUSTER", "INFO")
	if err != nil {
		return err
	}
	want := map[string]string{
		"cluster_state":          "ok",
		"cluster_slots_assigned": strconv.Itoa(clusterSlots),
		"cluster_known_nodes":    fmt.Sprint(clusterSize),
	}
	for field, v := range want {
		if got := infoField(info, field); got != v {
			return fmt.Errorf("redistest: CLUSTER INFO on %s: %s is %q, want %q", addr, field, got, v)
		}
	}
	return nil
}
