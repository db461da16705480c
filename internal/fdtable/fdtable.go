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
// 64 to 16,384 entries, left sluice with 60 to 230 threads for good
// where it needs ten: about 48 KB of stacks each, 2.4 to 7.9 MB where 0.7
// MB do, 0.2 to 0.7 KB more for each of 10,000 idle keep-alive connections
// that cost 0.34 KB without them (bench/run.sh idle). nginx does not pay it:
// its workers are single-threaded, and a table of one thread grows at once.
//
// Reserve grows the table once, at start-up, before there is a crowd. The
// table is the kernel's memory, 8 bytes an entry, not the process's.
package fdtable
