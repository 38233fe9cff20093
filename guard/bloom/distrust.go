package bloom

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Distrust makes every shard of the filter untrusted, as if its keys had
// been lost: checks answer "maybe" until a Rebuild fills a generation
// from a full source, and with Options.Source the automatic rebuild
// starts at once (subject to RebuildInterval). A rebuild under way is
// superseded (it returns ErrRebuildSuperseded), since its source may have
// been read before a key that nobody will Add.
//
// Call it when a key may have entered the source without being added,
// and cannot be added because it is unknown: a database insert whose
// generated key was lost with the reply. The bits stay as they are. One
// script per shard, pipelined (a round trip per 256 shards and node). On
// error some shards may be distrusted already; calling it again is
// harmless.
func (f *Filter) Distrust(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := f.perShard(ctx, distrustScript, []any{f.layout.fingerprint, f.layout.shardBits}, func(_ int, cmd *redis.Cmd) error {
		return f.mapScriptError(cmd.Err())
	})
	if err != nil {
		return fmt.Errorf("bloom: distrust filter %q: %w", f.name, err)
	}
	f.kick()
	return nil
}
