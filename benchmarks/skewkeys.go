package benchmarks

import (
	"sync"
	"sync/atomic"
	"time"
)

// skewKeys is what the skew scenario knows of its keys' writes: per key,
// the versions written (1, 2, …; the rows start at 0) and when each write
// returned. Writes of one key are made one at a time, so that versions
// are committed in order and the newest returned write is the database's
// row. A read is judged without keeping it: it is stale if a write of a
// newer version than it answered had returned before it began, and its
// age is how long before. Memory: a small struct per key and one time per
// write, never one per read.
type skewKeys struct {
	keys []skewKey
}

type skewKey struct {
	write  sync.Mutex   // held across a write of the key
	latest atomic.Int64 // the newest version whose write returned
	mu     sync.Mutex   // guards done
	// done[i] is when the write of version i+1 returned; appended before
	// latest is raised.
	done []time.Time
}

func newSkewKeys(n int) *skewKeys { return &skewKeys{keys: make([]skewKey, n)} }

// write makes the next write of key k by calling do with its version, and
// records its return if do succeeded. A failed write records nothing: its
// version is written again by the next write of the key.
func (s *skewKeys) write(k int, do func(ver int64) error) error {
	key := &s.keys[k]
	key.write.Lock()
	defer key.write.Unlock()
	ver := key.latest.Load() + 1
	if err := do(ver); err != nil {
		return err
	}
	now := time.Now()
	key.mu.Lock()
	key.done = append(key.done, now)
	key.mu.Unlock()
	key.latest.Store(ver)
	return nil
}

// age judges a read of key k, begun at begin, that answered version ver:
// -1 if no write of a newer version had returned before begin; otherwise
// how long before begin the first such write (that of ver+1) returned.
func (s *skewKeys) age(k int, ver int64, begin time.Time) time.Duration {
	key := &s.keys[k]
	if ver >= key.latest.Load() { // the common case, without a lock
		return -1
	}
	key.mu.Lock()
	next := key.done[ver] // version ver+1's
	key.mu.Unlock()
	if !next.Before(begin) {
		return -1
	}
	return begin.Sub(next)
}
