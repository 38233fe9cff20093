package benchmarks

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
)

// Keyed is implemented by a Subject that can name the Redis key it caches
// id under, so that a program knowing nothing of the library can delete it.
type Keyed interface {
	CacheKey(id int64) string
}

// CacheKey is the Redis key of id's entry.
func (s *entitySubject) CacheKey(id int64) string {
	k, _ := s.ent.Key(strconv.FormatInt(id, 10))
	return k
}

// Deleter is implemented by a Subject that can delete id's cached value
// through its library's own API, as a service's writer does after it
// changed the row: the call the library documents for it (asidekit:
// Entity.Invalidate). library_delete's writer uses it.
type Deleter interface {
	Delete(ctx context.Context, id int64) error
}

// Delete invalidates id through the Entity (Invalidate: Redis first, then
// this process's near cache; the other processes' near caches hear of it
// through their invalidation mechanism).
func (s *entitySubject) Delete(ctx context.Context, id int64) error {
	return s.ent.Invalidate(ctx, strconv.FormatInt(id, 10))
}

// Encoder is implemented by a Subject that can say which bytes a program
// outside the library would SET under its key for v: the library's own
// encoding, obtained from the library's exported functions, where it
// exports one.
type Encoder interface {
	OutsideValue(v Value) ([]byte, error)
}

// OutsideValue is v in asidekit's default codec (cacheaside.JSON) without
// the entry header asidekit puts in front of it: asidekit exports no entry
// encoder, so an outside program can only write the plain value. asidekit
// reads it as a foreign entry (EventDecodeError): it deletes it and loads
// the value from the source of truth.
func (s *entitySubject) OutsideValue(v Value) ([]byte, error) {
	return cacheaside.JSON{}.Marshal(v)
}

// OutsideWriteVariants are asidekit's outside_write variants: the hit
// scenario's entity, remote only and with a near cache of Local.TTL
// p.LocalTTL invalidated by client tracking.
func OutsideWriteVariants(p LocalInvalidationParams) []Variant {
	pol := cacheaside.Policy{Strategy: cacheaside.Mutex, Jitter: 0.1}
	local := pol
	local.Local = &cacheaside.LocalPolicy{TTL: p.LocalTTL}
	return []Variant{
		entityVariant("asidekit", "cacheaside.Entity.Get, remote only", pol, cacheaside.LocalTracking),
		entityVariant("asidekit/local", fmt.Sprintf("with a near cache (Local.TTL %v), invalidated by client tracking", p.LocalTTL), local, cacheaside.LocalTracking),
	}
}

// RunOutsideWrite measures how long each variant serves a value after a
// program outside it changed it: p.Instances processes of the variant,
// p.Goroutines callers each, read p.Keys hot keys in turn while a writer
// changes a key's source of truth (the loader's answer) and deletes its
// Redis entry with a plain DEL on a client of its own, one key every
// p.WriteEvery. Every variant's Subject must implement Keyed. Rows report
// the invalidation_* delays (DEL returned → every process served the new
// version), stale_reads (reads begun after the DEL that answered an older
// version), stale_reads_after_window (of those, begun more than
// invalidation_max_ms + 10ms after it), writes_unseen (writes some process
// had not served when the run ended, p.Tail after the last write at the
// latest: their delay counts until then), requests and errors.
func RunOutsideWrite(ctx context.Context, env *Env, p LocalInvalidationParams, variants []Variant) (Result, error) {
	return runOutside(ctx, env, p, variants, outsideDel)
}

// RunOutsideSet is RunOutsideWrite with the value changed by a plain SET
// in place of the DEL: the writer changes the key's source of truth, then
// SETs the new value into the library's own key, in the library's own
// encoding (the Subject's Encoder), keeping the key's TTL (KEEPTTL; a key
// absent at that moment is created without one, as any plain SET would). Every
// variant's Subject must implement Keyed and Encoder. The invalidation_*
// delays run from the SET's return.
func RunOutsideSet(ctx context.Context, env *Env, p LocalInvalidationParams, variants []Variant) (Result, error) {
	return runOutside(ctx, env, p, variants, outsideSet)
}

