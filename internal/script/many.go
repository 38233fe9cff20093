package script

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Call is one script call of a RunMany batch.
type Call struct {
	Script *Script
	Keys   []string
	Args   []any

	// Cmd holds the call's reply, or its own error, once RunMany returns.
	Cmd *redis.Cmd
}

// RunMany sends every call in one pipeline with EVALSHA (one round trip
// per node on a Cluster), then sends the calls that were answered NOSCRIPT
// again, with EVAL, in one more pipeline. Calls of different scripts may
// share a batch. Each call's Cmd holds its own reply or error: a call that
// fails (a script error, a node that is down) does not lose the others'
// replies. RunMany returns the first call's error, in calls order, or nil.
//
// An empty batch sends nothing. Under a Batch's context (NewBatch), the
// calls join the other participants' in one pipeline.
func RunMany(ctx context.Context, c Pipeliner, calls []Call) error {
	if len(calls) == 0 {
		return nil
	}
	if b, ok := ctx.Value(batchKey{}).(*Batch); ok {
		return b.run(c, calls)
	}
	return runMany(ctx, c, calls)
}

func runMany(ctx context.Context, c Pipeliner, calls []Call) error {
	pipe := c.Pipeline()
	for i := range calls {
		cl := &calls[i]
		cl.Cmd = pipe.EvalSha(ctx, cl.Script.sha, cl.Keys, cl.Args...)
	}
	_, first := pipe.Exec(ctx)

	var retry redis.Pipeliner // opened by the first call to send again
	for i := range calls {
		cl := &calls[i]
		if !IsNoScript(cl.Cmd.Err()) {
			continue
		}
		if retry == nil {
			retry = c.Pipeline()
		}
		cl.Cmd = retry.Eval(ctx, cl.Script.src, cl.Keys, cl.Args...)
	}
	var second error
	if retry != nil {
		_, second = retry.Exec(ctx)
	}

	for i := range calls {
		if err := calls[i].Cmd.Err(); err != nil {
			return err
		}
	}
	// A pipeline that fails as a whole sets its error on every command; a
	// hook that refuses one without sending it does not, and then its
	// error is all there is.
	if first != nil && !IsNoScript(first) {
		return first
	}
	return second
}
