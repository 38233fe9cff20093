package configstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/asidekit/asidekit/internal/backoff"
	"github.com/asidekit/asidekit/internal/token"
)

// maxReadAttempts bounds how often a read rebuilds a hash that keeps
// disappearing (evicted or flushed as soon as it is built); then it reads
// the table, as when Redis fails.
const maxReadAttempts = 3

// vanished is the error of a read whose hash disappeared after each of its
// maxReadAttempts rebuilds. Redis is not keeping the hash: the read may
// fall back to the table.
func (s *Store) vanished(op string) error {
	return redisErr(fmt.Errorf("configstore: %s: hash %s vanished %d times after being rebuilt", op, s.hash, maxReadAttempts))
}

// Get returns key's value from the hash: one round trip (HMGET of the key
// and the built marker). If the hash is missing it is first rebuilt from
// the table, once for all concurrent readers. A key without a value gives
// ErrNotFound. A hash entry this package cannot have written is replaced
// from the table.
//
// If Redis fails (an error or timeout of the read, or of the rebuild, or
// the hash vanishing again after each of 3 rebuilds), Get reads the key
// from the table instead (one query, shared by the concurrent Gets of the
// key in this Store) and counts it in Stats.DBFallbacks; if the table
// fails too, the error wraps both errors. It does not fall back with Options.NoDBFallback (the error then
// wraps the Redis error), on ErrTimeout, or once ctx has ended (the error
// then wraps ctx's cause).
func (s *Store) Get(ctx context.Context, key string) (string, error) {
	if err := s.checkKey(key); err != nil {
		return "", err
	}
	v, err := s.getHash(ctx, key)
	if err == nil || errors.Is(err, ErrNotFound) {
		return v, err
	}
	if !s.fallBack(ctx, err) {
		return "", readFailed(ctx, err)
	}
	rows, err := s.readTable(ctx, key, []string{key}, err)
	if err != nil {
		return "", err
	}
	if e, ok := rows[key]; ok && !e.deleted {
		return e.value, nil
	}
	return "", ErrNotFound
}

// getHash is Get without the fallback.
func (s *Store) getHash(ctx context.Context, key string) (string, error) {
	for range maxReadAttempts {
		vals, err := s.rdb.HMGet(ctx, s.hash, key, builtField).Result()
		if err != nil {
			return "", fmt.Errorf("configstore: get %q: %w", key, redisErr(err))
		}
		if vals[1] == nil { // not built
			if err := s.rebuild(ctx); err != nil {
				return "", err
			}
			continue
		}
		raw, present := vals[0].(string)
		if !present {
			return "", ErrNotFound
		}
		e, ok := decode(raw)
		if !ok {
			fixed, err := s.repair(ctx, map[string]string{key: raw})
			if err != nil {
				return "", err
			}
			e, ok = fixed[key]
		}
		if !ok || e.deleted {
			return "", ErrNotFound
		}
		return e.value, nil
	}
	return "", s.vanished(fmt.Sprintf("get %q", key))
}

// All returns every key with a value: one round trip (HGETALL) when the
// hash is built; otherwise it is rebuilt first, as in Get. The map is the
// caller's.
//
// If Redis fails, All reads the scope's rows from the table instead, one
// query shared by the concurrent Alls of this Store, with the rules and
// errors of Get's fallback.
func (s *Store) All(ctx context.Context) (map[string]string, error) {
	all, err := s.allHash(ctx)
	if err == nil {
		return all, nil
	}
	if !s.fallBack(ctx, err) {
		return nil, readFailed(ctx, err)
	}
	rows, err := s.readTable(ctx, allFlight, nil, err)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rows))
	for k, e := range rows {
		if !e.deleted {
			out[k] = e.value
		}
	}
	return out, nil
}

// allHash is All without the fallback.
func (s *Store) allHash(ctx context.Context) (map[string]string, error) {
	for range maxReadAttempts {
		raw, err := s.rdb.HGetAll(ctx, s.hash).Result()
		if err != nil {
			return nil, fmt.Errorf("configstore: all: %w", redisErr(err))
		}
		if _, built := raw[builtField]; !built {
			if err := s.rebuild(ctx); err != nil {
				return nil, err
			}
			continue
		}
		out := make(map[string]string, len(raw))
		var corrupt map[string]string
		for k, v := range raw {
			if special(k) {
				continue
			}
			e, ok := decode(v)
			switch {
			case !ok:
				if corrupt == nil {
					corrupt = make(map[string]string)
				}
				corrupt[k] = v
			case !e.deleted:
				out[k] = e.value
			}
		}
		if corrupt != nil {
			fixed, err := s.repair(ctx, corrupt)
			if err != nil {
				return nil, err
			}
			for k, e := range fixed {
				if !e.deleted {
					out[k] = e.value
				}
			}
		}
		return out, nil
	}
	return nil, s.vanished("all")
}

