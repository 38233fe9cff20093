package cacheaside

import (
	"context"
	"errors"
	"fmt"

	"github.com/asidekit/asidekit/internal/testswitch"
)

// An Effect is one piece of cache work that follows a committed write of
// the source of truth: a value that says what to do, made by one of the
// constructors below (Invalidate, InvalidateAll, StoreIfVersion,
// StoreFromLog, Bump, Patch, PatchFromLog, AddToFilter, Distrust), and
// done by Effects. The set is closed: a writer (package repo, repo/cdc)
// describes its upkeep with these and nothing else. The zero Effect does
// nothing.
type Effect struct {
	kind   effectKind
	ent    effectEntity     // Invalidate, InvalidateAll, StoreIfVersion
	lists  *ListGenerations // Bump, Patch
	filter FilterWriter     // AddToFilter, Distrust
	name   string           // the filter's, for errors
	// ids are the entity's ids, the lists' ids or the filter's keys;
	// InvalidateAll carries one "*" per time it was asked for.
	ids []string
	// version is what StoreIfVersion compares (the entry's version read
	// before the write), seen what Patch compares (the list's generation),
	// row what StoreIfVersion and StoreFromLog store (a T of the entity;
	// nil for AbsentFromLog's "not found").
	version, seen string
	row           any
	// at is where the change StoreFromLog stores the row of committed.
	at uint64
	// lines are what Patch and PatchFromLog append, in order: the lines of
	// one list's effects (of one seen value, for Patch), merged.
	lines []string
}

// effectKind says what an Effect does.
type effectKind uint8

const (
	effectInvalidate     effectKind = iota + 1 // delete and re-version ids of an entity
	effectInvalidateAll                        // every key of an entity
	effectStoreIfVersion                       // store a written row if its version holds
	effectStoreFromLog                         // store a row from the log if its version is no newer
	effectBump                                 // new generations of lists
	effectPatch                                // a line appended to a list's generation
	effectPatchLog                             // lines from the log appended to a list's generation
	effectAddToFilter                          // keys added to a Bloom filter
	effectDistrust                             // a Bloom filter's "absent" answers untrusted
)

// effectEntity is what effects do to an Entity of any type.
type effectEntity interface {
	Name() string
	Invalidate(ctx context.Context, ids ...string) error
	InvalidateAll(ctx context.Context) error
	Version(ctx context.Context, id string) (string, error)
	// setIfVersion is SetIfVersion of row, a T; storeFromLog stores row
	// from the log (Entity.storeFromLog).
	setIfVersion(ctx context.Context, id, version string, row any) (stored bool, err error)
	storeFromLog(ctx context.Context, id string, commit uint64, row any) (stored bool, err error)
	// cache is the Cache whose retrier holds the entity's failed work.
	cache() *Cache
}

func (e *Entity[T]) cache() *Cache { return e.c }

func (e *Entity[T]) setIfVersion(ctx context.Context, id, version string, row any) (bool, error) {
	return e.SetIfVersion(ctx, id, version, row.(T))
}

// storeFromLog stores row (a T), the row of id as a change committed at
// commit left it (repo/cdc decodes it from the database's log), if id's version
// records a position at or before commit, and otherwise deletes the entry,
// as Invalidate does; an id without a version is left without one. Why
// that is safe: a write that completed records a position past its commit
// in the version (repo's upkeep), a load of a version of unknown position
// records the position it read after the load (LSNRecorder), and a version
// that records none may stand for one Redis lost; so a version at or
// before commit has seen no write newer than the change, and the log
// brings the newer ones later, in commit order.
func (e *Entity[T]) storeFromLog(ctx context.Context, id string, commit uint64, row any) (bool, error) {
	if row == nil { // AbsentFromLog
		return e.storeIf(ctx, id, "", commit, nil)
	}
	v := row.(T)
	return e.storeIf(ctx, id, "", commit, &v)
}