// RunLibraryDelete is RunOutsideWrite with the key deleted through the
// library itself: the writer, a process of the variant of its own (not a
// reader), changes the key's source of truth, then calls its Subject's
// Delete (every variant's Subject must implement Deleter). It measures
// what a service gets when every writer uses the library's own call:
// whether the library tells the other processes' local tiers. The
// invalidation_* delays run from Delete's return.
func RunLibraryDelete(ctx context.Context, env *Env, p LocalInvalidationParams, variants []Variant) (Result, error) {
	return runOutside(ctx, env, p, variants, libraryDel)
}

// outsideRuns numbers the variant runs of the outside scenarios, for their
// namespaces.
var outsideRuns atomic.Int64

// outsideHow is how the outside writer changes a library's key.
type outsideHow int

const (
	outsideDel outsideHow = iota // a plain DEL (outside_write)
	outsideSet                   // a plain SET of the new value (outside_set)
	libraryDel                   // the library's own delete (library_delete)
)

func (h outsideHow) scenario() string {
	switch h {
	case outsideSet:
		return "outside_set"
	case libraryDel:
		return "library_delete"
	}
	return "outside_write"
}

func runOutside(ctx context.Context, env *Env, p LocalInvalidationParams, variants []Variant, how outsideHow) (Result, error) {
	res := Result{Scenario: how.scenario(), Backend: env.Backend, Params: paramsMap(p)}
	p.Load = p.Load.norm()
	p.Keys = max(p.Keys, 1)
	for _, v := range variants {
		row, err := outsideWriteVariant(ctx, env, p, v, how)
		if err != nil {
			return res, fmt.Errorf("%s: %s: %w", res.Scenario, v.Name, err)
		}
		res.Rows = append(res.Rows, row)
	}
	change, cmd := "then a plain DEL of the library's key", "DEL"
	switch how {
	case outsideSet:
		change, cmd = "then a plain SET KEEPTTL of the new value, in the library's encoding, into the library's key", "SET"
	case libraryDel:
		change, cmd = "then the library's own delete, from a process of its own", "the delete"
	}
	keys := fmt.Sprintf("%d hot keys", p.Keys)
	if p.KeySpace > 0 {
		keys = fmt.Sprintf("Zipf(%g) over %d keys (%d reads a sweep; the writes' keys drawn alike)", p.zipfS(), p.KeySpace, p.Keys)
	}
	window := "invalidation_max_ms + 10ms"
	if p.Window > 0 {
		window = p.Window.String()
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d reader processes × %d goroutines over %s; %d writes (new source value, %s) one every %v; local TTL %v; "+
		"invalidation_*: %s returned → every reader process that read the key again served the new value; stale_reads_after_window: older than %s",
		p.Instances, p.Goroutines, keys, p.Writes, change, p.WriteEvery, p.LocalTTL, cmd, window))
	return res, nil
}

// zipfS is p.Zipf, or DefaultZipfS when it is not above 1.
func (p LocalInvalidationParams) zipfS() float64 {
	if p.Zipf <= 1 {
		return DefaultZipfS
	}
	return p.Zipf
}

