package cacheaside

// A read (Get, GetMany) sends each of its ids through one gate before it
// asks Redis for them. The checks, in this order:
//
//  1. Recovery (recovery.go): while a recovery gate holds reads, every id
//     goes to the loader, uncached; the near cache is skipped too.
//  2. Pending invalidation (retry.go): an id whose invalidation waits for
//     the retrier goes to the loader, uncached. Redis may still hold what
//     the invalidation must remove, and so may a near cache filled from it
//     by a read that raced the failed invalidation.
//  3. Near cache (local.go): an id it holds is answered there.
//  4. Breaker: while Redis is known down, the ids left go to the loader,
//     uncached. It is asked once per read, and only when an id gets this
//     far: half-open, it lets one read through as its probe.
//
// A read looks at the Cache's health word first (health.go): checks 1, 2
// and 4 are made only when their bit is set, so a read while all is well
// passes the gate on one atomic load (and the near cache's look-up).
//
// The ids left go on to Redis, each with the near cache ticket taken
// before the read that may fill it. What the reads do with the ids sent
// to the loader is theirs: Get shares the load by group commit (failOpen),
// GetMany loads them in one call (loadManyDirect); each counts one
// EventBypass per load. A Redis call that fails after the gate falls open
// the same way (redisResult).

// route is where the gate sends one id of a read.
type route uint8

const (
	toRedis  route = iota // on to Redis, under the ticket the gate took
	toLocal               // answered by the near cache
	toHeld                // to the loader: the id's invalidation is pending
	toLoader              // to the loader: Redis is bypassed (recovery, breaker)
)

// readGate is one read's pass through the gate: the answers it asks once
// per read (the Cache's health, recovery, breaker), kept for the read's
// other ids. The zero readGate of an entity (readGate[T]{e: e}) starts
// one.
type readGate[T any] struct {
	e          *Entity[T]
	looked     bool   // health was read
	health     uint32 // the Cache's health word, as the read found it (health.go)
	recovering bool   // reads bypass the cache (see RecoveryGate)
	asked      bool   // the breaker was asked
	down       bool   // its answer: Redis is not to be called
	v          T      // the near cache's value, when pass answered toLocal
}

// pass sends one id through the gate. key is the id's entry key; it may
// be empty (Get's), and is then built from esc, the escaped id, only when
// needed: a near cache hit builds none. esc may be empty when *key is set
// (GetMany's). pass returns where the id goes: for toRedis, with the near
// cache ticket to fill under (*key is then set); for toLocal, with the
// near cache's answer: its value in g.v, or err = ErrNotFound.
//
// While the Cache's health word is zero, checks 1, 2 and 4 cost the one
// load that reads it.
func (g *readGate[T]) pass(key *string, esc string) (via route, tk ticket, err error) {
	e := g.e
	if !g.looked {
		g.looked, g.health = true, e.c.health.Load()
		g.recovering = g.health&recovering != 0 && e.c.rec.bypass()
	}
	if g.recovering {
		return toLoader, tk, nil
	}
	if *key == "" && (g.health&holding != 0 || e.local == nil) {
		*key = e.prefix + esc + "}" // a near cache hit builds none
	}
	if g.health&holding != 0 && e.c.retry.holds(*key) {
		return toHeld, tk, nil
	}
	if l := e.local; l != nil {
		if esc == "" {
			esc = l.id(*key)
		}
		if ok, err := l.get(esc, &g.v); ok {
			return toLocal, tk, err
		}
		if *key == "" {
			*key = e.prefix + esc + "}"
		}
	}
	if g.health&failing != 0 && !g.asked {
		g.asked, g.down = true, !e.c.br.Allow()
	}
	if g.down {
		return toLoader, tk, nil
	}
	if e.local != nil {
		tk = e.local.ticket(*key)
	}
	return toRedis, tk, nil
}

// passMany sends the items of a read through the gate, reusing the
// backing array of items. The near cache's answers go to out (an id it
// knows absent is left out). It returns the items whose invalidation is
// pending (held), the others (rest), with their tickets when the entity
// has a near cache, and whether rest goes on to Redis; otherwise rest goes
// to the loader.
func (g *readGate[T]) passMany(out map[string]T, items []item) (held, rest []item, tks []ticket, redis bool) {
	if g.e.local != nil {
		tks = make([]ticket, 0, len(items))
	}
	rest = items[:0]
	for _, it := range items {
		switch via, tk, err := g.pass(&it.key, ""); via {
		case toLocal:
			if err == nil {
				out[it.id] = g.v
			}
		case toHeld:
			held = append(held, it)
		default: // toRedis, toLoader: the same for every id of the read
			rest = append(rest, it)
			if tks != nil {
				tks = append(tks, tk)
			}
		}
	}
	return held, rest, tks, !g.recovering && !g.down
}
