package redis

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// TestOddReplies feeds parseReply replies of every wrong shape: each must
// be an error, never a panic or a made-up decision.
func TestOddReplies(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	for _, src := range []string{
		"return 'x'", "return 7", "return {}", "return {1, 4, 0, 0, 0}", "return redis.error_reply('boom')",
		"return struct.pack('>ddddd', 1, 4, 0, 0, 0)", "return struct.pack('>dddddddd', 1, 4, 0, 0, 0, 0, 0, 0)",
		"return struct.pack('>ddddddd', 1, 4, 0, 0.5, 0, 0, 0)", "return struct.pack('>ddddddd', 1, 4, 0, 0/0, 0, 0, 0)",
		"return struct.pack('>ddddddd', 1, 4, 0, 1/0, 0, 0, 0)", "return struct.pack('>ddddddd', 1, 4, 0, 2^60, 0, 0, 0)",
		"return struct.pack('>ddddddd', 2, 4, 0, 0, 0, 0, 0)", "return struct.pack('>ddddddd', 0, 4, -2, 0, 0, 0, 0)",
		"return struct.pack('>ddddddd', 1, 4, 0, -1, 0, 0, 0)", "return struct.pack('>ddddddd', 1, 4, 0, 0, -1, 0, 0)",
		"return struct.pack('>ddddddd', 1, 4, 0, 0, 0.5, 0, 0)",
		// An allowed request's retry is its delay: never -1, and a delay
		// comes with a reservation (time and level); a denial has none.
		"return struct.pack('>ddddddd', 1, 4, -1, 3, 2, 0, 0)", "return struct.pack('>ddddddd', 1, 0, 5, 3, 2, 0, 0)",
		"return struct.pack('>ddddddd', 0, 0, 5, 3, 2, 7, 9)",
		"return struct.pack('>ddddddd', 1, 0, 5, 3, 2, 7, 0)", "return struct.pack('>ddddddd', 1, 0, 5, 3, 2, -7, 9)",
	} {
		res := s.client.Do(context.Background(), s.client.B().Eval().Script(src).Numkeys(0).Build())
		if d, err := parseReply(res, 5); err == nil {
			t.Errorf("%s: parsed as %+v, want an error", src, d)
		}
	}
	for src, want := range map[string]limiter.Decision{
		"return struct.pack('>ddddddd', 0, 4, -1, 3, 2, 0, 0)": {Limit: 5, Remaining: 4, RetryAfter: limiter.Never,
			Reset: 3 * time.Microsecond, Refill: 2 * time.Microsecond},
		"return struct.pack('>ddddddd', 1, 0, 5, 3, 2, 7, 9)": {Allowed: true, Limit: 5, Delay: 5 * time.Microsecond,
			Reset: 3 * time.Microsecond, Refill: 2 * time.Microsecond, Reservation: limiter.Reservation{At: 7, Level: 9}},
		// An allowed request that spent at once: its reservation, for Settle.
		"return struct.pack('>ddddddd', 1, 0, 0, 3, 2, 7, 9)": {Allowed: true, Limit: 5,
			Reset: 3 * time.Microsecond, Refill: 2 * time.Microsecond, Reservation: limiter.Reservation{At: 7, Level: 9}},
	} {
		res := s.client.Do(context.Background(), s.client.B().Eval().Script(src).Numkeys(0).Build())
		if d, err := parseReply(res, 5); err != nil || d != want {
			t.Errorf("well-formed reply %s: %+v, %v; want %+v", src, d, err, want)
		}
	}
}

