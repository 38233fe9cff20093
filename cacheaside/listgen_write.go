package cacheaside

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/script"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// Bump gives the lists ids new generations, after the COMMIT of a write
// that changed them: the pages cached under the old ones are unreachable
// from then on. One round trip (one script per list, pipelined; with
// Options.ReplicaAcks, followed by WAIT as an Invalidate is). A new base
// carries one more than the count of bumps of the base it replaces, so a
// bump that Redis runs twice (a command sent again after its reply was
// lost, landing after another writer's bump) sets a new generation the
// second time, never the one the other bump replaced: pages filled under
// that one before the other writer's COMMIT would be current again. An id
// that cannot be a key is skipped: no list of it is cached (Read refuses
// it).
//
// A Bump that fails (Redis failed, the breaker is open, fewer replicas
// than Options.ReplicaAcks confirmed it) returns its error and queues
// nothing: the caller must call it again until it succeeds. A bump
// applied more than once costs a reload, never a stale list.
func (g *ListGenerations) Bump(ctx context.Context, ids ...string) error {
	return g.bump(ctx, ids, newGenToken)
}

// bump is Bump with the new bases' tokens from token.
func (g *ListGenerations) bump(ctx context.Context, ids []string, token func() string) error {
	calls := make([]script.Call, 0, len(ids))
	for _, id := range ids {
		if key, err := g.Key(id); err == nil {
			calls = append(calls, script.Call{Script: listGenScript, Keys: []string{key}, Args: []any{token(), ms(ListGenerationTTL)}})
		}
	}
	send := g.runAll
	if testswitch.GenCounterOff.Load() {
		send = g.setTokens
	}
	return g.write(ctx, "bump", calls, send)
}

// Patch appends line to the generation of list id if the generation is
// still seen, the value Seen returned before the writer's COMMIT, and
// carries fewer than 32 lines; otherwise it bumps it, as Bump does.
// patched reports which. The compare keeps the lines in commit order: a
// write whose Patch comes after a later write's finds the value changed,
// and bumps; so does a Patch run again after its reply was lost. Lines
// must not hold a newline. An id that cannot be a key is an error
// matching ErrInvalidID, and nothing is sent. A Patch that fails returns
// its error and queues nothing, as Bump does.
func (g *ListGenerations) Patch(ctx context.Context, id, seen, line string) (patched bool, err error) {
	return g.patch(ctx, id, seen, []string{line})
}

// patch is Patch of lines, appended in order, all or none.
func (g *ListGenerations) patch(ctx context.Context, id, seen string, lines []string) (patched bool, err error) {
	key, err := g.Key(id)
	if err != nil {
		return false, err
	}
	return g.appendLines(ctx, key, "patch", seen, lines)
}

// appendLines runs listgen.lua's mode ("patch" or "log") on the
// generation at key: lines are appended if cmp (the value read before,
// or the first line's position) holds, else the generation is bumped.
func (g *ListGenerations) appendLines(ctx context.Context, key, mode, cmp string, lines []string) (appended bool, err error) {
	args := make([]any, 0, 5+len(lines))
	args = append(args, newGenToken(), ms(ListGenerationTTL), mode, cmp, maxListPatches)
	for _, l := range lines {
		args = append(args, l)
	}
	calls := []script.Call{{Script: listGenScript, Keys: []string{key}, Args: args}}
	if err := g.write(ctx, "patch", calls, g.runAll); err != nil {
		return false, err
	}
	n, err := calls[0].Cmd.Int()
	return n == 1, err
}

// write sends calls with send behind the Cache's breaker and charges the
// result to it, as Invalidate does; what names the operation in errors.
func (g *ListGenerations) write(ctx context.Context, what string, calls []script.Call, send func(context.Context, []script.Call) error) error {
	if len(calls) == 0 {
		return nil
	}
	if !g.c.br.Allow() {
		g.ctr.inc(EventBypass)
		return fmt.Errorf("cacheaside: %s list generations of %s: breaker open", what, g.name)
	}
	err := send(ctx, calls)
	if errors.Is(err, errShortfall) {
		g.c.answered() // Redis answered; the write is not confirmed
	} else if err = g.c.result(ctx, g.ctr, err); err == nil {
		return nil
	}
	return fmt.Errorf("cacheaside: %s list generations of %s: %w", what, g.name, err)
}

// runAll runs calls as the Cache runs its invalidations (writeAll:
// EVALSHA, NOSCRIPT then EVAL; WAIT with Options.ReplicaAcks).
func (g *ListGenerations) runAll(ctx context.Context, calls []script.Call) error {
	_, err := g.c.writeAll(ctx, calls)
	return err
}

// setTokens sets the key of each call of a bump to the call's token
// alone, without the count of bumps (testswitch.GenCounterOff).
func (g *ListGenerations) setTokens(ctx context.Context, calls []script.Call) error {
	_, err := g.c.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, cl := range calls {
			p.Set(ctx, cl.Keys[0], cl.Args[0], ListGenerationTTL)
		}
		return nil
	})
	return err
}
