// Command idleconns measures what idle keep-alive connections cost a
// server: it reads the resident memory (VmRSS) of the server's process and
// its children, opens -n connections and sends one request on each
// (reading the whole answer), waits, reads it again, closes them all,
// waits -settle and reads it a third time; with -tls the connections are
// TLS (the server's certificate is not checked: a bench on loopback, with
// a certificate made for it). It prints one line:
//
//	idle: conns=N before_kb=.. open_kb=.. closed_kb=.. kb_per_conn=.. given_back_pct=..
//
//	idleconns -addr 127.0.0.1:9000 -pid 1234 -n 10000
package main

import (
	"bufio"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "the server")
	pid := flag.Int("pid", 0, "the server's process id (its children are counted too)")
	n := flag.Int("n", 10000, "connections")
	wait := flag.Duration("wait", 2*time.Second, "wait after the last answer before reading RSS")
	settle := flag.Duration("settle", 10*time.Second, "wait after closing before reading RSS")
	useTLS := flag.Bool("tls", false, "connect over TLS")
	flag.Parse()
	dial := func() (net.Conn, error) { return net.Dial("tcp", *addr) }
	if *useTLS {
		cfg := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}} // loopback, the bench's own certificate
		dial = func() (net.Conn, error) { return tls.Dial("tcp", *addr, cfg) }
	}
	if err := run(dial, *pid, *n, *wait, *settle); err != nil {
		fmt.Fprintln(os.Stderr, "idleconns:", err)
		os.Exit(1)
	}
}

func run(dial func() (net.Conn, error), pid, n int, wait, settle time.Duration) error {
	before, err := rss(pid)
	if err != nil {
		return err
	}
	conns := make([]net.Conn, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, err := oneRequest(dial)
				if err != nil {
					errs <- err
					continue
				}
				conns[i] = c
			}
		}()
	}
	for i := range conns {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("%d connections failed, the first: %w", len(errs)+1, err)
	}
	time.Sleep(wait)
	open, err := rss(pid)
	if err != nil {
		return err
	}
	for _, c := range conns {
		c.Close()
	}
	time.Sleep(settle)
	closed, err := rss(pid)
	if err != nil {
		return err
	}
	grew := float64(open - before)
	fmt.Printf("idle: conns=%d before_kb=%d open_kb=%d closed_kb=%d kb_per_conn=%.2f given_back_pct=%.0f\n",
		n, before, open, closed, grew/float64(n), 100*float64(open-closed)/max(grew, 1))
	return nil
}

// oneRequest opens a connection with dial, sends GET / and reads the
// answer whole, leaving the connection open.
func oneRequest(dial func() (net.Conn, error)) (net.Conn, error) {
	c, err := dial()
	if err != nil {
		return nil, err
	}
	_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: bench\r\nX-API-Key: key-a\r\n\r\n")
	if err == nil {
		var resp *http.Response
		if resp, err = http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.Close {
				err = fmt.Errorf("the server closed the connection after its answer")
			}
		}
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// rss returns the VmRSS in KB of pid and its descendants.
func rss(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	total := 0
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			total, _ = strconv.Atoi(f[1])
		}
	}
	kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, k := range strings.Fields(string(kids)) {
		kid, _ := strconv.Atoi(k)
		r, err := rss(kid)
		if err != nil {
			return 0, err
		}
		total += r
	}
	return total, nil
}
