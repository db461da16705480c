package redisstore

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
	// Seen is how long ago, in Redis TIME, it last announced itself;
	// filled in by Instances.
	Seen time.Duration `json:"-"`
}

// The heartbeat scripts: lua/announce.lua, lua/instances.lua.
var announceScript, instancesScript = newScript("announce", mustRead("lua/announce.lua")),
	newScript("instances", mustRead("lua/instances.lua"))

// instancesKey is the one Redis key of a store's announcements:
// Options.Prefix + "instances:{instances}", a hash of one field per
// instance. Its own hash tag puts it on one node of a Cluster; it is never
// a rate or lease key (those have '{' or "lease:" right after the prefix).
func instancesKey(prefix string) string { return prefix + "instances:{instances}" }

// Announce records inst as sharing the store's counters for ttl (at
// least a millisecond), in Redis TIME; instances announce again well
// within their TTL (the gateway: every 5 seconds, for 15). It drops the
// announcements that have expired.
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
	ms := strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)
	if err := s.evalScript(tctx, announceScript, []string{instancesKey(s.prefix)}, inst.ID, string(body), ms).Error(); err != nil {
		return fmt.Errorf("redis store: announce: %w", err)
	}
	return nil
}

// Instances returns the instances whose announcement has not expired,
// each with how long ago it was seen, in the order Redis keeps them.
func (s *Store) Instances(ctx context.Context) ([]Instance, error) {
	if err := s.ready0(ctx); err != nil {
		return nil, err
	}
	tctx, cancel := s.withTimeout(ctx)
	defer cancel()
	reply, err := s.evalScript(tctx, instancesScript, []string{instancesKey(s.prefix)}).ToArray()
	if err != nil {
		return nil, fmt.Errorf("redis store: instances: %w", err)
	}
	if len(reply) == 0 {
		return nil, errors.New("redis store: instances: empty reply")
	}
	now, err := reply[0].AsInt64()
	if err != nil {
		return nil, fmt.Errorf("redis store: instances: time: %w", err)
	}
	var out []Instance
	for i := 1; i+1 < len(reply); i += 2 {
		v, err := reply[i+1].ToString()
		if err != nil {
			continue
		}
		inst, ok := parseAnnouncement(v, now)
		if ok {
			out = append(out, inst)
		}
	}
	return out, nil
}

// parseAnnouncement reads "<expiry ms> <seen ms> <json>" at now (ms); ok
// is false for a field another program wrote.
func parseAnnouncement(v string, now int64) (Instance, bool) {
	_, rest, _ := strings.Cut(v, " ")
	seenText, body, ok := strings.Cut(rest, " ")
	seen, err := strconv.ParseInt(seenText, 10, 64)
	var inst Instance
	if !ok || err != nil || json.Unmarshal([]byte(body), &inst) != nil || inst.ID == "" {
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
