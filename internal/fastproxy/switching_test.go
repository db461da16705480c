package fastproxy

import (
	"bufio"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestSwitchingHeadDropsConnectionNamed: the 101 that goes to the caller
// leaves out the fields the upstream's Connection names, in any case,
// whether it names a few or many (more than are scanned), and keeps the
// others.
func TestSwitchingHeadDropsConnectionNamed(t *testing.T) {
	many := "Upgrade, a1, a2, a3, a4, a5, a6, a7, a8, a9, x-hop"
	for _, conn := range []string{"Upgrade, X-HOP", many} {
		var in, own fasthttp.ResponseHeader
		raw := "HTTP/1.1 101 Switching Protocols\r\nConnection: " + conn + "\r\nUpgrade: websocket\r\n" +
			"X-Hop: 1\r\nX-Kept: 2\r\n\r\n"
		if err := in.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
			t.Fatal(err)
		}
		head := string(switchingHead(&in, &own, nil))
		if strings.Contains(head, "X-Hop") || !strings.Contains(head, "X-Kept: 2\r\n") {
			t.Errorf("Connection: %s: 101 sent on = %q, want X-Kept and no X-Hop", conn, head)
		}
	}
}
