package redis

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// The operators' run-time changes (package steering: overrides, blocks,
// the degrade switch) live in one Redis hash of two fields, "version" and
// "doc" (the document, as steering writes it), beside a list of the audit
// records, newest first. Both keys carry the hash tag {steering}, so that
// a Cluster keeps them on one node and one script changes them together;
// neither is a rate or lease key (those have '{' or "lease:" right after
// the prefix). A change is published on a shard channel of the same slot,
// so that every instance reads it at once rather than at its next resync.
func steeringKey(prefix string) string     { return prefix + "steering:{steering}" }
func steeringAudit(prefix string) string   { return prefix + "steering:{steering}:audit" }
func steeringChannel(prefix string) string { return prefix + "steering:{steering}:changed" }

// steeringTimeout bounds each steering call: no request waits for one, and
// a change should rather take a second than fail on a busy Redis.
const steeringTimeout = time.Second

// commitSteering writes the document ARGV[3] as version ARGV[2] if the
// version stored is still ARGV[1] (0: none stored), pushes the audit
// records ARGV[5..] and keeps the newest ARGV[4] of them. It answers 1, or
// 0 when another change came first.
var commitSteering = rueidis.NewLuaScript(`
local cur = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if cur ~= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'doc', ARGV[3])
for i = 5, #ARGV do redis.call('LPUSH', KEYS[2], ARGV[i]) end
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[4]) - 1)
return 1`)

// SteeringDoc is the operators' document as stored: its version (0 when
// none is stored), its bytes, and Redis's clock when it was read.
type SteeringDoc struct {
	Version uint64
	Doc     []byte
	Now     time.Time
}

// LoadSteering reads the stored steering document and Redis TIME.
func (s *Store) LoadSteering(ctx context.Context) (SteeringDoc, error) {
	if err := s.ready0(ctx); err != nil {
		return SteeringDoc{}, err
	}
	tctx, cancel := context.WithTimeout(ctx, steeringTimeout)
	defer cancel()
	b := s.client.B()
	res := s.client.DoMulti(tctx, b.Time().Build(), b.Hmget().Key(steeringKey(s.prefix)).Field("version", "doc").Build())
	t, err := res[0].AsStrSlice()
	if err != nil {
		return SteeringDoc{}, fmt.Errorf("redis store: steering: TIME: %w", err)
	}
	now, err := parseTime(t)
	if err != nil {
		return SteeringDoc{}, fmt.Errorf("redis store: steering: %w", err)
	}
	vals, err := res[1].ToArray()
	if err != nil || len(vals) != 2 {
		return SteeringDoc{}, fmt.Errorf("redis store: steering: read %s: %v", steeringKey(s.prefix), err)
	}
	d := SteeringDoc{Now: now}
	if v, err := vals[0].ToString(); err == nil {
		if d.Version, err = strconv.ParseUint(v, 10, 64); err != nil {
			return SteeringDoc{}, fmt.Errorf("redis store: steering: version %q is not a number", v)
		}
		doc, _ := vals[1].ToString()
		d.Doc = []byte(doc)
	}
	return d, nil
}

// parseTime reads TIME's answer: seconds and microseconds.
func parseTime(t []string) (time.Time, error) {
	if len(t) != 2 {
		return time.Time{}, fmt.Errorf("TIME answered %d values", len(t))
	}
	sec, err1 := strconv.ParseInt(t[0], 10, 64)
	us, err2 := strconv.ParseInt(t[1], 10, 64)
	if err1 != nil || err2 != nil {
		return time.Time{}, fmt.Errorf("TIME answered %q", t)
	}
	return time.Unix(sec, us*1000), nil
}

// CommitSteering stores doc as version next if the stored version is
// still prev, with the audit records, keeping the newest keep of them, and
// tells every instance watching (WatchSteering). It reports false, having
// changed nothing, when another change came first.
func (s *Store) CommitSteering(ctx context.Context, prev, next uint64, doc []byte, audit [][]byte, keep int) (bool, error) {
	if err := s.ready0(ctx); err != nil {
		return false, err
	}
	tctx, cancel := context.WithTimeout(ctx, steeringTimeout)
	defer cancel()
	args := make([]string, 0, 4+len(audit))
	args = append(args, strconv.FormatUint(prev, 10), strconv.FormatUint(next, 10), string(doc), strconv.Itoa(max(keep, 1)))
	for _, a := range audit {
		args = append(args, string(a))
	}
	n, err := commitSteering.Exec(tctx, s.client, []string{steeringKey(s.prefix), steeringAudit(s.prefix)}, args).AsInt64()
	if err != nil {
		return false, fmt.Errorf("redis store: steering: commit: %w", err)
	}
	if n == 1 {
		// Told after the commit: an instance that misses it reads the
		// change at its next resync.
		_ = s.client.Do(tctx, s.client.B().Spublish().Channel(steeringChannel(s.prefix)).Message(strconv.FormatUint(next, 10)).Build()).Error()
	}
	return n == 1, nil
}

// SteeringAudit returns the newest n audit records, newest first.
func (s *Store) SteeringAudit(ctx context.Context, n int) ([][]byte, error) {
	if err := s.ready0(ctx); err != nil {
		return nil, err
	}
	tctx, cancel := context.WithTimeout(ctx, steeringTimeout)
	defer cancel()
	vals, err := s.client.Do(tctx, s.client.B().Lrange().Key(steeringAudit(s.prefix)).Start(0).Stop(int64(max(n, 1)-1)).Build()).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("redis store: steering: audit: %w", err)
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out, nil
}

// WatchSteering calls changed each time a change is published on the
// steering channel, and each time the subscription is made (or made again
// after it was lost: changes may have been missed), on a goroutine of its
// own, until stop is called or the store is closed. changed must be quick.
func (s *Store) WatchSteering(changed func()) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		hooked := rueidis.WithOnSubscriptionHook(ctx, func(sub rueidis.PubSubSubscription) {
			if sub.Kind == "ssubscribe" {
				changed()
			}
		})
		for ctx.Err() == nil && !s.closed.Load() {
			if s.Connect(ctx) == nil {
				sub := s.client.B().Ssubscribe().Channel(steeringChannel(s.prefix)).Build()
				_ = s.client.Receive(hooked, sub, func(rueidis.PubSubMessage) { changed() })
			}
			select {
			case <-ctx.Done():
			case <-time.After(resubscribeEvery):
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}
