package cacheaside

import (
	"context"
	"fmt"

	"github.com/asidekit/asidekit/internal/script"
	"github.com/asidekit/asidekit/internal/token"
)

// SetIfVersion is the write-through form of Set for a writer that read
// id's version (Version) before it changed the source of truth: it stores
// v if the version is still that one, and otherwise deletes the entry, as
// Invalidate does. Either way it replaces the version, so that no load
// that began before it can store over it. stored reports which it did.
//
// Why a write's own value is safe to store: any other invalidation of id
// after the writer's read (another writer's upkeep, a change that
// repo/cdc applies) replaces the version, and SetIfVersion then deletes.
// So two writers whose upkeeps run out of commit order never leave the
// older value cached. With Options.ReplicaAcks, when the breaker is open,
// or in the settle window (Options.SettleWindow), it invalidates instead; on a Redis failure it queues an
// invalidation for background retry and the error matches
// ErrInvalidationPending, as Set's does. A value that cannot be stored (too
// large, or the codec fails) is not stored: id is invalidated.
func (e *Entity[T]) SetIfVersion(ctx context.Context, id, version string, v T) (stored bool, err error) {
	return e.storeIf(ctx, id, version, 0, &v)
}

// storeIf is SetIfVersion (at 0) and storeFromLog (version unused); v nil
// stores a "not found" (without null caching, Policy.NullTTL Disabled, it
// invalidates).
func (e *Entity[T]) storeIf(ctx context.Context, id, version string, at uint64, v *T) (stored bool, err error) {
	key, err := e.key(id)
	if err != nil {
		return false, err
	}
	if e.c.acks.n != 0 || !e.c.br.Allow() || e.settling() {
		// In the settle window, the version the writer read may be one
		// that a failed invalidation, still waiting for its retry, must
		// replace (see settle.go): invalidate.
		return false, e.Invalidate(ctx, id)
	}
	var val T
	if v != nil {
		val = *v
	} else if e.p.NullTTL == 0 {
		return false, e.Invalidate(ctx, id)
	}
	entry, px, err := e.makeEntry(val, v != nil, 0)
	if err != nil { // too large, or the codec failed: the old value must still go
		return false, e.Invalidate(ctx, id)
	}
	lsn := writeLSN(ctx)
	defer e.local.wrote(ctx, key) // near cache: drop ours (and announce) once Redis has the write
	// RunMany, not Run: after a commit the call shares the pipeline of the
	// commit's other effects (script.Batch).
	args := []any{token.New(), e.verPX, lsnArg(lsn), entry, px, version}
	if at != 0 {
		args = append(args, lsnArg(at))
	}
	call := []script.Call{{Script: writeScript, Keys: []string{key, key + ":ver"}, Args: args}}
	err = script.RunMany(ctx, e.c.client, call)
	n, _ := call[0].Cmd.Int()
	if e.redisResult(ctx, err) == nil {
		return n == 1, nil
	}
	e.c.retry.add([]pending{{key: key, verPX: e.verPX, ctr: e.ctr, lsn: lsn}})
	return false, fmt.Errorf("%w: set %s %q: %w", ErrInvalidationPending, e.name, id, err)
}
