package lock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed obtain.lua
	obtainLua string
	//go:embed release.lua
	releaseLua string
	//go:embed refresh.lua
	refreshLua string
	//go:embed pttl.lua
	pttlLua string
	//go:embed fence.lua
	fenceLua string

	// Each script is wrapped once: Run sends EVALSHA and falls back to EVAL
	// when the server does not know the script yet.
	obtainScript  = redis.NewScript(obtainLua)
	releaseScript = redis.NewScript(releaseLua)
	refreshScript = redis.NewScript(refreshLua)
	pttlScript    = redis.NewScript(pttlLua)
	fenceScript   = redis.NewScript(fenceLua)
)
