package redis

import (
	"strings"

	"github.com/sluice-rl/sluice/store"
)

// redisKey returns the Redis key of a store key: prefix + "{" + escaped key
// + "}", so that the whole store key is the key's Redis Cluster hash tag;
// or, for a key with a group (store.GroupKey), prefix + "{" + escaped
// group + "}" + escaped rest, so that a group's keys share a hash slot.
// '%', '{' and '}' are percent-encoded, which keeps the tag closed and
// distinct store keys distinct (a grouped key always has something after
// its tag, an ungrouped one never).
func redisKey(prefix string, key store.Key) string {
	if group := key.Group(); group != "" {
		return prefix + "{" + escape(group) + "}" + escape(key.Ungrouped())
	}
	return prefix + "{" + escape(key.String()) + "}"
}

// hashTag returns the hash tag of a Redis key made by redisKey: what is
// between its first '{' and the '}' after it.
func hashTag(key string) string {
	_, tag, _ := strings.Cut(key, "{")
	tag, _, _ = strings.Cut(tag, "}")
	return tag
}

// escape percent-encodes '%', '{' and '}' in s.
func escape(s string) string {
	if !strings.ContainsAny(s, "%{}") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			b.WriteString("%25")
		case '{':
			b.WriteString("%7B")
		case '}':
			b.WriteString("%7D")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
