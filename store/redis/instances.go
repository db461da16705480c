package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/store"
)

// Instance is one program (a gateway) that shares the store's counters,
// as it announces itself (Announce).
type Instance struct {
	// ID names the instance among those on the same Redis and prefix.
	ID string `json:"id"`
	// Version is the digest of the configuration it applies, and Rules
	// each rule's own digest by name, so that instances that apply
	// different versions of a rule can be told.
	Version string            `json:"version"`
	Rules   map[string]string `json:"rules,omitempty"`
	// Runtime is the version of the operators' run-time changes it
	// applies (package steering).
	Runtime uint64 `json:"runtime,omitempty"`
	// Seen is how long ago, in Redis TIME, it last announced itself;
	// filled in by Instances.
	Seen time.Duration `json:"-"`
}

// instancesKey is the one Redis key of a store's announcements:
// Options.Prefix + "instances:{instances}", a hash of one field per
// instance. Its own hash tag puts it on one node of a Cluster; it is never
// a rate or lease key (those have '{' or "lease:" right after the prefix).
func instancesKey(prefix string) string { return prefix + "instances:{instances}" }

// Announce records inst as sharing the store's counters for ttl (at
// least a millisecond), by Redis TIME; instances announce again well
// within their TTL (the gateway: every 5 seconds, for 15). The field is
// "<expiry ms> <seen ms> <inst as JSON>"; the key lives until its latest
// expiry. It runs no script: a heartbeat is no decision, and the
// commands a test counts as decisions' round trips (EVALSHA) stay theirs.
func (s *Store) Announce(ctx context.Context, inst Instance, ttl time.Duration) error {
	body, err := json.Marshal(inst)
	if err != nil {
		return fmt.Errorf("redis store: announce: %w", err)
	}
	if err := s.ready0(ctx); err != nil {
		return err
	}
	tctx, cancel := s.withTimeout(ctx)
	defer cancel()
	now, err := s.redisTime(tctx)
	if err != nil {
		return fmt.Errorf("redis store: announce: %w", err)
	}
	ms := max(ttl.Milliseconds(), 1)
	key, b := instancesKey(s.prefix), s.client.B()
	for _, res := range s.client.DoMulti(tctx,
		b.Hset().Key(key).FieldValue().FieldValue(inst.ID, fmt.Sprintf("%d %d %s", now+ms, now, body)).Build(),
		b.Pexpire().Key(key).Milliseconds(ms).Nx().Build(), // a new key: its first TTL
		b.Pexpire().Key(key).Milliseconds(ms).Gt().Build(), // else never shortened: the latest expiry
	) {
		if err := res.Error(); err != nil {
			return fmt.Errorf("redis store: announce: %w", err)
		}
	}
	return nil
}

// Instances returns the instances whose announcement has not expired by
// Redis TIME, each with how long ago it was seen, in the order Redis keeps
// them. It deletes the expired announcements it finds.
func (s *Store) Instances(ctx context.Context) ([]Instance, error) {
	if err := s.ready0(ctx); err != nil {
		return nil, err
	}
	tctx, cancel := s.withTimeout(ctx)
	defer cancel()
	now, err := s.redisTime(tctx)
	if err != nil {
		return nil, fmt.Errorf("redis store: instances: %w", err)
	}
	key := instancesKey(s.prefix)
	all, err := s.client.Do(tctx, s.client.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("redis store: instances: %w", err)
	}
	var out []Instance
	var expired []string
	for id, v := range all {
		if inst, ok := parseAnnouncement(v, now); ok {
			out = append(out, inst)
		} else {
			expired = append(expired, id)
		}
	}
	if len(expired) > 0 {
		_ = s.client.Do(tctx, s.client.B().Hdel().Key(key).Field(expired...).Build()).Error() // the next reader tries again
	}
	return out, nil
}

// redisTime is Redis TIME in milliseconds.
func (s *Store) redisTime(tctx context.Context) (int64, error) {
	t, err := s.client.Do(tctx, s.client.B().Time().Build()).AsStrSlice()
	if err != nil {
		return 0, err
	}
	if len(t) != 2 {
		return 0, fmt.Errorf("TIME answered %d values", len(t))
	}
	sec, err1 := strconv.ParseInt(t[0], 10, 64)
	us, err2 := strconv.ParseInt(t[1], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("TIME: %w", err)
	}
	return sec*1000 + us/1000, nil
}

// parseAnnouncement reads "<expiry ms> <seen ms> <json>" at now (ms); ok
// is false for one that has expired, or a field another program wrote.
func parseAnnouncement(v string, now int64) (Instance, bool) {
	expiryText, rest, _ := strings.Cut(v, " ")
	seenText, body, ok := strings.Cut(rest, " ")
	expiry, err1 := strconv.ParseInt(expiryText, 10, 64)
	seen, err2 := strconv.ParseInt(seenText, 10, 64)
	var inst Instance
	if !ok || err1 != nil || err2 != nil || expiry <= now || json.Unmarshal([]byte(body), &inst) != nil || inst.ID == "" {
		return Instance{}, false
	}
	inst.Seen = time.Duration(max(now-seen, 0)) * time.Millisecond
	return inst, true
}

// ready0 is the check every call of the store begins with: not closed,
// and connected (a lazy store connects now, or fails at once).
func (s *Store) ready0(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.Connect(ctx)
}
