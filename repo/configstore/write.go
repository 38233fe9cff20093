package configstore

import (
	"context"
	"fmt"
	"slices"
)

// Set stores value under key: in the table first (a transaction that
// bumps the key's version), then in the hash, then to watchers. See
// SetMany.
func (s *Store) Set(ctx context.Context, key, value string) error {
	return s.SetMany(ctx, map[string]string{key: value})
}

// SetMany stores several values in one transaction, then copies them into
// the hash, with a version check per key, and publishes them, in one
// script call. A key's version is one above its previous version, so of
// two concurrent writes of a key the one committed later has the higher
// version and wins in the hash too, whichever copy arrives first.
//
// An error wrapping ErrNotMirrored means the transaction committed but
// the copy failed; Reconcile (or a rebuild) repairs the hash. The copy
// runs even if ctx ends after the commit, for at most 5 seconds.
// An empty map does nothing.
func (s *Store) SetMany(ctx context.Context, values map[string]string) error {
	if len(values) == 0 {
		return nil
	}
	sorted := make([]string, 0, len(values))
	for k, v := range values {
		if err := s.checkKey(k); err != nil {
			return err
		}
		if err := s.checkValue(v); err != nil {
			return fmt.Errorf("key %q: %w", k, err)
		}
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	versions, err := s.upsert(ctx, sorted, values)
	if err != nil {
		return err
	}
	changes := make([]Change, len(sorted))
	for i, k := range sorted {
		changes[i] = Change{Key: k, Value: values[k], Version: versions[k]}
	}
	return s.mirror(ctx, changes)
}

// Delete removes key's value: the table keeps the key as a tombstone with
// a bumped version, and the hash does too, so that a late copy of an
// older Set cannot bring the value back. Deleting a key that has no value
// is not an error and changes nothing. Errors are as for SetMany.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.checkKey(key); err != nil {
		return err
	}
	v, err := s.tombstone(ctx, key)
	if err != nil || v == 0 {
		return err
	}
	return s.mirror(ctx, []Change{{Key: key, Version: v, Deleted: true}})
}

// mirror copies committed changes into the hash (each only if newer than
// what it holds) and publishes the ones it wrote.
func (s *Store) mirror(ctx context.Context, changes []Change) error {
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mirrorTimeout)
	defer cancel()
	args := make([]any, 0, 1+2*len(changes))
	args = append(args, s.channel)
	for _, c := range changes {
		e := entry{value: c.Value, version: c.Version, deleted: c.Deleted}
		args = append(args, c.Key, e.encode())
	}
	if err := applyScript.Run(mctx, s.rdb, []string{s.hash}, args...).Err(); err != nil {
		s.stats.mirrorErrors.Add(1)
		return fmt.Errorf("%w: %w", ErrNotMirrored, err)
	}
	return nil
}
