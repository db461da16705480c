package steering

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/store/redis"
)

// Backend is where the State is kept: a file for one instance, Redis for
// every instance that shares its counters.
type Backend interface {
	// Load returns the stored State (the zero State when none is stored)
	// and the backend's clock now, by which overrides expire.
	Load(ctx context.Context) (State, time.Time, error)
	// Commit stores next (whose Version is prev+1, or more when an
	// instance restores what the store lost) if the stored version is
	// still prev, with the audit records, keeping the newest keep. It
	// reports false, having changed nothing, when another change came
	// first.
	Commit(ctx context.Context, prev uint64, next State, audit []Record, keep int) (bool, error)
	// Audit returns the newest n records, newest first.
	Audit(ctx context.Context, n int) ([]Record, error)
	// Watch calls changed whenever another instance may have committed
	// (nothing for a backend only one instance uses), until stop.
	Watch(changed func()) (stop func())
	// Shared reports whether other instances read the same State.
	Shared() bool
}

// FileBackend keeps the State and its audit trail in one JSON file,
// written whole to a temporary file beside it and renamed over it, so that
// a crash leaves the old file or the new one, never half of one.
type FileBackend struct {
	path  string
	clock clock.Clock
	mu    sync.Mutex
}

// NewFileBackend returns the backend of the file at path; the file is made
// at the first change. A nil clock is clock.Real{}.
func NewFileBackend(path string, c clock.Clock) *FileBackend {
	if c == nil {
		c = clock.Real{}
	}
	return &FileBackend{path: path, clock: c}
}

// fileDoc is the file's contents.
type fileDoc struct {
	State State    `json:"state"`
	Audit []Record `json:"audit"`
}

// read reads the file; a missing one is the zero State.
func (f *FileBackend) read() (fileDoc, error) {
	var doc fileDoc
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return doc, nil
	}
	if err != nil {
		return doc, fmt.Errorf("steering: %w", err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return doc, fmt.Errorf("steering: %s is not sluice's runtime file (%v); move it away to start without overrides", f.path, err)
	}
	return doc, nil
}

// Load reads the file.
func (f *FileBackend) Load(context.Context) (State, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	doc, err := f.read()
	return doc.State, f.clock.Now(), err
}

// Commit writes next if the file's version is still prev. It holds an
// advisory lock on path + ".lock" meanwhile, so that two processes given
// the same file (two instances on one machine) take turns rather than
// lose a change.
func (f *FileBackend) Commit(_ context.Context, prev uint64, next State, audit []Record, keep int) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	unlock, err := lockFile(f.path + ".lock")
	if err != nil {
		return false, err
	}
	defer unlock()
	doc, err := f.read()
	if err != nil {
		return false, err
	}
	if doc.State.Version != prev {
		return false, nil
	}
	recs := make([]Record, 0, len(audit)+len(doc.Audit))
	for i := len(audit) - 1; i >= 0; i-- { // newest first, as Redis's list
		recs = append(recs, audit[i])
	}
	recs = append(recs, doc.Audit...)
	doc = fileDoc{State: next, Audit: recs[:min(len(recs), max(keep, 1))]}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return false, fmt.Errorf("steering: %w", err)
	}
	return true, writeAtomically(f.path, append(data, '\n'))
}

// writeAtomically writes data to path through a temporary file in the
// same directory, synced before it is renamed over path.
func writeAtomically(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("steering: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // nothing once renamed
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("steering: write %s: %w", path, err)
	}
	return nil
}

// lockFile takes an exclusive advisory lock on path, made if missing.
func lockFile(path string) (unlock func(), err error) {
	fd, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("steering: lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(fd.Fd()), syscall.LOCK_EX); err != nil {
		fd.Close()
		return nil, fmt.Errorf("steering: lock %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(int(fd.Fd()), syscall.LOCK_UN); fd.Close() }, nil
}

// Audit returns the newest n records.
func (f *FileBackend) Audit(_ context.Context, n int) ([]Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	doc, err := f.read()
	return doc.Audit[:min(n, len(doc.Audit))], err
}

// Watch does nothing: only this instance writes the file.
func (f *FileBackend) Watch(func()) func() { return func() {} }

// Shared is false.
func (f *FileBackend) Shared() bool { return false }

// RedisStore is what RedisBackend needs of a Redis store: the steering
// document's commands of *redis.Store (and of what wraps it).
type RedisStore interface {
	LoadSteering(ctx context.Context) (redis.SteeringDoc, error)
	CommitSteering(ctx context.Context, prev, next uint64, doc []byte, audit [][]byte, keep int) (bool, error)
	SteeringAudit(ctx context.Context, n int) ([][]byte, error)
	WatchSteering(changed func()) (stop func())
}

// RedisBackend keeps the State in the Redis of a redis.Store, under
// its prefix, for every instance sharing it.
type RedisBackend struct{ s RedisStore }

// NewRedisBackend returns the backend of s.
func NewRedisBackend(s RedisStore) *RedisBackend { return &RedisBackend{s: s} }

// Load reads the State and Redis TIME.
func (r *RedisBackend) Load(ctx context.Context) (State, time.Time, error) {
	d, err := r.s.LoadSteering(ctx)
	if err != nil {
		return State{}, time.Time{}, err
	}
	var st State
	if d.Version > 0 {
		if err := json.Unmarshal(d.Doc, &st); err != nil {
			return State{}, d.Now, fmt.Errorf("steering: the stored state (version %d) is not sluice's: %v", d.Version, err)
		}
		st.Version = d.Version // the hash's, which the script compares
	}
	return st, d.Now, nil
}

// Commit stores next if the version is still prev.
func (r *RedisBackend) Commit(ctx context.Context, prev uint64, next State, audit []Record, keep int) (bool, error) {
	doc, err := json.Marshal(next)
	if err != nil {
		return false, fmt.Errorf("steering: %w", err)
	}
	recs := make([][]byte, len(audit))
	for i := range audit {
		if recs[i], err = json.Marshal(audit[i]); err != nil {
			return false, fmt.Errorf("steering: %w", err)
		}
	}
	return r.s.CommitSteering(ctx, prev, next.Version, doc, recs, keep)
}

// Audit returns the newest n records.
func (r *RedisBackend) Audit(ctx context.Context, n int) ([]Record, error) {
	raw, err := r.s.SteeringAudit(ctx, n)
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(raw))
	for _, b := range raw {
		var rec Record
		if json.Unmarshal(b, &rec) == nil {
			out = append(out, rec)
		}
	}
	return out, nil
}

// Watch subscribes to the store's steering channel.
func (r *RedisBackend) Watch(changed func()) func() { return r.s.WatchSteering(changed) }

// Shared is true.
func (r *RedisBackend) Shared() bool { return true }
