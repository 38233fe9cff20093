package configstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/token"
)

// Report says what Reconcile repaired. Each slice holds keys, sorted.
type Report struct {
	// Missing keys have a value in the table but none in the hash; the
	// value was added.
	Missing []string
	// Stale keys have a value in both, but the hash's value or version
	// differed (or was not an entry of this package); it was overwritten.
	Stale []string
	// Extra keys have a value in the hash but none in the table (deleted,
	// or never written there); the value was removed.
	Extra []string
	// Skipped keys differed but changed in the hash between Reconcile's
	// read and its repair; they were left to that concurrent write.
	Skipped []string
	// Built is true if the hash had no built marker and Reconcile set it.
	Built bool
}

// Fixes is the number of keys repaired: Missing, Stale and Extra.
func (r Report) Fixes() int { return len(r.Missing) + len(r.Stale) + len(r.Extra) }

type fixKind int

const (
	fixMissing fixKind = iota
	fixStale
	fixExtra
	fixMarker // the built marker: repaired silently
)

// fix is one compare-and-set of fix.lua: field goes from expected to
// wanted, where "-" is "no such field" and "=" + s is "holds s".
type fix struct {
	field, expected, wanted string
	kind                    fixKind
}

// diff returns the fixes that make the hash (seen: field → entry as read)
// agree with the table (rows) on every field of either. Tombstones that
// differ only in version are left alone: they hide nothing.
func diff(seen map[string]string, rows map[string]entry, extra ...fix) []fix {
	fixes := extra
	for k, row := range rows {
		raw, present := seen[k]
		cur, ok := decode(raw)
		expected := "-"
		if present {
			expected = "=" + raw
		}
		want := "=" + row.encode()
		switch {
		case row.deleted:
			if present && (!ok || !cur.deleted) {
				fixes = append(fixes, fix{k, expected, want, fixExtra})
			}
		case !present || (ok && cur.deleted):
			fixes = append(fixes, fix{k, expected, want, fixMissing})
		case !ok || cur.version != row.version || cur.value != row.value:
			fixes = append(fixes, fix{k, expected, want, fixStale})
		}
	}
	for k, raw := range seen {
		if _, inDB := rows[k]; inDB || special(k) {
			continue
		}
		if e, ok := decode(raw); ok && e.deleted {
			continue // a tombstone the table has forgotten: harmless
		}
		fixes = append(fixes, fix{k, "=" + raw, "-", fixExtra})
	}
	return fixes
}

// runFixes applies fixes with fix.lua and reports, per fix, whether it
// applied. guard is "" or the token of claim.
func (s *Store) runFixes(ctx context.Context, fixes []fix, guard string) ([]bool, error) {
	if len(fixes) == 0 {
		return nil, nil
	}
	args := make([]any, 0, 2+3*len(fixes))
	args = append(args, s.channel, guard)
	for _, f := range fixes {
		args = append(args, f.field, f.expected, f.wanted)
	}
	res, err := fixScript.Run(ctx, s.rdb, []string{s.hash}, args...).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("configstore: repair %s: %w", s.hash, redisErr(err))
	}
	if len(res) != len(fixes) {
		return nil, fmt.Errorf("configstore: repair %s: %d results for %d fixes", s.hash, len(res), len(fixes))
	}
	out := make([]bool, len(res))
	for i, r := range res {
		out[i] = r == 1
	}
	return out, nil
}

// Reconcile compares the table with the hash and repairs the hash in the
// table's favour: it adds missing values, overwrites stale ones and
// removes extra ones, and publishes the repairs to watchers. It reads the
// hash first and the table second, so a write that is in the hash is in
// the table snapshot too; each repair is a compare-and-set, so a write
// that lands in between is never overwritten (its key is reported
// Skipped). Cost: one HGETALL, one query, one script call.
//
// A hash without its built marker is built only from a table read begun
// after Reconcile claimed it (one more round trip): if the hash is deleted
// or another rebuild takes over in between, nothing is repaired and every
// key is reported Skipped.
func (s *Store) Reconcile(ctx context.Context) (Report, error) {
	seen, err := s.rdb.HGetAll(ctx, s.hash).Result()
	if err != nil {
		return Report{}, fmt.Errorf("configstore: reconcile: %w", err)
	}
	var marker []fix
	guard := ""
	if _, built := seen[builtField]; !built {
		guard = token.New()
		if seen, err = s.claim(ctx, guard); err != nil {
			return Report{}, fmt.Errorf("configstore: reconcile: %w", err)
		}
		marker = append(marker, fix{builtField, "-", "=" + time.Now().UTC().Format(time.RFC3339Nano), fixMarker})
	}
	rows, err := s.load(ctx, nil)
	if err != nil {
		return Report{}, fmt.Errorf("configstore: reconcile: %w", err)
	}
	fixes := diff(seen, rows, marker...)
	applied, err := s.runFixes(ctx, fixes, guard)
	if err != nil {
		return Report{}, fmt.Errorf("configstore: reconcile: %w", err)
	}
	var r Report
	for i, f := range fixes {
		switch {
		case f.kind == fixMarker:
			r.Built = applied[i]
		case !applied[i]:
			r.Skipped = append(r.Skipped, f.field)
		case f.kind == fixMissing:
			r.Missing = append(r.Missing, f.field)
		case f.kind == fixStale:
			r.Stale = append(r.Stale, f.field)
		default:
			r.Extra = append(r.Extra, f.field)
		}
	}
	for _, l := range [][]string{r.Missing, r.Stale, r.Extra, r.Skipped} {
		slices.Sort(l)
	}
	s.stats.reconciles.Add(1)
	s.stats.fixes.Add(int64(r.Fixes()))
	return r, nil
}

// claim writes guard into the rebuild field of a hash that is not built and
// returns the hash as it then is, in one transaction. Writes applied later
// stay in the hash unless it is deleted, which deletes the guard too.
func (s *Store) claim(ctx context.Context, guard string) (map[string]string, error) {
	var all *redis.MapStringStringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.hash, rebuildField, guard)
		all = p.HGetAll(ctx, s.hash)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return all.Val(), nil
}

// Run calls Reconcile every interval until ctx ends, then returns
// context.Cause(ctx). Each result goes to Options.OnReconcile, if set;
// Reconcile errors do not stop Run. If OnReconcile panics, Run recovers
// and returns the panic as an error (a reconciliation loop that dies
// silently would let drift pile up unnoticed).
func (s *Store) Run(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		return fmt.Errorf("%w: Run interval %s", ErrInvalid, every)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
		r, rerr := s.Reconcile(ctx)
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if s.opts.OnReconcile != nil {
			if err := s.report(r, rerr); err != nil {
				return err
			}
		}
	}
}

func (s *Store) report(r Report, rerr error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("configstore: OnReconcile panicked: %v", p)
		}
	}()
	s.opts.OnReconcile(r, rerr)
	return nil
}