// FilterWriter is a Bloom filter that effects write (guard/bloom's
// *Filter): AddToFilter adds keys to it, Distrust makes it answer "maybe"
// until its next rebuild.
type FilterWriter interface {
	AddMany(ctx context.Context, keys []string) error
	Distrust(ctx context.Context) error
}

// Invalidate is the effect of e.Invalidate(ctx, ids...): the entries of
// ids are deleted and their versions replaced, so that no load that began
// before it can store.
func Invalidate[T any](e *Entity[T], ids ...string) Effect {
	return Effect{kind: effectInvalidate, ent: e, ids: ids}
}

// InvalidateAll is the effect of e.InvalidateAll(ctx): every cached entry
// of the entity is invalidated. It is the safe path of a change whose id
// is unknown.
func InvalidateAll[T any](e *Entity[T]) Effect {
	return Effect{kind: effectInvalidateAll, ent: e, ids: []string{"*"}}
}

// StoreIfVersion is the write-through effect of a write that read id's
// version (Entity.Version) before it changed the source of truth: it
// stores row if the version is still that one and invalidates id
// otherwise (Entity.SetIfVersion). Done again (a retry), it finds the
// version replaced, and invalidates.
func StoreIfVersion[T any](e *Entity[T], id, version string, row T) Effect {
	return Effect{kind: effectStoreIfVersion, ent: e, ids: []string{id}, version: version, row: row}
}

// StoreFromLog is the effect of a change read from the database's log
// (repo/cdc) that committed at commit and left id's row as row: row is
// stored if id's version records a position at or before commit (no write
// that completed is newer), and id is invalidated otherwise; an id
// without a version is left without one. Done again (a retry), the same
// rule holds: a newer store or write in between made the version newer.
// commit must not be 0.
func StoreFromLog[T any](e *Entity[T], id string, commit uint64, row T) Effect {
	return Effect{kind: effectStoreFromLog, ent: e, ids: []string{id}, at: commit, row: row}
}

// AbsentFromLog is StoreFromLog for a change that left no row of id (a
// DELETE read from the log): a "not found" is stored under the same rule,
// so that a read after it finds the absence instead of loading it. Without
// null caching (Policy.NullTTL Disabled) id is invalidated.
func AbsentFromLog[T any](e *Entity[T], id string, commit uint64) Effect {
	return Effect{kind: effectStoreFromLog, ent: e, ids: []string{id}, at: commit}
}

// Bump is the effect of g.Bump(ctx, ids...): the lists ids get new
// generations. It is counted in g.Stats when done.
func Bump(g *ListGenerations, ids ...string) Effect {
	return Effect{kind: effectBump, lists: g, ids: ids}
}

// Patch is the effect of g.Patch(ctx, id, seen, line): line is appended
// to list id's generation if it is still seen, else the list is bumped.
// Done again (a retry after a lost reply), it finds the generation
// changed, and bumps. The Patches of one list and one seen value in one
// Effects (the writes of a transaction) are one effect, their lines in
// the order added. A list id that cannot be a key needs nothing: no list
// of it is cached. It is counted in g.Stats when done.
func Patch(g *ListGenerations, id, seen, line string) Effect {
	return Effect{kind: effectPatch, lists: g, ids: []string{id}, seen: seen, lines: []string{line}}
}

// AddToFilter is the effect of adding keys to filter f, named name in
// errors.
func AddToFilter(f FilterWriter, name string, keys ...string) Effect {
	return Effect{kind: effectAddToFilter, filter: f, name: name, ids: keys}
}

// Distrust is the effect of distrusting filter f, named name in errors:
// its "absent" answers are not trusted until its next rebuild (a change
// whose key was lost, which the filter may lack).
func Distrust(f FilterWriter, name string) Effect {
	return Effect{kind: effectDistrust, filter: f, name: name}
}

