// Package script runs the Lua scripts of every asidekit package, one call
// at a time (Run) or many calls in one pipeline (RunMany), with the same
// fallback everywhere: EVALSHA first, and EVAL for a call that a server
// answered NOSCRIPT.
//
// A server answers NOSCRIPT when it has not cached the script: it has just
// started, failed over to a replica that never saw it, ran SCRIPT FLUSH, or
// evicted it. NOSCRIPT means the script did not run, so running the same
// call again is always safe. EVAL runs it and caches it on that server, in
// one round trip, where SCRIPT LOAD followed by EVALSHA would cost two and
// could meet a second flush in between.
//
// On a Redis Cluster a pipeline is split by node (go-redis does it), and
// each node answers for itself: only the calls of the nodes that did not
// know the script are sent again, in one more pipeline.
package script

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/go-redis/v9"
)

// Script is a Lua script and its SHA1 digest. It is immutable and safe for
// concurrent use; declare one per script, next to its embedded source.
type Script struct {
	src string
	sha string
}

// New returns the Script of src.
func New(src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{src: src, sha: hex.EncodeToString(sum[:])}
}

// Hash returns the script's SHA1 digest, as EVALSHA sends it.
func (s *Script) Hash() string { return s.sha }

// Source returns the script's Lua source.
func (s *Script) Source() string { return s.src }

// Evaler is what Run needs: every go-redis client and pipeline has it.
type Evaler interface {
	Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd
	EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd
}

// Loader is what Load needs: every go-redis client has it.
type Loader interface {
	ScriptLoad(ctx context.Context, script string) *redis.StringCmd
}

// Pipeliner is what RunMany needs: every go-redis client has it.
type Pipeliner interface {
	Pipeline() redis.Pipeliner
}

// Run runs the script once with EVALSHA and, if the server answers
// NOSCRIPT, once more with EVAL. It costs one round trip when the server
// knows the script, two when it does not.
func (s *Script) Run(ctx context.Context, c Evaler, keys []string, args ...any) *redis.Cmd {
	cmd := c.EvalSha(ctx, s.sha, keys, args...)
	if IsNoScript(cmd.Err()) {
		return c.Eval(ctx, s.src, keys, args...)
	}
	return cmd
}

// Load caches the script on the server (on every primary of a Cluster,
// through go-redis's ClusterClient.ScriptLoad), so that the next Run costs
// one round trip. Nothing needs it: Run and RunMany fall back by
// themselves. Tests that count round trips use it.
func (s *Script) Load(ctx context.Context, c Loader) *redis.StringCmd {
	return c.ScriptLoad(ctx, s.src)
}

// IsNoScript reports whether err is a server's NOSCRIPT reply.
func IsNoScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}
