package memory

import (
	"context"
	"time"

	"github.com/sluice-rl/sluice/store"
)

var _ store.BatchAppender = (*Store)(nil)

// AppendDecideBatch is DecideBatch appending to dst: it allocates nothing
// when dst has room.
func (s *Store) AppendDecideBatch(_ context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	for i := range reqs {
		r := &reqs[i]
		dst = append(dst, store.Result{})
		res := &dst[len(dst)-1]
		shared, err := s.decide(r.Key, &r.Limit, now, r.Cost, &res.Decision)
		switch {
		case err == store.ErrClosed:
			return dst[:len(dst)-1], err
		case err != nil:
			res.Err = err
		}
		res.Shared = shared
	}
	return dst, nil
}
