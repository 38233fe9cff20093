package cacheaside

import (
	_ "embed"

	"github.com/asidekit/asidekit/internal/script"
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

	//go:embed drop.lua
	dropLua    string
	dropScript = script.New(dropLua)

	//go:embed listgen.lua
	listGenLua    string
	listGenScript = script.New(listGenLua)
)
