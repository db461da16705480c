package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// maxBulk bounds the bulk replies this helper will read; the commands it is
// used for (PING, INFO, CLUSTER INFO) answer with a few kilobytes at most.
const maxBulk = 1 << 20

// replyError is an error reply ("-ERR ...") sent by Redis.
type replyError string

func (e replyError) Error() string { return "redis: " + string(e) }

// roundTrip dials addr, sends one command and reads its reply, all within
// timeout. Simple strings, integers and bulk strings come back as a string;
// an error reply comes back as a replyError. It is a test helper, not a
// client: one connection per command, no pipelining, no arrays.
func roundTrip(addr string, timeout time.Duration, args ...string) (string, error) {
	name := strings.Join(args, " ")
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", fmt.Errorf("redistest: %s on %s: %w", name, addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", fmt.Errorf("redistest: %s on %s: set deadline: %w", name, addr, err)
	}
	if _, err := io.WriteString(conn, encodeCommand(args)); err != nil {
		return "", fmt.Errorf("redistest: %s on %s: write: %w", name, addr, err)
	}
	reply, err := readReply(bufio.NewReader(conn))
	if err != nil {
		return "", fmt.Errorf("redistest: %s on %s: %w", name, addr, err)
	}
	return reply, nil
}

// encodeCommand encodes args as a RESP array of bulk strings.
func encodeCommand(args []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// readReply reads one non-array RESP reply from r.
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read reply: %w", err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("read reply: empty line")
	}
	switch kind, rest := line[0], line[1:]; kind {
	case '+', ':':
		return rest, nil
	case '-':
		return "", replyError(rest)
	case '$':
		return readBulk(r, rest)
	default:
		return "", fmt.Errorf("read reply: unsupported RESP reply %q", line)
	}
}

// readBulk reads the body of a bulk string whose header gave size.
func readBulk(r *bufio.Reader, size string) (string, error) {
	n, err := strconv.Atoi(size)
	if err != nil || n < 0 || n > maxBulk {
		return "", fmt.Errorf("read reply: bad bulk length %q", size)
	}
	buf := make([]byte, n+2) // body + "\r\n"
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", fmt.Errorf("read bulk reply: %w", err)
	}
	return string(buf[:n]), nil
}
