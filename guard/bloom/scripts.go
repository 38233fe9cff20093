package bloom

import (
	_ "embed"

	"github.com/asidekit/asidekit/internal/script"
)

// Every script but lease.lua runs on one shard and touches only that
// shard's three keys (meta, buffer 0, buffer 1), which share one hash tag;
// lease.lua touches the filter's lease key alone. They use SETBIT, GETBIT,
// BITCOUNT, HMGET, HSET, HDEL, UNLINK, GET, PEXPIRE and DEL, all of which
// the embedded backend (miniredis) has too; none needs BITFIELD.
var (
	//go:embed query.lua
	queryLua    string
	queryScript = script.New(queryLua)

	//go:embed add.lua
	addLua    string
	addScript = script.New(addLua)

	//go:embed begin.lua
	beginLua    string
	beginScript = script.New(beginLua)

	//go:embed fill.lua
	fillLua    string
	fillScript = script.New(fillLua)

	//go:embed switch.lua
	switchLua    string
	switchScript = script.New(switchLua)

	//go:embed abort.lua
	abortLua    string
	abortScript = script.New(abortLua)

	//go:embed stats.lua
	statsLua    string
	statsScript = script.New(statsLua)

	//go:embed distrust.lua
	distrustLua    string
	distrustScript = script.New(distrustLua)

	//go:embed lease.lua
	leaseLua    string
	leaseScript = script.New(leaseLua)
)
