package lock

import (
	_ "embed"

	"github.com/asidekit/asidekit/internal/script"
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

	// Each script is wrapped once (internal/script): Run sends EVALSHA and
	// falls back to EVAL when the server does not know the script yet.
	obtainScript  = script.New(obtainLua)
	releaseScript = script.New(releaseLua)
	refreshScript = script.New(refreshLua)
	pttlScript    = script.New(pttlLua)
	fenceScript   = script.New(fenceLua)
)
