package seqgen

// DisableFallback makes g fail with ErrUnavailable when Redis is down,
// instead of issuing from the DB: tests show what the fallback is for.
func DisableFallback(g *Generator) { g.noFallback = true }

// TrustAsked makes g's batches hand out the numbers they asked next.lua
// for instead of those its reply says it issued: tests show what the rule
// is for.
func TrustAsked(g *Generator) { g.trustAsked = true }

// NextScriptHash is next.lua's SHA1, as EVALSHA sends it.
var NextScriptHash = nextScript.Hash()

// Queued returns how many Next calls wait in g's queues for a script
// call (not those in a call already).
func Queued(g *Generator) int {
	n := 0
	g.batchers.Range(func(_, v any) bool {
		b := v.(*batcher)
		b.mu.Lock()
		for _, w := range b.queue {
			if !w.gone {
				n++
			}
		}
		b.mu.Unlock()
		return true
	})
	return n
}
