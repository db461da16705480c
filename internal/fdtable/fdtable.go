// Package fdtable grows the process's descriptor table ahead of need.
//
// Linux keeps a process's open descriptors in one table that it doubles
// whenever a new descriptor does not fit. When the process has more than
// one thread, as every Go program has, each doubling waits for an RCU
// grace period (synchronize_rcu, milliseconds on a busy machine), and every
// thread that opens a descriptor meanwhile (accept4, dup) waits with it.
// Go's scheduler sees those threads stuck in system calls and starts new
// ones to run the other goroutines, which block on the next descriptor in
// turn: a crowd of connections arriving at once, growing the table from
// 64 to 16,384 entries, left sluice with about 100 to 230 threads for
// good (some 50 KB of stacks each, the larger part of an idle keep-alive
// connection's measured memory) where it needs ten. nginx does not pay it:
// its workers are single-threaded, and a table of one thread grows at once.
//
// Reserve grows the table once, at start-up, before there is a crowd. The
// table is the kernel's memory, 8 bytes an entry, not the process's.
package fdtable
