package seqgen

// DisableFallback makes g fail with ErrUnavailable when Redis is down,
// instead of issuing from the DB: tests show what the fallback is for.
func DisableFallback(g *Generator) { g.noFallback = true }
