package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/internal/token"
)

// This file holds the reads a writer makes of the cache before its
// statement: the entry's version, for StoreIfVersion (Entity.Version), and
// the generations of the lists the write moves a row out of and into, for
// Patch (ListGenerations.Seen). ReadBefore sends them in one pipeline.

// ListRead names lists of one ListGenerations whose generations a writer
// reads before its statement.
type ListRead struct {
	Lists *ListGenerations
	IDs   []string
}

// Before is what ReadBefore read.
type Before struct {
	// Version is the entry's version token (started by the read when
	// the entry had none) and VersionErr why it could not be read, as
	// Entity.Version returns them; both zero when the version was not
	// asked for.
	Version    string
	VersionErr error
	// Lists[i] is ListGenerations.Seen's answer for the ListRead i.
	Lists []map[string]string
}

// ReadBefore reads, in one pipeline, id's version (Version) when version
// is set and the generations of each of lists (ListGenerations.Seen): one
// round trip per node, where the reads on their own cost one each. Every
// answer is what its own call would have returned: a read the breaker
// refuses, or that fails, fails the version or leaves the lists' ids out.
// Lists of another Cache are read on their own.
func (e *Entity[T]) ReadBefore(ctx context.Context, id string, version bool, lists []ListRead) Before {
	s := Before{Lists: make([]map[string]string, len(lists))}
	var ver stringReply
	var key, start string
	if version {
		key, s.VersionErr = e.versionKey(ctx, id)
	}
	var own []int // the lists read in the pipeline
	gets := make([]map[string]*redis.StringCmd, len(lists))
	for i, l := range lists {
		if l.Lists.c == e.c {
			own = append(own, i)
		} else {
			s.Lists[i] = l.Lists.Seen(ctx, l.IDs...)
		}
	}
	_, err := e.c.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		if version && s.VersionErr == nil {
			ver, start = e.queueVersion(ctx, p, key)
		}
		for _, i := range own {
			gets[i] = lists[i].Lists.queueSeen(ctx, p, lists[i].IDs)
		}
		return nil
	})
	if ver != nil {
		s.Version, s.VersionErr = e.versionOf(ctx, id, ver, start, err)
	}
	for _, i := range own {
		s.Lists[i] = lists[i].Lists.seenOf(ctx, gets[i], err)
	}
	return s
}

// Version returns id's version token, starting one when id has none:
// what a write reads before it changes the source of truth, to store its
// new value afterwards with SetIfVersion. One SET NX GET (a new token
// lives as long as any version of the entity); an error when Redis fails
// or the breaker is open (the writer then invalidates, as ever).
// ReadBefore reads it with the lists' generations.
func (e *Entity[T]) Version(ctx context.Context, id string) (string, error) {
	s := e.ReadBefore(ctx, id, true, nil)
	return s.Version, s.VersionErr
}

// versionKey returns the key of id's version, or why it is not read.
func (e *Entity[T]) versionKey(ctx context.Context, id string) (string, error) {
	key, err := e.key(id)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if !e.c.br.Allow() {
		e.ctr.inc(EventBypass)
		return "", fmt.Errorf("cacheaside: version of %s %q: breaker open", e.name, id)
	}
	return key + ":ver", nil
}

// queueVersion queues on p the read of the version at key, which starts
// one (start) when there is none: SET NX GET, with the version's TTL.
// Why start one: a write-through store compares with the version read, and
// "" would match a version that an InvalidateAll deleted after a load had
// started it (drop.lua), letting a row stored before a TRUNCATE's apply
// through; a token of the writer's own matches nothing but itself.
func (e *Entity[T]) queueVersion(ctx context.Context, p redis.Pipeliner, key string) (cmd stringReply, start string) {
	if testswitch.VersionStartOff.Load() {
		return p.Get(ctx, key), ""
	}
	start = token.New()
	return p.SetArgs(ctx, key, start, redis.SetArgs{Mode: "NX", Get: true, TTL: time.Duration(e.verPX) * time.Millisecond}), start
}

// stringReply is a queued command whose reply is a string: a SET with GET
// or a GET.
type stringReply interface{ Result() (string, error) }

// versionOf is the answer of the version's read (queueVersion, which
// started start when there was none), sent in a pipeline that returned
// err.
func (e *Entity[T]) versionOf(ctx context.Context, id string, cmd stringReply, start string, err error) (string, error) {
	v, gerr := cmd.Result()
	if gerr == nil && err != nil && !errors.Is(err, redis.Nil) {
		gerr = err // the pipeline failed as a whole
	}
	if errors.Is(gerr, redis.Nil) {
		v, gerr = start, nil
	}
	if err := e.redisResult(ctx, gerr); err != nil {
		return "", fmt.Errorf("cacheaside: version of %s %q: %w", e.name, id, err)
	}
	return v, nil
}

// Seen returns the generation values of the lists ids as they are now,
// for a writer to read before its COMMIT and give to Patch after it: one
// round trip, a GET per list, pipelined; "" for a list without a
// generation. A list whose value could not be read (its id cannot be a
// key, Redis failed, the breaker is open) is left out: its writer bumps
// it. Entity.ReadBefore reads it with an entry's version.
func (g *ListGenerations) Seen(ctx context.Context, ids ...string) map[string]string {
	var cmds map[string]*redis.StringCmd
	_, err := g.c.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmds = g.queueSeen(ctx, p, ids)
		return nil
	})
	return g.seenOf(ctx, cmds, err)
}

// queueSeen queues the GETs of Seen on p: nil when the breaker refuses
// them.
func (g *ListGenerations) queueSeen(ctx context.Context, p redis.Pipeliner, ids []string) map[string]*redis.StringCmd {
	if !g.c.br.Allow() {
		g.ctr.inc(EventBypass)
		return nil
	}
	cmds := make(map[string]*redis.StringCmd, len(ids))
	for _, id := range ids {
		if key, err := g.Key(id); err == nil {
			cmds[id] = p.Get(ctx, key)
		}
	}
	return cmds
}

// seenOf is Seen's answer from cmds, sent in a pipeline that returned
// err.
func (g *ListGenerations) seenOf(ctx context.Context, cmds map[string]*redis.StringCmd, err error) map[string]string {
	if cmds == nil {
		return map[string]string{}
	}
	all := make([]*redis.StringCmd, 0, len(cmds))
	for _, cmd := range cmds {
		all = append(all, cmd)
	}
	_ = g.c.result(ctx, g.ctr, pipeErr(err, all))
	out := make(map[string]string, len(cmds))
	for id, cmd := range cmds {
		switch v, err := cmd.Result(); {
		case err == nil:
			out[id] = v
		case errors.Is(err, redis.Nil):
			out[id] = "" // no generation: the patch bumps, starting one
		}
	}
	return out
}
