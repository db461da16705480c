package redis

import "strings"

// redisKey returns the Redis key of a store key: prefix + "{" + escaped key
// + "}", so that the whole store key is the key's Redis Cluster hash tag.
// '%', '{' and '}' are percent-encoded, which keeps the tag closed and
// distinct store keys distinct.
func redisKey(prefix, key string) string {
	if !strings.ContainsAny(key, "%{}") {
		return prefix + "{" + key + "}"
	}
	var b strings.Builder
	b.Grow(len(prefix) + len(key) + 8)
	b.WriteString(prefix)
	b.WriteByte('{')
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
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
	b.WriteByte('}')
	return b.String()
}
