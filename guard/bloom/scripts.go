package bloom

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// Every script runs on one shard and touches only that shard's three keys
// (meta, buffer 0, buffer 1), which share one hash tag. They use SETBIT,
// GETBIT, BITCOUNT, HMGET, HSET, HDEL and UNLINK, all of which the embedded
// backend (miniredis) has too; none needs BITFIELD.
var (
	//go:embed query.lua
	queryLua    string
	queryScript = redis.NewScript(queryLua)

	//go:embed add.lua
	addLua    string
	addScript = redis.NewScript(addLua)

	//go:embed begin.lua
	beginLua    string
	beginScript = redis.NewScript(beginLua)

	//go:embed fill.lua
	fillLua    string
	fillScript = redis.NewScript(fillLua)

	//go:embed switch.lua
	switchLua    string
	switchScript = redis.NewScript(switchLua)

	//go:embed abort.lua
	abortLua    string
	abortScript = redis.NewScript(abortLua)

	//go:embed stats.lua
	statsLua    string
	statsScript = redis.NewScript(statsLua)
)
