package cacheaside

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/script"
	"github.com/asidekit/asidekit/internal/topology"
)

var (
	//go:embed peek.lua
	peekLua    string
	peekScript = script.New(peekLua)
)

// PeekState is what Redis holds for an id, as Peek saw it.
type PeekState int

const (
	// PeekAbsent: no entry and no rebuild lease.
	PeekAbsent PeekState = iota
	// PeekValue: an entry holding a value (fresh or past its logical
	// expiry: compare Peeked.Expiry with the time).
	PeekValue
	// PeekNotFound: an entry caching "not found".
	PeekNotFound
	// PeekLeaseOnly: no entry, but a rebuild lease is held (a load is
	// running somewhere).
	PeekLeaseOnly
	// PeekCorrupt: an entry that is not of this library's format; a Get
	// would delete it.
	PeekCorrupt
)

// String returns the state's name: "absent", "value", "not found",
// "lease only" or "corrupt".
func (s PeekState) String() string {
	switch s {
	case PeekAbsent:
		return "absent"
	case PeekValue:
		return "value"
	case PeekNotFound:
		return "not found"
	case PeekLeaseOnly:
		return "lease only"
	case PeekCorrupt:
		return "corrupt"
	}
	return fmt.Sprintf("PeekState(%d)", int(s))
}

// Peeked is what Redis held for one id at one instant.
type Peeked struct {
	// Key is the entry's Redis key, e.g. "ak:{user:42}".
	Key string
	// State says what the entry is (see PeekState).
	State PeekState
	// Value is the codec's encoding of the cached value (State
	// PeekValue), without the entry's header; Entity.Decode decodes it.
	// It is nil for every other state.
	Value []byte
	// Raw is the whole entry as stored (header and payload), nil when
	// there is none. Two Peeks of an id that return the same Raw and
	// Version saw the same store.
	Raw []byte
	// Expiry is the entry's logical expiry (zero without an entry or for a
	// corrupt one). Past it, a Get rebuilds the value (or serves it stale
	// within Policy.Grace).
	Expiry time.Time
	// LoadDuration is how long the load that stored the entry took, as
	// recorded in it (0 when unknown: a Set, or no entry).
	LoadDuration time.Duration
	// TTL is the entry key's remaining time to live in Redis: 0 without an
	// entry, -1 for an entry with no expiry.
	TTL time.Duration
	// Version is the id's version token ("" when there is none). Every
	// invalidation (Invalidate, Set, a write through repo) replaces it,
	// and a load stores its result only if the token it read before it
	// began is still the current one: an entry stored under an unchanged
	// token was not invalidated since.
	Version string
	// Lease is the token of the caller holding the id's rebuild lease
	// ("" when none does), and LeaseTTL its remaining time.
	Lease    string
	LeaseTTL time.Duration
}

// Peek returns what Redis holds for id, in one round trip, with no side
// effect: no lease is taken, nothing is loaded, stored or deleted, the near
// cache is neither read nor filled and no counter moves. It reads Redis
// even when the Cache's breaker is open, so it tells an operator what is
// there; its error is then the Redis error. A corrupt entry is reported
// (PeekCorrupt), not deleted.
func (e *Entity[T]) Peek(ctx context.Context, id string) (Peeked, error) {
	key, err := e.key(id)
	if err != nil {
		return Peeked{}, err
	}
	if err := ctx.Err(); err != nil {
		return Peeked{}, err
	}
	res, err := peekScript.Run(ctx, e.c.client, []string{key, key + ":lock", key + ":ver"}).Slice()
	if err != nil {
		if ctx.Err() != nil {
			return Peeked{}, ctx.Err()
		}
		return Peeked{}, fmt.Errorf("cacheaside: peek %s %q: %w", e.name, id, err)
	}
	if len(res) != 5 {
		return Peeked{}, fmt.Errorf("cacheaside: peek %s %q: %d replies, want 5", e.name, id, len(res))
	}
	p := Peeked{Key: key, Lease: str(res[2]), Version: str(res[4])}
	if p.Lease != "" {
		p.LeaseTTL = pttl(res[3])
	}
	raw, ok := res[0].(string)
	if !ok {
		if p.Lease != "" {
			p.State = PeekLeaseOnly
		}
		return p, nil
	}
	p.Raw = []byte(raw)
	p.TTL = pttl(res[1])
	h, payload, err := decodeEntry(p.Raw)
	switch {
	case err != nil:
		p.State = PeekCorrupt
		return p, nil
	case h.null:
		p.State = PeekNotFound
	default:
		p.State = PeekValue
		p.Value = payload
	}
	p.Expiry = time.UnixMilli(h.expiry)
	p.LoadDuration = time.Duration(h.loadUS) * time.Microsecond
	return p, nil
}

