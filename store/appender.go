package store

import (
	"context"
	"time"
)

// BatchAppender is implemented by stores that can append a batch's
// results to memory the caller gives, so that a caller that pools its
// memory (the decision Engine) allocates nothing per batch. The results
// and the error are DecideBatch's.
type BatchAppender interface {
	// AppendDecideBatch decides reqs as DecideBatch does and appends their
	// results to dst.
	AppendDecideBatch(ctx context.Context, dst []Result, reqs []Request, now time.Time) ([]Result, error)
}