// repair replaces the given hash entries (field → what the hash held) with
// the table's rows, by compare-and-set, and returns the table's entries for
// those fields.
func (s *Store) repair(ctx context.Context, seen map[string]string) (map[string]entry, error) {
	fields := make([]string, 0, len(seen))
	for k := range seen {
		fields = append(fields, k)
	}
	rows, err := s.load(ctx, fields)
	if err != nil {
		return nil, err
	}
	fixes := diff(seen, rows)
	if _, err := s.runFixes(ctx, fixes, ""); err != nil {
		return nil, err
	}
	s.stats.repairs.Add(int64(len(seen)))
	return rows, nil
}

// rebuild makes sure the hash is built. Concurrent callers in this process
// share one attempt; across processes, the rebuild lock lets one query the
// table while the others poll for the built marker. Each caller stops
// waiting when its own context ends; the shared attempt is bounded by
// WaitTimeout + LockTTL.
func (s *Store) rebuild(ctx context.Context) error {
	ch := s.rebuilds.DoChan("rebuild", func() (any, error) {
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.WaitTimeout+s.opts.LockTTL)
		defer cancel()
		return nil, s.rebuildShared(bg)
	})
	select {
	case r := <-ch:
		return r.Err
	case <-ctx.Done():
		return fmt.Errorf("configstore: waiting for the hash to be rebuilt: %w", context.Cause(ctx))
	}
}

// rebuildShared takes the rebuild lock and fills the hash, or waits for
// another holder to have built it, until WaitTimeout. A rebuild refused by
// rebuild.lua (the hash was deleted meanwhile, or another rebuild took
// over) reads the table again.
func (s *Store) rebuildShared(ctx context.Context) error {
	deadline := time.Now().Add(s.opts.WaitTimeout)
	retry := backoff.New(2*time.Millisecond, 50*time.Millisecond)
	waited := false
	for {
		lease := token.New()
		state, err := lockScript.Run(ctx, s.rdb, []string{s.hash, s.lock},
			lease, strconv.FormatInt(s.opts.LockTTL.Milliseconds(), 10)).Int()
		if err != nil {
			return fmt.Errorf("configstore: rebuild lock: %w", redisErr(err))
		}
		switch state {
		case 1: // built, by someone else
			if waited {
				s.stats.rebuildWaits.Add(1)
			}
			return nil
		case 2:
			rows, err := s.loadLocked(ctx, lease)
			if err != nil {
				return err
			}
			landed, err := s.fill(ctx, lease, rows)
			if err != nil || landed {
				return err
			}
			s.stats.rebuildsLost.Add(1)
			if !time.Now().Before(deadline) {
				return fmt.Errorf("%w (%s; the hash was deleted during each rebuild)", ErrTimeout, s.opts.WaitTimeout)
			}
			continue
		}
		wait := retry.Next()
		if !time.Now().Add(wait).Before(deadline) {
			return fmt.Errorf("%w (%s)", ErrTimeout, s.opts.WaitTimeout)
		}
		waited = true
		if err := backoff.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("configstore: waiting for the hash to be rebuilt: %w", err)
		}
	}
}

// loadLocked reads the scope's rows for a rebuild holding the lock lease;
// if that fails, it releases the lock.
func (s *Store) loadLocked(ctx context.Context, lease string) (map[string]entry, error) {
	rows, err := s.load(ctx, nil)
	if err != nil {
		_ = unlockScript.Run(context.WithoutCancel(ctx), s.rdb, []string{s.lock}, lease).Err()
	}
	return rows, err
}

// fill writes rows, read while holding the lock lease, into the hash, marks
// it built and releases the lock. It reports false, having written
// nothing but released the lock, if rebuild.lua refused them.
func (s *Store) fill(ctx context.Context, lease string, rows map[string]entry) (bool, error) {
	args := make([]any, 0, 3+2*len(rows))
	args = append(args, s.channel, lease, time.Now().UTC().Format(time.RFC3339Nano))
	for k, e := range rows {
		args = append(args, k, e.encode())
	}
	n, err := rebuildScript.Run(ctx, s.rdb, []string{s.hash, s.lock}, args...).Int()
	if err != nil {
		return false, fmt.Errorf("configstore: rebuild %s: %w", s.hash, redisErr(err))
	}
	if n < 0 {
		return false, nil
	}
	s.stats.rebuilds.Add(1)
	return true, nil
}
