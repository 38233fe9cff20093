// Package owner keeps the registry of who owns each entity name of a
// namespace, so that two services that would share cache entries by
// accident (both left on the default namespace, both with a products
// table) find out when they start instead of reading each other's rows.
//
// The registry of namespace ns is one Redis hash, "<ns>:owners" (one key,
// so it works unchanged on a Cluster): a field per entity name, whose value
// is the owner's Record as JSON. It has no TTL; under an allkeys-*
// eviction policy it may be evicted, and the next claim records the name
// again.
package owner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// Record says who owns an entity name.
type Record struct {
	// Owner identifies what the entity caches, e.g. the database and the
	// table of a repository. Two claims with the same Owner are the same
	// entity (another instance of the service, or a restart).
	Owner string `json:"owner"`
	// Model describes the Go model cached under the name. It is kept up
	// to date but does not decide ownership.
	Model string `json:"model,omitempty"`
}

// Outcome is what a Claim found.
type Outcome int

// Claim outcomes.
const (
	// Claimed: the name was free and is now recorded as rec's.
	Claimed Outcome = iota
	// Held: the name was already rec's, with the same Model.
	Held
	// ModelChanged: the name was rec's Owner's with another Model; the
	// record now holds rec's Model.
	ModelChanged
	// TookOver: the name was another owner's and is now rec's.
	TookOver
	// Conflict: the name is another owner's; nothing was written.
	Conflict
)

// Key returns the registry's key in namespace ns.
func Key(ns string) string { return ns + ":owners" }

// Claim records name in namespace ns as rec's, unless another owner
// holds it: then it returns Conflict and the other owner's record, and
// writes nothing, or, with takeOver, replaces that record and returns
// TookOver. It costs one round trip (HSETNX and HGET pipelined), plus an
// HSET when it replaces a record. The error is Redis's.
func Claim(ctx context.Context, c redis.Cmdable, ns, name string, rec Record, takeOver bool) (Outcome, Record, error) {
	val, err := json.Marshal(rec)
	if err != nil {
		return 0, Record{}, err
	}
	key := Key(ns)
	var setnx *redis.BoolCmd
	var get *redis.StringCmd
	_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		setnx = p.HSetNX(ctx, key, name, val)
		get = p.HGet(ctx, key, name)
		return nil
	})
	if err != nil {
		if errors.Is(err, redis.Nil) {
			err = fmt.Errorf("owner: %s of %s was deleted during the claim", name, key)
		}
		return 0, Record{}, err
	}
	if setnx.Val() {
		return Claimed, rec, nil
	}
	held := Parse(get.Val())
	out := ModelChanged
	switch {
	case held == rec:
		return Held, held, nil
	case held.Owner != rec.Owner && !takeOver:
		return Conflict, held, nil
	case held.Owner != rec.Owner:
		out = TookOver
	}
	if err := c.HSet(ctx, key, name, val).Err(); err != nil {
		return 0, held, err
	}
	return out, held, nil
}

// Parse decodes a registry value; one that is not a Record (written by
// something else) becomes the Owner of a Record as is.
func Parse(v string) Record {
	var r Record
	if json.Unmarshal([]byte(v), &r) != nil || r.Owner == "" {
		return Record{Owner: v}
	}
	return r
}

// Check claims name for rec as Claim does, and says what the caller
// reports: collision (wrapping errCollision, naming the entity, the
// namespace and both owners) when another owner holds the name, or
// unchecked (wrapping errUnchecked and the cause) when Redis did not
// answer, which it also logs. It logs a take-over and a model change.
// hint ends the collision's message: what the caller can change.
func Check(ctx context.Context, c redis.Cmdable, ns, name string, rec Record, takeOver bool, errCollision, errUnchecked error, hint string) (collision, unchecked error) {
	log := slog.Default().With("entity", name, "namespace", ns)
	out, held, err := Claim(ctx, c, ns, name, rec, takeOver)
	if err != nil {
		return nil, Unchecked(errUnchecked, ns, name, err)
	}
	switch out {
	case Conflict:
		return fmt.Errorf("%w: entity %q in namespace %q belongs to %s, and this one caches %s: %s",
			errCollision, name, ns, held.Owner, rec.Owner, hint), nil
	case TookOver:
		log.Warn("asidekit: entity taken over", "from", held.Owner, "to", rec.Owner)
	case ModelChanged:
		log.Info("asidekit: entity's model changed", "from", held.Model, "to", rec.Model)
	}
	return nil, nil
}

// Unchecked wraps the reason an owner could not be checked in
// errUnchecked, and logs it as a warning.
func Unchecked(errUnchecked error, ns, name string, cause error) error {
	err := fmt.Errorf("%w: %s in namespace %s: %w", errUnchecked, name, ns, cause)
	slog.Default().Warn("asidekit: entity ownership not checked", "entity", name, "namespace", ns, "err", err)
	return err
}
