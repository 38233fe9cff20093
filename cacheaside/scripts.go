package cacheaside

import (
	"context"
	_ "embed"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/script"
	"github.com/asidekit/asidekit/internal/token"
)

var (
	//go:embed version.lua
	versionLua    string
	versionScript = script.New(versionLua)

	//go:embed fill.lua
	fillLua    string
	fillScript = script.New(fillLua)

	//go:embed lease.lua
	leaseLua    string
	leaseScript = script.New(leaseLua)

	//go:embed extend.lua
	extendLua    string
	extendScript = script.New(extendLua)

	//go:embed release.lua
	releaseLua    string
	releaseScript = script.New(releaseLua)

	//go:embed write.lua
	writeLua    string
	writeScript = script.New(writeLua)
)

// newToken returns a random token for versions and leases. Tokens are
// never reused, so a version key that expired and was recreated can never
// equal a token read before.
func newToken() string { return token.New() }

// scriptCall is one script invocation of a pipelined batch.
type scriptCall struct {
	keys []string
	args []any
	cmd  *redis.Cmd // the reply, once runScripts returns
}

// runScripts runs every call of s in one pipeline through the shared
// runner (internal/script): EVALSHA, and EVAL for the calls of a node that
// did not know s. Each call's cmd holds its own reply; the first error, in
// calls order, is returned.
func runScripts(ctx context.Context, c redis.UniversalClient, s *script.Script, calls []scriptCall) error {
	batch := make([]script.Call, len(calls))
	for i := range calls {
		batch[i] = script.Call{Script: s, Keys: calls[i].keys, Args: calls[i].args}
	}
	err := script.RunMany(ctx, c, batch)
	for i := range calls {
		calls[i].cmd = batch[i].Cmd
	}
	return err
}
