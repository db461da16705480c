package limiter_test

import (
	"math/bits"
	"time"
)

// u128 is an unsigned 128-bit integer, enough for counts times periods.
type u128 struct{ hi, lo uint64 }

// mul returns a*b for a, b >= 0.
func mul(a, b int64) u128 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return u128{hi, lo}
}

func (x u128) add(y u128) u128 {
	lo, carry := bits.Add64(x.lo, y.lo, 0)
	hi, _ := bits.Add64(x.hi, y.hi, carry)
	return u128{hi, lo}
}

func (x u128) greater(y u128) bool { return x.hi > y.hi || (x.hi == y.hi && x.lo > y.lo) }

// within reports whether admitting total over an interval of length
// elapsed µs keeps to the documented bound (limiter's package doc): for
// the windows and the log N*(ceil(L/P)+1), for the buckets B + N*L/P.
func (r *run) within(total, elapsed int64) bool {
	n, b, p := r.l.Rate(), r.l.Burst(), int64(r.l.Period()/time.Microsecond)
	if r.l.Algorithm().HasBurst() {
		return !mul(total, p).greater(mul(b, p).add(mul(n, elapsed)))
	}
	windows := (elapsed+p-1)/p + 1
	return !mul(1, total).greater(mul(n, windows))
}

// checkWindows: at most N in each epoch-aligned window.
func (r *run) checkWindows() {
	r.t.Helper()
	p := int64(r.l.Period() / time.Microsecond)
	count := map[int64]int64{}
	for _, a := range r.admitted {
		w := a.at / p
		if count[w] += a.cost; count[w] > r.l.Rate() {
			r.t.Fatalf("%v: %d admitted in the window starting at %dµs", r.l, count[w], w*p)
		}
	}
}

// checkLog: at most N in any interval [a, a+P), scanning from each
// admission.
func (r *run) checkLog() {
	r.t.Helper()
	p := int64(r.l.Period() / time.Microsecond)
	sum, j := int64(0), 0
	for i, a := range r.admitted {
		for j < len(r.admitted) && r.admitted[j].at < a.at+p {
			sum += r.admitted[j].cost
			j++
		}
		if sum > r.l.Rate() {
			r.t.Fatalf("%v: %d admitted in [%d, %d)", r.l, sum, a.at, a.at+p)
		}
		sum -= r.admitted[i].cost
	}
}

// checkBucket: at most B + N*L/P between any two admissions L apart,
// those two included.
func (r *run) checkBucket() {
	r.t.Helper()
	for i, a := range r.admitted {
		sum := int64(0)
		for _, z := range r.admitted[i:] {
			sum += z.cost
			if !r.within(sum, z.at-a.at) {
				r.t.Fatalf("%v: %d admitted in [%d, %d]", r.l, sum, a.at, z.at)
			}
		}
	}
}
