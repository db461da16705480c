package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"
)

// clusterSize is the number of masters in a Cluster.
const clusterSize = 3

// Cluster is a real Redis Cluster of three masters and no replicas, each a
// redis-server on its own free loopback port.
type Cluster struct {
	// Addrs are the nodes' addresses, "127.0.0.1:port"; Addrs[i] is
	// Nodes[i].Addr. Any of them serves as a seed for a cluster client.
	Addrs []string
	// Nodes are the node processes, to Stop, Pause or Restart one of them.
	Nodes []*Server
}

// StartCluster starts three cluster-enabled redis-servers, joins them into
// a cluster with `redis-cli --cluster create`, and waits until every node
// reports cluster_state:ok with all 16384 slots assigned. The nodes are
// killed when the test ends. Startup takes about three seconds, nearly all
// of it redis-cli waiting, in one-second sleeps, for the nodes to agree on
// the configuration.
//
// If redis-server or redis-cli is not on PATH, or the cluster is not ok
// within 10 seconds of its creation, StartCluster calls t.Fatal.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	c := &Cluster{}
	for range clusterSize {
		n := startServer(t, true, nil)
		c.Nodes = append(c.Nodes, n)
		c.Addrs = append(c.Addrs, n.Addr)
	}
	if err := createCluster(lookPath(t, "redis-cli"), c.Addrs); err != nil {
		t.Fatal(err)
	}
	if err := c.waitOK(time.Now().Add(startTimeout)); err != nil {
		t.Fatal(err)
	}
	return c
}

// createCluster runs redis-cli to assign the slots across addrs and make
// the nodes meet, failing with redis-cli's output.
func createCluster(cli string, addrs []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.WaitDelay = time.Second // bounds Wait even if the pipes stay open
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("redistest: redis-cli --cluster create %v: %w\n--- last %d lines of output ---\n%s",
			addrs, err, logTailLines, tail(string(out), logTailLines))
	}
	return nil
}

// waitOK polls CLUSTER INFO on every node until each is ok, or until
// deadline.
func (c *Cluster) waitOK(deadline time.Time) error {
	for _, n := range c.Nodes {
		for {
			err := clusterOK(n.Addr)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("redistest: cluster not ok within %v: %w\n--- last %d lines of node log ---\n%s",
					startTimeout, err, logTailLines, tail(n.logSince(0), logTailLines))
			}
			time.Sleep(pollInterval)
		}
	}
	return nil
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
		"cluster_slots_assigned": "16384",
		"cluster_known_nodes":    fmt.Sprint(clusterSize),
	}
	for field, v := range want {
		if got := infoField(info, field); got != v {
			return fmt.Errorf("redistest: CLUSTER INFO on %s: %s is %q, want %q", addr, field, got, v)
		}
	}
	return nil
}
