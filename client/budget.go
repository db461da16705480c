package client

import "sync"

// RetryBudget bounds the retries of all of a Transport's requests together,
// as gRPC's retry throttling and the per-client retry budget of Google's
// SRE book do: every request sent for the first time earns Ratio of a
// retry, every retry spends one, and a retry is made only while one is
// earned. A dependency that fails everything therefore sees at most
// Ratio more requests than the callers make (plus Reserve), not
// MaxRetries times as many.
type RetryBudget struct {
	// Ratio is the retries earned per request; 0 means 0.1 (at most a
	// tenth more requests), a negative value no retries at all.
	Ratio float64
	// Reserve is the most retries that can be saved up, and what the
	// Transport starts with; 0 means 10.
	Reserve int
}

// RetryBudget's defaults.
const (
	defaultRetryRatio   = 0.1
	defaultRetryReserve = 10
)

// budget is a RetryBudget in use.
type budget struct {
	mu     sync.Mutex
	ratio  float64
	most   float64
	tokens float64
}

func newBudget(b RetryBudget) *budget {
	if b.Ratio == 0 {
		b.Ratio = defaultRetryRatio
	}
	if b.Reserve <= 0 {
		b.Reserve = defaultRetryReserve
	}
	if b.Ratio < 0 || b.Ratio != b.Ratio { // negative or NaN: no retries
		b.Ratio, b.Reserve = 0, 0
	}
	return &budget{ratio: b.Ratio, most: float64(b.Reserve), tokens: float64(b.Reserve)}
}

// deposit earns a request's share of a retry.
func (b *budget) deposit() {
	b.mu.Lock()
	b.tokens = min(b.tokens+b.ratio, b.most)
	b.mu.Unlock()
}

// withdraw spends a retry, and reports whether one was earned.
func (b *budget) withdraw() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
