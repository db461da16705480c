package config

import (
	"fmt"
	"strings"
	"testing"
)

// head is the two required settings; the cases below that start with it
// begin their own lines at line 3.
const head = "listen: 127.0.0.1:8080\nupstream: http://127.0.0.1:9000\n"

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		// The file as a whole.
		{"empty", "", []string{"t.yaml: empty file (required: listen, upstream, rules)"}},
		{"only comments", "# nothing here\n", []string{"t.yaml: empty file (required: listen, upstream, rules)"}},
		{"top-level list", "- listen: :8080\n", []string{"t.yaml:1:1: the file must be a mapping of settings (listen, upstream, rules, ...), not a list"}},
		{"top-level scalar", "hello\n", []string{"t.yaml:1:1: the file must be a mapping of settings (listen, upstream, rules, ...), not a value"}},
		{"NUL byte", "listen: :80\x00\n", []string{"t.yaml:1:12: control character U+0000 (a configuration file is printable text)"}},
		{"not UTF-8", "listen: \xff\n", []string{"t.yaml:1:9: byte 0xff is not UTF-8 text (a configuration file is UTF-8 text)"}},
		{"tab indent", head + "rules:\n  - name: a\n\trate: 1/s\n",
			[]string{"t.yaml:5:1: YAML syntax: a tab in the indentation at line 5: YAML indents with spaces only (replace the tab with spaces)"}},
		{"a bad rate, and nothing that follows from it",
			head + "clients: {list: [{id: a, keys: [k1], plan: large, limits: {claims: 30/m}}]}\nplans: {large: {claims: 20/m}}\n" +
				"rules: [{name: claims, rate: 10/mn, algorithm: gcra, burst: 4, delay: 1s, cost: 2, schedule: [{days: [sat], rate: 2/m}]}]\n",
			[]string{`t.yaml:5:30: rules[0].rate: "10/mn": unknown period "mn" (s, m, h, d or a Go duration such as 30s, 1500ms or 36h)`}},
		{"a bad rate beside an unrelated problem",
			head + "plans: {large: {claims: 20/m, other: 1/s}}\nrules: [{name: claims, rate: 10/mn}, {name: other, priority: low}]\n",
			[]string{"t.yaml:3:38: plans.large.other: rule other has no rate to override: it only classifies requests (give the rule a rate, or remove this override)",
				`t.yaml:4:30: rules[0].rate: "10/mn": unknown period "mn" (s, m, h, d or a Go duration such as 30s, 1500ms or 36h)`}},
		{"tab before a list item", head + "rules:\n\t- name: a\n\t  rate: 1/s\n",
			[]string{"t.yaml:4:1: YAML syntax: a tab in the indentation at line 4: YAML indents with spaces only (replace the tab with spaces)"}},
		{"tab after spaces", head + "rules:\n  - name: a\n   \trate: 1/s\n",
			[]string{"t.yaml:5:4: YAML syntax: a tab in the indentation at line 5: YAML indents with spaces only (replace the tab with spaces)"}},
		{"bad indent", head + "rules:\n  - name: a\n    rate: 1/s\n   key: ip\n",
			[]string{"t.yaml:6:4: YAML syntax: did not find expected '-' indicator"}},
		{"unquoted colon", head + "rules: [{name: a, rate: 1/s}]\nadmin: x: 1\n",
			[]string{`t.yaml:4:9: YAML syntax: mapping values are not allowed in this context (check the indentation; quote a value that contains ": " or ends with ':')`}},
		{"unterminated quote", "listen: \"127.0.0.1:8080\nupstream: x\n",
			[]string{"t.yaml:1:9: YAML syntax: found unexpected end of stream"}},
		{"unclosed flow", head + "rules: [{name: a, rate: 1/s}\n",
			[]string{"t.yaml:3:28: YAML syntax: did not find expected ',' or ']'"}},
		{"second document", head + "rules: [{name: a, rate: 1/s}]\n---\nlisten: :1\n",
			[]string{"t.yaml:4:1: a second YAML document (the file must hold one document: remove this '---' and what follows)"}},
		{"alias", head + "rules: &r [{name: a, rate: 1/s}]\nplans: *r\n",
			[]string{"t.yaml:4:8: alias *r: YAML aliases are not supported (write the value out in full)"}},
		{"merge key", head + "rules:\n  - <<: {name: a}\n    rate: 1/s\n", []string{
			"t.yaml:4:5: rules[0]: merge keys (<<) are not supported (write the fields out in full)",
			"t.yaml:4:5: rules[0].name: missing (every rule needs a name)"}},
		{"explicit tag", head + "rules: [{name: a, rate: !!binary MTAvcw==}]\n",
			[]string{"t.yaml:3:25: rules[0].rate: YAML tag !!binary is not supported (want a rate (N/s, N/m, N/h, N/d or N/<duration> such as 100/m or 100/30s))"}},

		// The upstreams list.
		{"upstream and upstreams", "listen: 127.0.0.1:8080\nupstream: http://127.0.0.1:9000\nupstreams: [{url: http://127.0.0.1:9001}]\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:1: upstreams: upstream is given too (upstream is the one-service form of upstreams: keep one of them)"}},
		{"upstreams empty", "listen: 127.0.0.1:8080\nupstreams: []\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:2:12: upstreams: empty (list one service or more: - url: http://127.0.0.1:9000)"}},
		{"upstreams after the catch-all", "listen: 127.0.0.1:8080\nupstreams:\n  - {url: http://127.0.0.1:9001}\n  - {url: http://127.0.0.1:9002, match: {path: /a}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:4:5: upstreams[1]: never used: upstreams[0] has no match and takes every request (put the entry without match last)"}},
		{"upstreams urls", "listen: 127.0.0.1:8080\nupstreams:\n  - {match: {path: /a}}\n  - {url: ftp://x}\n  - {url: http://127.0.0.1:8080}\nrules: [{name: a, rate: 1/s}]\n", []string{
			"t.yaml:3:5: upstreams[0].url: missing (required; such as url: http://127.0.0.1:9000)",
			`t.yaml:4:11: upstreams[1].url: "ftp://x": scheme "ftp" is not http or https (an http or https URL with a host, such as http://127.0.0.1:9000)`,
			"t.yaml:5:11: upstreams[2].url: http://127.0.0.1:8080 is sluice's own listen address 127.0.0.1:8080: every request would come back to sluice (point it at a protected service)"}},
		{"upstreams hosts", "listen: 127.0.0.1:8080\nupstreams:\n  - {url: http://127.0.0.1:9001, match: {host: \"a.*.example\"}}\n  - {url: http://127.0.0.1:9001, match: {host: \"x.example:80\"}}\n" +
			"  - {url: http://127.0.0.1:9002, match: {host: \"*\"}}\n  - {url: http://127.0.0.1:9003, match: {host: \"bad host\"}}\n  - {url: http://127.0.0.1:9004, match: {}}\nrules: [{name: a, rate: 1/s}]\n", []string{
			`t.yaml:3:48: upstreams[0].match.host: host "a.*.example" has a '*' other than a whole first label (a host name such as api.example.com, or *.example.com for every name below example.com)`,
			`t.yaml:4:5: upstreams[1]: name "127.0.0.1:9001" is also upstreams[0]'s (each service needs its own name: give this one name: ...)`,
			`t.yaml:4:48: upstreams[1].match.host: host "x.example:80" has a port, a path, a user or a space (a host name such as api.example.com, or *.example.com for every name below example.com; the port is never matched)`,
			`t.yaml:5:48: upstreams[2].match.host: host "*" has a '*' other than a whole first label (a host name such as api.example.com, or *.example.com for every name below example.com)`,
			`t.yaml:6:48: upstreams[3].match.host: host "bad host" has a port, a path, a user or a space (a host name such as api.example.com, or *.example.com for every name below example.com; the port is never matched)`,
			"t.yaml:7:41: upstreams[4].match: empty (give host, path or both; an entry without match takes every request)"}},
		{"upstreams paths, names, timeouts, protect", "listen: 127.0.0.1:8080\nupstreams:\n  - {url: http://127.0.0.1:9001, match: {path: reports}}\n" +
			"  - {url: http://127.0.0.1:9002, match: {path: /a/./b}, name: \"bad name\"}\n  - {url: http://127.0.0.1:9003, match: {pth: /x}, timeout: 0s}\n" +
			"  - {url: http://127.0.0.1:9004, protect: {max_in_flight: 2, signals: [{url: http://x/m, query: q, above: 1}]}}\nrules: [{name: a, rate: 1/s}]\n", []string{
			`t.yaml:3:48: upstreams[0].match.path: "reports" must start with '/' (a path prefix such as /reports)`,
			`t.yaml:4:48: upstreams[1].match.path: "/a/./b" never matches: request paths are cleaned first (write /a/b)`,
			`t.yaml:4:63: upstreams[1].name: "bad name" is not a service name (1 to 64 letters, digits, '-', '_', '.' or ':', such as claims)`,
			`t.yaml:5:42: upstreams[2].match: unknown field "pth" (did you mean "path"? accepted: host, path)`,
			"t.yaml:5:61: upstreams[2].timeout: 0s is out of range (more than 0, at most 24h; default server.upstream_timeout)",
			"t.yaml:6:62: upstreams[3].protect.signals: signals degrade the whole gateway, not one service (give them in the top-level protect block)"}},

		// Top-level settings.
		{"duplicate key", head + "listen: :9\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:1: duplicate key "listen" (first at line 1)`}},
		{"unknown field", head + "rules: [{name: a, rate: 1/s}]\nupstraem: x\n",
			[]string{`t.yaml:4:1: unknown field "upstraem" (did you mean "upstream"? accepted: listen, upstream, upstreams, tls, admin, trusted_proxies, forwarded_header, ipv6_prefix, case_insensitive_paths, legacy_headers, server, store, protect, live, access_log, runtime, clients, plans, rules, time_zone, decide)`}},
		{"missing required", "admin: 127.0.0.1:9\n", []string{
			"t.yaml:1:1: listen: missing (required; such as listen: 127.0.0.1:8080)",
			"t.yaml:1:1: upstream: missing (required; such as upstream: http://127.0.0.1:9000, or an upstreams list)",
			"t.yaml:1:1: rules: missing (required; such as rules: [{name: api, rate: 100/m}])"}},
		{"empty required", "listen:\nupstream: http://x\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:1:1: listen: missing (required; such as listen: 127.0.0.1:8080)"}},
		{"listen not host:port", "listen: 8080\nupstream: http://x\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:1:9: listen: "8080" is not host:port (such as 127.0.0.1:8080, [::1]:8080 or :8080)`}},
		{"listen port", "listen: localhost:http\nupstream: http://x\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:1:9: listen: "localhost:http": port "http" is not a number from 0 to 65535 (such as 127.0.0.1:8080, [::1]:8080 or :8080)`}},
		{"listen a list", "listen: [a]\nupstream: http://x\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:1:9: listen: want host:port, not a list"}},
		{"upstream scheme", "listen: :1\nupstream: ftp://x\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:2:11: upstream: "ftp://x": scheme "ftp" is not http or https (an http or https URL with a host, such as http://127.0.0.1:9000)`}},
		{"upstream no host", "listen: :1\nupstream: http:///x\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:2:11: upstream: "http:///x" has no valid host (an http or https URL with a host, such as http://127.0.0.1:9000)`}},
		{"admin is listen", head + "admin: 127.0.0.1:8080\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:8: admin: 127.0.0.1:8080 is also listen's address (the admin port must differ; default 127.0.0.1:9090)"}},
		{"listen is the default admin", "listen: 127.0.0.1:9090\nupstream: http://127.0.0.1:9000\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:1:9: listen: 127.0.0.1:9090 is also the admin port's default address 127.0.0.1:9090 (set admin to another address, such as admin: 127.0.0.1:9091)"}},
		{"listen on every interface at the default admin port", "listen: :9090\nupstream: http://127.0.0.1:9000\nadmin: {token: 0123456789abcdef}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:1:9: listen: :9090 is also the admin port's default address 127.0.0.1:9090 (set admin to another address, such as admin: 127.0.0.1:9091)"}},
		{"legacy_headers", head + "legacy_headers: yes\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:17: legacy_headers: "yes" is not a boolean (true or false)`}},
		{"case_insensitive_paths", head + "case_insensitive_paths: on\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:25: case_insensitive_paths: "on" is not a boolean (true or false)`}},
		{"rule path not clean", head + "rules: [{name: a, rate: 1/s, match: {path: /claims//7}}, {name: b, rate: 1/s, match: {path: /a%2Fb}}]\n", []string{
			`t.yaml:3:44: rules[0].match.path: "/claims//7" never matches: request paths are cleaned first (write "/claims/7")`,
			`t.yaml:3:93: rules[1].match.path: "/a%2Fb" never matches: request paths are cleaned first (write a path without '%', '\', '#', '?', ';' and control characters)`}},
		{"trusted_proxies", head + "trusted_proxies: [10.0.0.0/33, proxy]\nrules: [{name: a, rate: 1/s}]\n", []string{
			`t.yaml:3:19: trusted_proxies[0]: "10.0.0.0/33" is not a CIDR or an IP address (such as 10.0.0.0/8, 192.0.2.7 or 2001:db8::/32)`,
			`t.yaml:3:32: trusted_proxies[1]: "proxy" is not a CIDR or an IP address (such as 10.0.0.0/8, 192.0.2.7 or 2001:db8::/32)`}},
		{"forwarded_header unknown", head + "forwarded_header: x-real-ip\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:19: forwarded_header: unknown value "x-real-ip" (accepted: x-forwarded-for, forwarded; default x-forwarded-for)`}},
		{"forwarded_header typo", head + "forwarded_header: X-Forwarded-Fro\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:19: forwarded_header: unknown value "X-Forwarded-Fro" (did you mean "x-forwarded-for"? accepted: x-forwarded-for, forwarded; default x-forwarded-for)`}},
		{"forwarded_header both", head + "forwarded_header: [forwarded, x-forwarded-for]\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:19: forwarded_header: want x-forwarded-for or forwarded, not a list`}},
		{"forwarded_header misspelt field", head + "forwarded_headers: forwarded\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:1: unknown field "forwarded_headers" (did you mean "forwarded_header"? accepted: listen, upstream, upstreams, tls, admin, trusted_proxies, forwarded_header, ipv6_prefix, case_insensitive_paths, legacy_headers, server, store, protect, live, access_log, runtime, clients, plans, rules, time_zone, decide)`}},
		{"ipv6_prefix zero", head + "ipv6_prefix: 0\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:14: ipv6_prefix: 0 is out of range (1 to 128; default 64)"}},
		{"ipv6_prefix huge", head + "ipv6_prefix: 99999999999999999999999999\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:14: ipv6_prefix: 99999999999999999999999999 is out of range (1 to 128; default 64)"}},
		{"ipv6_prefix hex", head + "ipv6_prefix: 0x40\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:14: ipv6_prefix: "0x40" is not a whole number (1 to 128; default 64)`}},

		// The store.
		{"store type", head + "store: {type: mem}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:15: store.type: unknown value "mem" (accepted: memory, redis, gossip)`}},
		{"gossip without join", head + "store: {type: gossip}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:15: store.gossip.join: missing (the host:port of at least one other instance, such as join: [10.0.0.2:7946, 10.0.0.3:7946]; an instance's own address is skipped, so every instance can list the same addresses)"}},
		{"gossip with an empty join", head + "store: {type: gossip, gossip: {bind: 127.0.0.1:7946, join: []}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:31: store.gossip.join: missing (the host:port of at least one other instance, such as join: [10.0.0.2:7946, 10.0.0.3:7946]; an instance's own address is skipped, so every instance can list the same addresses)"}},
		{"gossip bind is listen", head + "store: {type: gossip, gossip: {bind: 127.0.0.1:8080, join: [127.0.0.1:7947]}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:38: store.gossip.bind: 127.0.0.1:8080 is also listen's address (gossip needs a port of its own, such as bind: 0.0.0.0:7946)"}},
		{"gossip bind is admin", head + "admin: 127.0.0.1:9091\nstore: {type: gossip, gossip: {bind: 0.0.0.0:9091, join: [127.0.0.1:7947]}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:4:38: store.gossip.bind: 0.0.0.0:9091 is also admin's address (gossip needs a port of its own, such as bind: 0.0.0.0:7946)"}},
		{"gossip join", head + "store: {type: gossip, gossip: {join: [nohost]}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:39: store.gossip.join[0]: "nohost" is not host:port (such as 127.0.0.1:6379 or redis.internal:6379)`}},
		{"gossip interval", head + "store: {type: gossip, gossip: {join: [127.0.0.1:7947], interval: 1ms}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:66: store.gossip.interval: 1ms is out of range (10ms to 10s; default 200ms)"}},
		{"gossip max_unsynced", head + "store: {type: gossip, gossip: {join: [127.0.0.1:7947], max_unsynced: 0}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:70: store.gossip.max_unsynced: 0 is out of range (1 to 1000000000; default 10)"}},
		{"gossip key not base64", head + "store: {type: gossip, gossip: {join: [127.0.0.1:7947], key: 'not base64!'}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:61: store.gossip.key: not base64 (the base64 of 16, 24 or 32 random bytes, the same on every instance, such as the output of: head -c 32 /dev/urandom | base64; best as env:NAME or file:PATH)"}},
		{"gossip key length", head + "store: {type: gossip, gossip: {join: [127.0.0.1:7947], key: c2hvcnQ=}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:61: store.gossip.key: 5 bytes once decoded (the base64 of 16, 24 or 32 random bytes, the same on every instance, such as the output of: head -c 32 /dev/urandom | base64; best as env:NAME or file:PATH)"}},
		{"gossip algorithm", head + "store: {type: gossip, gossip: {bind: 127.0.0.1:7946, join: [127.0.0.1:7947]}}\nrules:\n  - {name: a, rate: 1/s}\n  - {name: b, rate: 1/s, algorithm: gcra}\n  - {name: c, concurrency: 5}\n",
			[]string{"t.yaml:6:37: rules[1].algorithm: rule b: gcra is not kept by store type gossip, whose bound holds for counts that add up across instances (fixed_window or sliding_window; or store type redis for any algorithm)",
				"t.yaml:7:28: rules[2].concurrency: rule c: concurrency limits are not kept by store type gossip (use store type redis for a count in flight shared by the instances, or memory for one per instance)"}},
		{"store on_failure", head + "store:\n  on_failure: lokal\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:4:15: store.on_failure: unknown value "lokal" (did you mean "local"? accepted: open, closed, local)`}},
		{"store instances", head + "store: {on_failure: local, instances: 0}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:39: store.instances: 0 is out of range (1 to 10000; default 1)"}},
		{"store max_keys", head + "store: {memory: {max_keys: -5}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:28: store.memory.max_keys: -5 is out of range (1 to 1000000000; default 1000000)"}},
		{"store max_rls_keys", head + "store: {memory: {max_rls_keys: 0}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:32: store.memory.max_rls_keys: 0 is out of range (1 to 1000000000; default 100000)"}},
		{"store unknown field", head + "store: {redis: {adrs: [x]}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:17: store.redis: unknown field "adrs" (did you mean "addrs"? accepted: addrs, timeout, username, password, tls, prefix, lease)`}},
		{"redis addrs", head + "store:\n  redis: {addrs: [\":6379\", \"a:1\", \"a:1\", b]}\nrules: [{name: a, rate: 1/s}]\n", []string{
			`t.yaml:4:19: store.redis.addrs[0]: ":6379": "" is not an IP address or host name (such as 127.0.0.1:6379 or redis.internal:6379)`,
			`t.yaml:4:35: store.redis.addrs[2]: duplicate address "a:1"`,
			`t.yaml:4:42: store.redis.addrs[3]: "b" is not host:port (such as 127.0.0.1:6379 or redis.internal:6379)`}},
		{"redis timeout", head + "store: {redis: {timeout: 20s}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:26: store.redis.timeout: 20s is out of range (more than 0, at most 10s)"}},
		{"redis timeout syntax", head + "store: {redis: {timeout: fast}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:26: store.redis.timeout: "fast" is not a duration (such as 50ms, 1s; default 50ms)`}},
		{"redis lease max zero", head + "store: {type: redis, redis: {lease: {max: 0}}}\nrules: [{name: a, rate: 100/s}]\n",
			[]string{"t.yaml:3:43: store.redis.lease.max: 0 is out of range (1 to 1000000000: the most units one lease takes of a key)"}},
		{"redis lease max negative", head + "store: {type: redis, redis: {lease: {max: -3}}}\nrules: [{name: a, rate: 100/s}]\n",
			[]string{"t.yaml:3:43: store.redis.lease.max: -3 is out of range (1 to 1000000000: the most units one lease takes of a key)"}},
		{"redis lease max above the limit", head + "store: {type: redis, redis: {lease: {max: 50}}}\nrules: [{name: a, rate: 10/s}, {name: b, rate: 20/m}]\n",
			[]string{"t.yaml:3:43: store.redis.lease.max: 50 is above the largest limit of a rule, 20: a lease takes at most a limit's units (1 to 20)"}},
		{"redis lease no max", head + "store: {type: redis, redis: {lease: {ttl: 1s}}}\nrules: [{name: a, rate: 10/s}]\n",
			[]string{"t.yaml:3:37: store.redis.lease.max: missing (required; such as max: 10)"}},
		{"redis lease ttl", head + "store: {type: redis, redis: {lease: {max: 5, ttl: 5m}}}\nrules: [{name: a, rate: 10/s}]\n",
			[]string{"t.yaml:3:51: store.redis.lease.ttl: 5m0s is out of range (10ms to 1m0s; default 1s)"}},
		{"redis lease unknown field", head + "store: {type: redis, redis: {lease: {max: 5, tll: 1s}}}\nrules: [{name: a, rate: 10/s}]\n",
			[]string{"t.yaml:3:46: store.redis.lease: unknown field \"tll\" (did you mean \"ttl\"? accepted: max, ttl)"}},
		{"redis prefix", head + "store: {redis: {prefix: \"\"}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:25: store.redis.prefix: "" is not a key prefix (1 to 64 characters without spaces; default "sluice:")`}},

		// Clients and plans.
		{"clients unknown", head + "clients: {unknown: allow}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:20: clients.unknown: unknown value "allow" (accepted: reject, anonymous)`}},
		{"key_header", head + "clients: {key_header: \"X Key\"}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:23: clients.key_header: "X Key" is not an HTTP header name (letters, digits and !#$%&'*+-.^_` + "`" + `|~; default X-API-Key)`}},
		{"clients list a mapping", head + "clients: {list: {id: a}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:17: clients.list: want a list of clients, not a mapping"}},
		{"client field", head + "clients:\n  list:\n    - id: a\n      key: [k]\nrules: [{name: a, rate: 1/s}]\n", []string{
			"t.yaml:5:7: clients.list[0].keys: no keys (a client needs at least one access key, or a certificate in certs)",
			`t.yaml:6:7: clients.list[0]: unknown field "key" (did you mean "keys"? accepted: id, keys, certs, plan, limits)`}},
		{"cert selector kind", head + "clients: {list: [{id: a, certs: [\"ip:192.0.2.1\"]}]}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:34: clients.list[0].certs[0]: "ip:192.0.2.1": unknown kind "ip" (dns:NAME, uri:URI, cn:NAME or sha256:FINGERPRINT (64 hex digits, colons allowed), such as "dns:partner-a.example" or "uri:spiffe://partners/partner-a")`}},
		{"cert selector without kind", head + "clients: {list: [{id: a, certs: [partner-a.example]}]}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:34: clients.list[0].certs[0]: "partner-a.example": no kind before a ':' (dns:NAME, uri:URI, cn:NAME or sha256:FINGERPRINT (64 hex digits, colons allowed), such as "dns:partner-a.example" or "uri:spiffe://partners/partner-a")`}},
		{"cert fingerprint", head + "clients: {list: [{id: a, certs: [\"sha256:ab:cd\"]}]}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:34: clients.list[0].certs[0]: "sha256:ab:cd": sha256:ab:cd is not a SHA-256 fingerprint (64 hex digits, colons allowed between pairs, such as openssl x509 -noout -fingerprint -sha256 prints)`}},
		{"cert DNS name", head + "clients: {list: [{id: a, certs: [\"dns:https://a.example\"]}]}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:34: clients.list[0].certs[0]: "dns:https://a.example": dns:https://a.example is not a DNS name (a name such as partner-a.example; uri: for a URI)`}},
		{"certs not a list", head + "clients: {list: [{id: a, certs: \"cn:a\"}]}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:33: clients.list[0].certs: want a list of certificate selectors, not a value`}},
		{"cert of two clients", head + "clients:\n  list:\n    - {id: a, certs: [\"dns:a.example\"]}\n    - {id: b, keys: [k], certs: [\"DNS:A.Example\"]}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:6:34: clients.list[1].certs[0]: dns:a.example already names client "a" (a certificate names one client)`}},
		{"client id missing", head + "clients: {list: [{keys: [k]}]}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:18: clients.list[0].id: missing (required; such as id: partner-a)"}},
		{"client id invalid", head + "clients: {list: [{id: a b, keys: [k]}]}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:23: clients.list[0].id: "a b" is not a valid client id (letters, digits, '_', '-', '.'; 1 to 64)`}},
		{"duplicate client", head + "clients:\n  list:\n    - {id: a, keys: [k1]}\n    - {id: a, keys: [k1]}\nrules: [{name: a, rate: 1/s}]\n", []string{
			`t.yaml:6:12: clients.list[1].id: duplicate client id "a"`,
			"t.yaml:6:22: clients.list[1].keys[0]: key already belongs to client \"a\""}},
		{"unknown plan", head + "clients: {list: [{id: a, keys: [k], plan: gold}]}\nplans: {silver: {}}\nrules: [{name: a, rate: 1/s}]\n",
			[]string{`t.yaml:3:43: clients.list[0].plan: unknown plan "gold" (plans: silver)`}},
		{"client limits", head + "clients: {list: [{id: a, keys: [k], limits: {b: 1/s, a: 5}}]}\nrules: [{name: a, rate: 1/s}]\n", []string{
			`t.yaml:3:46: clients.list[0].limits.b: unknown rule "b" (rules: a)`,
			`t.yaml:3:57: clients.list[0].limits.a: rule a is a rate rule: override it with a rate such as 1/s, not the count 5`}},
		{"plans a list", head + "plans: [gold]\nrules: [{name: a, rate: 1/s}]\n",
			[]string{"t.yaml:3:8: plans: want a mapping of plan names to rates by rule, not a list"}},
		{"plan rates", head + "plans:\n  gold: {b: 1/s, a: 1/x, c: }\nrules: [{name: a, rate: 1/s}]\n", []string{
			`t.yaml:4:10: plans.gold.b: unknown rule "b" (rules: a)`,
			`t.yaml:4:21: plans.gold.a: "1/x": unknown period "x" (s, m, h, d or a Go duration such as 30s, 1500ms or 36h)`,
			`t.yaml:4:26: plans.gold.c: missing rate (N/s, N/m, N/h, N/d or N/<duration> such as 100/m or 100/30s; or a count in flight, such as 20, for a concurrency rule)`}},
		{"plan override too large", head + "plans: {big: {a: 20000/m}}\nrules: [{name: a, rate: 1/s, algorithm: sliding_log}]\n",
			[]string{"t.yaml:3:18: plans.big.a: sliding_log rate 20000 too large (at most 10000 per period; it stores one entry per request: use sliding_window or gcra)"}},

		// Rules.
		{"rules a mapping", head + "rules: {name: a}\n", []string{"t.yaml:3:8: rules: want a list of rules, not a mapping"}},
		{"no rules", head + "rules: []\n", []string{"t.yaml:3:8: rules: no rules (at least one rule is required)"}},
		{"rule a string", head + "rules: [api]\n",
			[]string{"t.yaml:3:9: rules[0]: want a rule (name, match, key, algorithm, rate, ...), not a value"}},
		{"rule unknown field", head + "rules:\n  - name: a\n    rate: 1/s\n    algoritm: gcra\n",
			[]string{`t.yaml:6:5: rules[0]: unknown field "algoritm" (did you mean "algorithm"? accepted: name, match, key, missing_header, algorithm, rate, concurrency, burst, delay, cost, mode, allow, priority, degrade, count, cost_header, schedule)`}},
		{"rule missing rate", head + "rules:\n  - name: a\n",
			[]string{"t.yaml:4:5: rules[0].rate: missing (required; such as rate: 100/m, or concurrency: 10; or priority/degrade for a rule that only classifies)"}},
		{"rule missing name", head + "rules:\n  - rate: 1/s\n",
			[]string{"t.yaml:4:5: rules[0].name: missing (every rule needs a name)"}},
		{"rule bad name", head + "rules: [{name: my rule, rate: 1/s}]\n",
			[]string{`t.yaml:3:16: rules[0].name: "my rule" is not a valid name (letters, digits, '_', '-', '.'; at most 64)`}},
		{"duplicate rule", head + "rules: [{name: a, rate: 1/s}, {name: a, rate: 2/s}]\n",
			[]string{`t.yaml:3:38: rules[1].name: duplicate rule name "a" (also rules[0])`}},
		{"rate without period", head + "rules: [{name: a, rate: 100}]\n",
			[]string{`t.yaml:3:25: rules[0].rate: "100" is not a rate (N/s, N/m, N/h, N/d or N/<duration> such as 100/m or 100/30s)`}},
		{"rate zero", head + "rules: [{name: a, rate: 0/s}]\n",
			[]string{`t.yaml:3:25: rules[0].rate: "0/s": the count must be at least 1 (1 to 1000000000)`}},
		{"rate period short", head + "rules: [{name: a, rate: 1/500us}]\n",
			[]string{`t.yaml:3:25: rules[0].rate: "1/500us": period 500µs out of range (1ms to 366 days, 8784h)`}},
		{"sliding_log too large", head + "rules: [{name: a, rate: 20000/m, algorithm: sliding_log}]\n",
			[]string{"t.yaml:3:25: rules[0].rate: sliding_log rate 20000 too large (at most 10000 per period; it stores one entry per request: use sliding_window or gcra)"}},
		{"burst too large", head + "rules: [{name: a, rate: 1/s, algorithm: gcra, burst: 2000000000}]\n",
			[]string{"t.yaml:3:54: rules[0].burst: burst 2000000000 out of range (1 to 1000000000)"}},
		{"burst and cost below 1", head + "rules: [{name: a, rate: 1/s, burst: 0, cost: -1}]\n", []string{
			"t.yaml:3:37: rules[0].burst: 0 is out of range (1 or more; default: the rate's N)",
			"t.yaml:3:46: rules[0].cost: -1 is out of range (1 or more; default 1)"}},
		{"algorithm", head + "rules: [{name: a, rate: 1/s, algorithm: sliding_windw}]\n",
			[]string{`t.yaml:3:41: rules[0].algorithm: unknown value "sliding_windw" (did you mean "sliding_window"? accepted: fixed_window, sliding_window, sliding_log, token_bucket, gcra, leaky_bucket)`}},
		{"mode", head + "rules: [{name: a, rate: 1/s, mode: dry-run}]\n",
			[]string{`t.yaml:3:36: rules[0].mode: unknown value "dry-run" (accepted: enforce, shadow)`}},
		{"key", head + "rules: [{name: a, rate: 1/s, key: clients}]\n",
			[]string{`t.yaml:3:35: rules[0].key: unknown key "clients" (did you mean "client"? accepted: client, ip, header:NAME, global)`}},
		{"key client without clients", head + "rules: [{name: a, rate: 1/s, key: client}]\n",
			[]string{"t.yaml:3:35: rules[0].key: client, but no clients are listed (list them under clients.list, or count by ip, header:NAME or global)"}},
		{"key header name", head + "rules: [{name: a, rate: 1/s, key: \"header:X Y\"}]\n",
			[]string{`t.yaml:3:35: rules[0].key: header name "X Y" is not a valid HTTP header name`}},
		{"match", head + "rules: [{name: a, rate: 1/s, match: {path: claims, methods: [get, \"GET,\"], hots: x}}]\n", []string{
			`t.yaml:3:44: rules[0].match.path: "claims" must start with '/'`,
			`t.yaml:3:62: rules[0].match.methods[0]: "get" is not an HTTP method in upper case (such as GET, POST)`,
			`t.yaml:3:67: rules[0].match.methods[1]: "GET," is not an HTTP method in upper case (such as GET, POST)`,
			`t.yaml:3:76: rules[0].match: unknown field "hots" (did you mean "host"? accepted: host, path, methods, headers)`}},
		{"match.host", head + "rules:\n" +
			"  - {name: a, rate: 1/s, match: {host: api.*.example.com}}\n" +
			"  - {name: b, rate: 1/s, match: {host: \"a..example.com\"}}\n" +
			"  - {name: c, rate: 1/s, match: {host: \"api example.com\"}}\n" +
			"  - {name: d, rate: 1/s, match: {host: \"api.example.com:8080\"}}\n" +
			"  - {name: e, rate: 1/s, match: {host: \"*\"}}\n" +
			"  - {name: f, rate: 1/s, match: {host: [a]}}\n" +
			"  - {name: g, rate: 1/s, match: {host: \"*example.com\"}}\n" +
			"  - {name: h, rate: 1/s, match: {host: \"-a\\u00e9.example\"}}\n", []string{
			`t.yaml:4:40: rules[0].match.host: "api.*.example.com" has a '*' other than a whole first label (a host name such as api.example.com, or *.example.com for every name below example.com)`,
			`t.yaml:5:40: rules[1].match.host: "a..example.com" has an empty label ("..", or a dot at the start or two at the end) (a host name such as api.example.com, or *.example.com for every name below example.com)`,
			`t.yaml:6:40: rules[2].match.host: "api example.com" has a port, a path, a user or a space (a host name such as api.example.com, or *.example.com for every name below example.com; the port is never matched)`,
			`t.yaml:7:40: rules[3].match.host: "api.example.com:8080" has a port, a path, a user or a space (a host name such as api.example.com, or *.example.com for every name below example.com; the port is never matched)`,
			`t.yaml:8:40: rules[4].match.host: "*" has a '*' other than a whole first label (a host name such as api.example.com, or *.example.com for every name below example.com)`,
			`t.yaml:9:40: rules[5].match.host: want a host name, such as api.example.com or *.example.com, not a list`,
			`t.yaml:10:40: rules[6].match.host: "*example.com" has a '*' other than a whole first label (a host name such as api.example.com, or *.example.com for every name below example.com)`,
			`t.yaml:11:40: rules[7].match.host: "-aé.example" has an internationalised name that is not valid (IDNA): idna: invalid label "-aé" (a host name such as api.example.com, or *.example.com for every name below example.com)`}},
		{"match.path star", head + "rules: [{name: a, rate: 1/s, match: {path: /claims/*.pdf}}]\n", []string{
			`t.yaml:3:44: rules[0].match.path: "/claims/*.pdf" has a '*' inside a segment ("*.pdf"): a '*' stands for one whole segment, as in /claims/*/documents`}},
		{"match.headers", head + "rules:\n" +
			"  - {name: a, rate: 1/s, match: {headers: {X-Env: }}}\n" +
			"  - {name: b, rate: 1/s, match: {headers: {X-Env: \"\"}}}\n" +
			"  - {name: c, rate: 1/s, match: {headers: {\"X Env\": prod}}}\n" +
			"  - {name: d, rate: 1/s, match: {headers: {Host: api.example.com}}}\n" +
			"  - {name: e, rate: 1/s, match: {headers: {X-Debug: {present: false}}}}\n" +
			"  - {name: f, rate: 1/s, match: {headers: {X-Debug: {presence: true}}}}\n" +
			"  - {name: g, rate: 1/s, match: {headers: {X-Env: \" prod\"}}}\n" +
			"  - {name: h, rate: 1/s, match: {headers: [X-Env]}}\n" +
			"  - {name: i, rate: 1/s, match: {headers: {Connection: close}}}\n" +
			"  - {name: j, rate: 1/s, match: {headers: {X-Env: [prod]}}}\n" +
			"  - {name: k, rate: 1/s, match: {headers: {Proxy-Authorization: x}}}\n", []string{
			`t.yaml:4:44: rules[0].match.headers.X-Env: missing value (a value such as prod, or { present: true } for any value)`,
			`t.yaml:5:51: rules[1].match.headers.X-Env: an empty value never matches (a value such as prod, or {present: true} for any value)`,
			`t.yaml:6:53: rules[2].match.headers.X Env: "X Env" is not a valid HTTP header name`,
			`t.yaml:7:50: rules[3].match.headers.Host: the host is matched by match.host (host: api.example.com), which reads it as the upstream does`,
			`t.yaml:8:63: rules[4].match.headers.X-Debug.present: false is not accepted: a rule matches requests that send a header, never those that leave it out, which would let a caller escape the rule by sending it (present: true, or a value such as prod)`,
			`t.yaml:9:53: rules[5].match.headers.X-Debug.present: missing (required; such as present: true)`,
			`t.yaml:9:54: rules[5].match.headers.X-Debug: unknown field "presence" (accepted: present)`,
			`t.yaml:10:51: rules[6].match.headers.X-Env: " prod" has spaces around it, which a request's value never has (write "prod")`,
			`t.yaml:11:43: rules[7].match.headers: want a mapping of header names to values, such as { X-Env: prod, X-Debug: { present: true } }, not a list`,
			`t.yaml:12:56: rules[8].match.headers.Connection: Connection describes the connection, not the request, and never reaches the upstream (name a header the caller sends, such as X-Tenant)`,
			`t.yaml:13:51: rules[9].match.headers.X-Env: want a value such as prod, or { present: true }, not a list`,
			`t.yaml:14:65: rules[10].match.headers.Proxy-Authorization: Proxy-Authorization describes the connection, not the request, and never reaches the upstream (name a header the caller sends, such as X-Tenant)`}},
		{"allow", head + "clients: {list: [{id: p, keys: [k]}]}\nrules: [{name: a, rate: 1/s, allow: [p, q, 10.0.0.0/8]}]\n",
			[]string{`t.yaml:4:41: rules[0].allow[1]: "q" is neither a listed client id nor an IP address or CIDR (client ids: p; or networks such as 10.0.0.0/8, 192.0.2.7)`}},
		{"allow without clients", head + "rules: [{name: a, rate: 1/s, allow: [p]}]\n",
			[]string{`t.yaml:3:38: rules[0].allow[0]: "p" is neither a listed client id nor an IP address or CIDR (no clients are listed; or networks such as 10.0.0.0/8, 192.0.2.7)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("t.yaml", []byte(tc.text))
			if err == nil {
				t.Fatalf("no error; parsed %+v", f)
			}
			if f != nil {
				t.Errorf("a File with errors")
			}
			got := strings.Split(err.Error(), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestAllMistakes checks that one pass reports every mistake in a file, in
// order, each at its place.
func TestAllMistakes(t *testing.T) {
	text := `listen: 127.0.0.1:8080
upstream: http://127.0.0.1:9000
store:
  on_failure: lokal
clients:
  list:
    - id: partner-a
      keys: [key-a]
      plan: gold
rules:
  - name: claims
    rate: 100/mn
    algoritm: gcra
  - name: claims
    rate: 5/s
    cost: -1
`
	want := []string{
		`t.yaml:4:15: store.on_failure: unknown value "lokal" (did you mean "local"? accepted: open, closed, local)`,
		`t.yaml:9:13: clients.list[0].plan: unknown plan "gold" (plans: none defined)`,
		`t.yaml:12:11: rules[0].rate: "100/mn": unknown period "mn" (s, m, h, d or a Go duration such as 30s, 1500ms or 36h)`,
		`t.yaml:13:5: rules[0]: unknown field "algoritm" (did you mean "algorithm"? accepted: name, match, key, missing_header, algorithm, rate, concurrency, burst, delay, cost, mode, allow, priority, degrade, count, cost_header, schedule)`,
		`t.yaml:14:11: rules[1].name: duplicate rule name "claims" (also rules[0])`,
		`t.yaml:16:11: rules[1].cost: -1 is out of range (1 or more; default 1)`,
	}
	_, err := Parse("t.yaml", []byte(text))
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("got:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	if n := len(err.(Errors)); n != len(want) {
		t.Errorf("%d errors, want %d", n, len(want))
	}
}

// TestTabInLargeFile: a file too large to locate its syntax error by
// search still names a tab in the indentation, at the library's line.
func TestTabInLargeFile(t *testing.T) {
	pad := strings.Repeat("# a comment line to pass the size up to which errors are located\n", locateLimit/64)
	text := head + pad + "rules:\n\t- name: a\n"
	_, err := Parse("t.yaml", []byte(text))
	line := strings.Count(head+pad, "\n") + 2
	want := fmt.Sprintf("t.yaml:%d:1: YAML syntax: a tab in the indentation at line %d: YAML indents with spaces only (replace the tab with spaces)", line, line)
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
