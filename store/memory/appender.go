package memory

import (
	"context"
	"time"

	"github.com/sluice-rl/sluice/store"
)

var _ store.BatchAppender = (*Store)(nil)

// AppendDecideBatch is DecideBatch appending to dst: it allocates nothing
// when dst has room.
func (s *Store) AppendDecideBatch(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	for _, r := range reqs {
		d, err := s.Decide(ctx, r.Key, r.Limit, now, r.Cost)
		if err == store.ErrClosed {
			return dst, err
		}
		dst = append(dst, store.Result{Decision: d, Err: err})
	}
	return dst, nil
}