func outsideWriteVariant(ctx context.Context, env *Env, p LocalInvalidationParams, v Variant, how outsideHow) (Row, error) {
	nkeys := p.Keys
	if p.KeySpace > 0 {
		nkeys = p.KeySpace
	}
	truth := make([]atomic.Int64, nkeys)
	var lc loadCount
	load := func(ctx context.Context, id int64) (Value, error) {
		k := int(id - 1)
		if k < 0 || k >= nkeys {
			return Value{}, ErrNotFound
		}
		ver := truth[k].Load()
		lc.loaded(ctx, ver)
		return versioned(k, ver), nil
	}
	// A namespace of this call's own: outside_write, outside_set and
	// library_delete (and their fleet shapes) run the same variant names,
	// and a run that found another's keys read their versions, newer than
	// its own truth, and was never stale (library_delete after
	// outside_write in one asidepeers run: 0 stale reads for local tiers
	// that hear of nothing).
	ns := env.Sub(fmt.Sprintf("%s-%s-%d", strings.NewReplacer("/", "-", "+", "-").Replace(v.Name), how.scenario(), outsideRuns.Add(1)))
	n := p.Instances
	if how == libraryDel {
		n++ // the writer's process
	}
	subs, cleanup, err := env.instances(v, ns, "outside_write", n, time.Hour, load, nil)
	if err != nil {
		return Row{}, err
	}
	defer cleanup()
	keyed, ok := subs[0].(Keyed)
	if how != libraryDel && !ok {
		return Row{}, fmt.Errorf("its Subject (%T) does not name its keys (Keyed)", subs[0])
	}
	enc, ok := subs[0].(Encoder)
	if how == outsideSet && !ok {
		return Row{}, fmt.Errorf("its Subject (%T) does not encode values (Encoder)", subs[0])
	}
	del, ok := subs[n-1].(Deleter)
	if how == libraryDel && !ok {
		return Row{}, fmt.Errorf("its Subject (%T) does not delete through its library (Deleter)", subs[n-1])
	}
	var outside redis.UniversalClient
	if how != libraryDel {
		outside = env.NewClient()
	}
	read := func(ctx context.Context, proc, k int) (Value, error) {
		ctx, m := lc.mark(ctx)
		v, err := subs[proc].Get(ctx, int64(k+1))
		lc.returned(m, &truth[k])
		return v, err
	}
	// Every process reads every key once before the writes begin: the
	// first misses do not race the first writes.
	for proc := range p.Instances {
		for k := range nkeys {
			if _, err := read(ctx, proc, k); err != nil {
				return Row{}, fmt.Errorf("warming key %d: %w", k, err)
			}
		}
	}
	lc.overtaken.Store(0)
	d := p.drive(p.LocalTTL+time.Second, read, func(ctx context.Context, _, k int) (int64, error) {
		ver := truth[k].Add(1)
		if how == libraryDel {
			return ver, del.Delete(ctx, int64(k+1))
		}
		key := keyed.CacheKey(int64(k + 1))
		if how == outsideDel {
			return ver, outside.Del(ctx, key).Err()
		}
		b, err := enc.OutsideValue(versioned(k, ver))
		if err != nil {
			return ver, err
		}
		return ver, outside.Set(ctx, key, b, redis.KeepTTL).Err()
	})
	d.keySpace, d.zipf, d.window = p.KeySpace, p.zipfS(), p.Window
	st := d.run(ctx)
	row := Row{Variant: v.Name, Notes: v.Notes}
	st.setInvalidation(&row)
	st.setStale(&row, p.KeySpace > 0)
	if how != libraryDel {
		lc.set(&row)
	}
	return row, ctx.Err()
}

// MetricLoadsOvertaken counts, in outside_write and outside_set, the loads
// whose key the writer changed before the read that made them returned:
// the fill that followed may have landed after the plain DEL or SET, and
// left the old value in Redis until its TTL (cache-aside's own race with
// a write that bypasses the library, whatever the near cache). Set only
// for a library whose loader receives the reading call's context.
const MetricLoadsOvertaken = "loads_overtaken"

// loadCount tells the loads a write overtook (MetricLoadsOvertaken): a read
// marks its context, the loader records the version it read on the mark,
// and the read, once returned, compares it with the key's truth.
type loadCount struct {
	loads, marked, overtaken atomic.Int64
}

type loadMarkKey struct{}

// loadMark is the version a read's load read, -1 for none.
type loadMark struct{ ver atomic.Int64 }

func (lc *loadCount) mark(ctx context.Context) (context.Context, *loadMark) {
	m := &loadMark{}
	m.ver.Store(-1)
	return context.WithValue(ctx, loadMarkKey{}, m), m
}

func (lc *loadCount) loaded(ctx context.Context, ver int64) {
	lc.loads.Add(1)
	if m, ok := ctx.Value(loadMarkKey{}).(*loadMark); ok {
		lc.marked.Add(1)
		m.ver.Store(ver)
	}
}

func (lc *loadCount) returned(m *loadMark, truth *atomic.Int64) {
	if v := m.ver.Load(); v >= 0 && truth.Load() != v {
		lc.overtaken.Add(1)
	}
}

// set reports the loads overtaken on row if every load saw its read's mark.
func (lc *loadCount) set(row *Row) {
	if lc.marked.Load() == lc.loads.Load() {
		row.Set(MetricLoadsOvertaken, float64(lc.overtaken.Load()))
	}
}
