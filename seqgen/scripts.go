package seqgen

import (
	_ "embed"
	"fmt"

	"github.com/asidekit/asidekit/internal/script"
)

var (
	//go:embed next.lua
	nextLua    string
	nextScript = script.New(nextLua)

	//go:embed install.lua
	installLua    string
	installScript = script.New(installLua)

	//go:embed release.lua
	releaseLua    string
	releaseScript = script.New(releaseLua)
)

// Statuses of next.lua.
const (
	statusIssued      = 0
	statusNeedSegment = 1
	statusNeedSeed    = 2
	statusExhausted   = 3
)

// Results of install.lua.
const (
	installNoSeed   = -1
	installDropped  = 0
	installSeeded   = 1
	installExtended = 2
	installBuffered = 3
)

// keyset holds the Redis keys of one (biz, day); they share the hash tag
// {biz}, so every script runs on Redis Cluster.
type keyset struct {
	counter, meta, lease string
}

func (g *Generator) keysFor(escBiz, day string) keyset {
	c := g.opts.Namespace + ":seq:{" + escBiz + "}:" + day
	return keyset{counter: c, meta: c + ":hw", lease: c + ":lease"}
}

func (k keyset) list() []string { return []string{k.counter, k.meta, k.lease} }

// nextReply is next.lua's answer.
type nextReply struct {
	status int64
	value  int64  // the last number issued, or the counter
	leased bool   // the caller holds the lease
	count  int64  // how many numbers were issued, ending at value
	token  string // the lease token next.lua was called with
}

func parseNext(v []int64) (nextReply, error) {
	if len(v) != 4 {
		return nextReply{}, fmt.Errorf("seqgen: next.lua returned %d values, want 4", len(v))
	}
	r := nextReply{status: v[0], value: v[1], leased: v[2] == 1, count: v[3]}
	if r.status == statusIssued && r.count < 1 {
		return nextReply{}, fmt.Errorf("seqgen: next.lua issued %d numbers", r.count)
	}
	return r, nil
}