// TestClosed checks that a closed store refuses work with store.ErrClosed
// and that Close is idempotent.
func TestClosed(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.FixedWindow, 1, time.Second, 0)
	decide(t, s, store.RawKey("closed"), l, epoch, 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(context.Background(), store.RawKey("closed"), l, epoch, 1); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Decide after Close: %v, want store.ErrClosed", err)
	}
	if _, err := s.DecideEach(context.Background(), nil, []store.Request{{Key: store.RawKey("closed"), Limit: l, Cost: 1}}, epoch); !errors.Is(err, store.ErrClosed) {
		t.Errorf("DecideEach after Close: %v, want store.ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestNewErrors checks the options New refuses and an address nobody
// listens on.
func TestNewErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, opts := range map[string]Options{
		"no address":       {},
		"brace in prefix":  {Addrs: []string{"127.0.0.1:1"}, Prefix: "a{b"},
		"negative timeout": {Addrs: []string{"127.0.0.1:1"}, Timeout: -time.Second},
		"nobody listening": {Addrs: []string{"127.0.0.1:1"}},
	} {
		if s, err := New(ctx, opts); err == nil {
			s.Close()
			t.Errorf("%s: New succeeded", name)
		} else if !strings.HasPrefix(err.Error(), "redis store: ") {
			t.Errorf("%s: error %q lacks its context", name, err)
		}
	}
	if _, err := NewFromClient(nil, Options{}); err == nil {
		t.Error("NewFromClient(nil) succeeded")
	}
}

// TestNewFromClient runs a store on a client the test made, a single-node
// client forced as such, which the store must not close.
func TestNewFromClient(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s, err := NewFromClient(client, Options{Prefix: redistest.KeyPrefix(t), CallerTime: true, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	l := mustLimit(t, limiter.SlidingWindow, 2, time.Second, 0)
	if d := decide(t, s, store.RawKey("k"), l, epoch, 2); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("%+v", d)
	}
	s.Close()
	if err := client.Do(context.Background(), client.B().Ping().Build()).Error(); err != nil {
		t.Errorf("the store closed a client it does not own: %v", err)
	}
}

func TestRedisKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		key  store.Key
		want string
	}{
		{store.RawKey(""), "p:{}"},
		{store.RawKey("5:rule6:client"), "p:{5:rule6:client}"},
		{store.RawKey("a{b}c"), "p:{a%7Bb%7Dc}"},
		{store.RawKey("a%7Bb"), "p:{a%257Bb}"},
		{store.RawKey("}{"), "p:{%7D%7B}"},
		{store.GroupKey(store.Parts("client", "a"), "claims", "t"), "p:{6:client1:a}6:claims1:t"},
		{store.GroupKey("{x}", "r{"), "p:{%7Bx%7D}2:r%7B"},
		{store.RawKey("@1:}"), "p:{@1:%7D}"},       // nothing after the group: not a group, or it would be "}"'s key
		{store.RawKey("@9:short"), "p:{@9:short}"}, // not a group: the length does not fit
	} {
		if got := redisKey("p:", c.key); got != c.want {
			t.Errorf("redisKey(%q) = %q, want %q", c.key, got, c.want)
		}
	}
	if tag := hashTag(redisKey("p:", store.GroupKey("g{", "r"))); tag != "g%7B" {
		t.Errorf("hash tag %q, want g%%7B", tag)
	}
}

// FuzzRedisKeyDistinct checks that distinct store keys, grouped or not,
// never share a Redis key.
func FuzzRedisKeyDistinct(f *testing.F) {
	f.Add("a", "@1:a", "b", "")
	f.Add("@0:", "", "}", "{")
	f.Add("6:client1:a", "claims", "@11:6:client1:a", "6:claims")
	f.Fuzz(func(t *testing.T, s1, g1, s2, g2 string) {
		k1, k2 := store.RawKey(s1), store.RawKey(s2)
		if g1 != "" {
			k1 = store.GroupKey(g1, s1)
		}
		if g2 != "" {
			k2 = store.GroupKey(g2, s2)
		}
		if (k1.String() == k2.String()) != (redisKey("p:", k1) == redisKey("p:", k2)) {
			t.Fatalf("store keys %q and %q: Redis keys %q and %q", k1, k2, redisKey("p:", k1), redisKey("p:", k2))
		}
	})
}