// Decode decodes p.Value with the Cache's codec. It fails, matching
// ErrNotFound, when p holds no value (any State but PeekValue), and with
// the codec's error when the payload does not decode into T.
func (e *Entity[T]) Decode(p Peeked) (T, error) {
	var v T
	if p.State != PeekValue {
		return v, fmt.Errorf("%w: %s holds %s", ErrNotFound, p.Key, p.State)
	}
	if err := e.c.codec.Unmarshal(p.Value, &v); err != nil {
		return v, fmt.Errorf("cacheaside: decode %s: %w", p.Key, err)
	}
	return v, nil
}

// Encode returns v encoded with the Cache's codec, as a load of v would
// store it (Peeked.Value of the entry): a tool compares the two to tell
// whether a cached value is the source of truth's.
func (e *Entity[T]) Encode(v T) ([]byte, error) {
	b, err := e.c.codec.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cacheaside: encode %s: %w", e.name, err)
	}
	return b, nil
}

// str is a script's bulk string reply, "" for a nil one.
func str(r any) string {
	s, _ := r.(string)
	return s
}

// pttl converts a PTTL reply: -1 (no expiry) stays -1; a missing key is 0.
func pttl(r any) time.Duration {
	n, _ := r.(int64)
	switch {
	case n == -1:
		return -1
	case n < 0:
		return 0
	}
	return time.Duration(n) * time.Millisecond
}

// Cursor is where a walk of SampleIDs stands. The zero Cursor starts a
// walk; pass back the Cursor each call returns until Done.
type Cursor struct {
	node string // address of the Cluster master being walked; "" for a standalone server, or the first master
	pos  uint64 // SCAN cursor on that node
	done bool
}

// Done reports whether the walk has visited every node.
func (c Cursor) Done() bool { return c.done }

// SampleIDs returns ids that have an entry (a value, a cached "not found"
// or a corrupt one) in Redis, walking the entity's keys with SCAN MATCH
// (never KEYS): about count keys are examined per call (SCAN's COUNT
// hint), so a call may return fewer ids than count, or none, before the
// walk is done. On a Cluster it walks every master in turn, ordered by
// address. As with SCAN, an id cached throughout the walk is returned at
// least once; one cached or deleted during it may or may not be. Pass the
// returned Cursor to the next call until it is Done. It touches no other
// entity's keys and has no side effect. count <= 0 means 100.
func (e *Entity[T]) SampleIDs(ctx context.Context, cur Cursor, count int) ([]string, Cursor, error) {
	if cur.done {
		return nil, cur, nil
	}
	if count <= 0 {
		count = 100
	}
	node := redis.Cmdable(e.c.client)
	var order []string // Cluster masters by address
	if e.c.topo.Kind() == topology.Cluster {
		nodes, err := e.c.topo.Masters(ctx)
		if err != nil {
			return nil, cur, fmt.Errorf("cacheaside: sample %s: %w", e.name, err)
		}
		for a := range nodes {
			order = append(order, a)
		}
		slices.Sort(order)
		i, found := slices.BinarySearch(order, cur.node)
		if cur.node == "" || !found {
			// the first master, or, if cur's master left the Cluster,
			// the next one by address
			if i == len(order) {
				return nil, Cursor{done: true}, nil
			}
			cur = Cursor{node: order[i]}
		}
		node = nodes[cur.node]
	}
	// e.prefix holds no glob character (see invalidateNode); the closing
	// '}' leaves out the :ver and :lock keys.
	keys, pos, err := node.Scan(ctx, cur.pos, e.prefix+"*}", int64(count)).Result()
	if err != nil {
		if ctx.Err() != nil {
			return nil, cur, ctx.Err()
		}
		return nil, cur, fmt.Errorf("cacheaside: sample %s: scan: %w", e.name, err)
	}
	ids := make([]string, 0, len(keys))
	for _, k := range keys {
		if id, ok := e.idOf(k); ok {
			ids = append(ids, id)
		}
	}
	next := Cursor{node: cur.node, pos: pos}
	if pos == 0 {
		next = Cursor{done: true}
		if order != nil {
			if i, _ := slices.BinarySearch(order, cur.node); i+1 < len(order) {
				next = Cursor{node: order[i+1]}
			}
		}
	}
	return ids, next, nil
}
