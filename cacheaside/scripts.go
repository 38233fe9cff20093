package cacheaside

import (
	"context"
	_ "embed"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/token"
)

var (
	//go:embed version.lua
	versionLua    string
	versionScript = redis.NewScript(versionLua)

	//go:embed fill.lua
	fillLua    string
	fillScript = redis.NewScript(fillLua)

	//go:embed lease.lua
	leaseLua    string
	leaseScript = redis.NewScript(leaseLua)

	//go:embed extend.lua
	extendLua    string
	extendScript = redis.NewScript(extendLua)

	//go:embed release.lua
	releaseLua    string
	releaseScript = redis.NewScript(releaseLua)

	//go:embed write.lua
	writeLua    string
	writeScript = redis.NewScript(writeLua)
)

// newToken returns a random token for versions and leases. Tokens are
// never reused, so a version key that expired and was recreated can never
// equal a token read before.
func newToken() string { return token.New() }

// scriptCall is one script invocation of a pipelined batch.
type scriptCall struct {
	keys []string
	args []any
	cmd  *redis.Cmd
}

// runScripts runs every call of s in one pipeline with EVALSHA; when the
// scripts are missing from a node it loads s (on every shard) and runs the
// failed calls again. Each call's cmd holds its result.
func runScripts(ctx context.Context, c redis.UniversalClient, s *redis.Script, calls []scriptCall) error {
	run := func(todo []*scriptCall) error {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, call := range todo {
				call.cmd = s.EvalSha(ctx, p, call.keys, call.args...)
			}
			return nil
		})
		return err
	}
	all := make([]*scriptCall, len(calls))
	for i := range calls {
		all[i] = &calls[i]
	}
	err := run(all)
	if err == nil {
		return nil
	}
	var again []*scriptCall
	for _, call := range all {
		if redis.HasErrorPrefix(call.cmd.Err(), "NOSCRIPT") {
			again = append(again, call)
		}
	}
	if len(again) == 0 {
		return err
	}
	if lerr := s.Load(ctx, c).Err(); lerr != nil {
		return lerr
	}
	if err := run(again); err != nil {
		return err
	}
	for _, call := range all {
		if err := call.cmd.Err(); err != nil {
			return err
		}
	}
	return nil
}