// do does e; ctx carries the write position (WithWriteLSN).
func (e *Effect) do(ctx context.Context) error {
	switch e.kind {
	case effectInvalidate:
		if err := e.ent.Invalidate(ctx, e.ids...); err != nil {
			return fmt.Errorf("repo: invalidate %d ids of %s: %w", len(e.ids), e.ent.Name(), err)
		}
	case effectInvalidateAll:
		if err := e.ent.InvalidateAll(ctx); err != nil {
			return fmt.Errorf("repo: invalidate %d ids of %s (every key): %w", len(e.ids), e.ent.Name(), err)
		}
	case effectStoreIfVersion:
		for _, id := range e.ids {
			version := e.version
			if testswitch.FillCompareOff.Load() {
				version, _ = e.ent.Version(ctx, id)
			}
			if _, err := e.ent.setIfVersion(ctx, id, version, e.row); err != nil {
				return fmt.Errorf("repo: invalidate %d ids of %s: %w", len(e.ids), e.ent.Name(), err)
			}
		}
	case effectStoreFromLog:
		at := e.at
		if testswitch.LogStoreCompareOff.Load() {
			at = UnknownLSN - 1 // every known position is at or before it
		}
		if _, err := e.ent.storeFromLog(ctx, e.ids[0], at, e.row); err != nil {
			return fmt.Errorf("repo: invalidate 1 ids of %s: %w", e.ent.Name(), err)
		}
	case effectBump:
		return e.bump(ctx)
	case effectPatch:
		return e.patch(ctx)
	case effectPatchLog:
		return e.patchLog(ctx)
	case effectAddToFilter:
		if err := e.filter.AddMany(ctx, e.ids); err != nil {
			return fmt.Errorf("repo: add %d keys to filter %s: %w", len(e.ids), e.name, err)
		}
	case effectDistrust:
		if err := e.filter.Distrust(ctx); err != nil {
			return fmt.Errorf("repo: distrust filter %s: %w", e.name, err)
		}
	}
	return nil
}

// bump does a Bump effect and counts it.
func (e *Effect) bump(ctx context.Context) error {
	g := e.lists
	if len(e.ids) == 0 || testswitch.ListBumpsOff.Load() {
		return nil
	}
	if err := g.Bump(ctx, e.ids...); err != nil {
		return fmt.Errorf("repo: invalidate %d ids of %s: repo: bump list generations of %s: %w", len(e.ids), g.name, g.name, err)
	}
	for _, id := range e.ids {
		g.bumps.Add(1)
		if id == AllLists {
			g.fallbacks.Add(1)
		}
	}
	return nil
}

// patch does a Patch effect and counts it.
func (e *Effect) patch(ctx context.Context) error {
	g := e.lists
	if testswitch.ListBumpsOff.Load() {
		return nil
	}
	id, seen := e.ids[0], e.seen
	if testswitch.PatchCompareOff.Load() {
		now, ok := g.Seen(ctx, id)[id]
		if !ok {
			return fmt.Errorf("repo: invalidate 1 ids of %s: repo: patch list generation of %s: its value could not be read", g.name, g.name)
		}
		seen = now
	}
	patched, err := g.patch(ctx, id, seen, e.lines)
	return e.count(patched, err, "")
}

// patchLog does a PatchFromLog effect (its merged lines) and counts it.
func (e *Effect) patchLog(ctx context.Context) error {
	if testswitch.ListBumpsOff.Load() {
		return nil
	}
	patched, err := e.lists.patchLog(ctx, e.ids[0], e.lines)
	return e.count(patched, err, " from the log")
}

// count counts what a Patch or PatchFromLog did (its lines appended, or a
// bump) and returns its error, with from after the list's name; a list id
// too long for a key needs nothing (no list of it is cached).
func (e *Effect) count(patched bool, err error, from string) error {
	g := e.lists
	switch {
	case errors.Is(err, ErrInvalidID):
		return nil
	case err != nil:
		return fmt.Errorf("repo: invalidate 1 ids of %s: repo: patch list generation of %s%s: %w", g.name, g.name, from, err)
	case patched:
		g.patches.Add(int64(len(e.lines)))
	default:
		g.bumps.Add(1)
	}
	return nil
}
