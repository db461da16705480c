// Package distributedtest tests sluice as several instances sharing one
// counter per client in Redis, end to end: real redis-server processes
// (standalone and a three-master Redis Cluster, from internal/redistest),
// gateways running in this process on their own loopback ports, each with
// its own connection to Redis, and an upstream that counts, per client,
// what reaches it.
//
// It checks the product's promise for distributed use: partner A gets 100
// requests a minute across all instances, not 100 per instance; a limited
// caller's retries are answered without asking Redis; and when Redis dies,
// hangs or comes back, each on_failure policy (open, closed, local) does what
// it says, no request waits much longer than the store's timeout, and shared
// counting resumes by itself.
//
// The package holds tests only. Every test starts its own redis-server (so
// its command statistics are its own) and uses its own key prefix; none
// flushes a database.
package distributedtest
