package benchmarks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
)

// Metrics of the local_invalidation scenario.
const (
	MetricInvalidationP50 = "invalidation_p50_ms"
	MetricInvalidationP99 = "invalidation_p99_ms"
	MetricInvalidationMax = "invalidation_max_ms"
	MetricStaleAfter      = "stale_reads_after_window"
)

// LocalInvalidationParams size the local_invalidation scenario.
type LocalInvalidationParams struct {
	// Instances reader processes with a near cache, Goroutines each.
	Load
	// Keys is the number of hot keys, read in turn and written in turn.
	Keys int `json:"keys"`
	// Writes is the number of writes per variant, one every WriteEvery.
	Writes     int           `json:"writes"`
	WriteEvery time.Duration `json:"write_every"`
	// ReadEvery paces each reader goroutine: a pause after every read (0:
	// it yields the processor instead, so that spinning readers do not
	// starve the invalidation goroutines of CPU as no real service would).
	ReadEvery time.Duration `json:"read_every"`
	// LocalTTL is the near cache's Local.TTL: the bound on staleness when
	// a change is not seen at all.
	LocalTTL time.Duration `json:"local_ttl"`
}

// localVariant is one row of local_invalidation.
type localVariant struct {
	name, notes string
	mode        cacheaside.LocalInvalidation
	plain       bool // writes by UPDATE-then-DEL from outside asidekit
	kill        bool // the near cache connections are killed mid-run
}

func localVariants() []localVariant {
	return []localVariant{
		{name: "tracking/asidekit", notes: "client tracking; writes by Entity.Set (as repo after its commit)", mode: cacheaside.LocalTracking},
		{name: "tracking/plain_del", notes: "client tracking; writes by a plain DEL from outside asidekit", mode: cacheaside.LocalTracking, plain: true},
		{name: "tracking/plain_del/kill", notes: "the same, the near cache connections killed (CLIENT KILL) mid-run", mode: cacheaside.LocalTracking, plain: true, kill: true},
		{name: "broadcast/asidekit", notes: "asidekit's own pub/sub broadcast; writes by Entity.Set", mode: cacheaside.LocalBroadcast},
		{name: "broadcast/plain_del", notes: "broadcast; a plain DEL is not announced: stale up to Local.TTL", mode: cacheaside.LocalBroadcast, plain: true},
	}
}

// readRec is one read: its key, version and when it began and ended (ns
// since the run's start).
type readRec struct {
	key        int
	ver        int64
	begin, end int64
	proc       int
}

// writeRec is one write: the version it made and when it returned.
type writeRec struct {
	key  int
	ver  int64
	done int64
}

// RunLocalInvalidation measures how fast a write reaches the near caches of
// other processes: p.Instances readers read p.Keys hot keys in turn while
// a writer changes them one every p.WriteEvery, through asidekit or with a
// plain DEL from outside it (after changing the source of truth), per
// invalidation mechanism; one sub-run kills the near cache connections
// half way. For each write, the delay is from the write's return until
// every reader process has served the new version (its first read begun
// after the write to return it); stale_reads_after_window counts the reads
// that returned an older version although they began more than
// invalidation_max_ms + 10ms after the write (must be 0 where the
// mechanism sees the write). Needs client tracking: not on miniredis.
func RunLocalInvalidation(ctx context.Context, env *Env, p LocalInvalidationParams) (Result, error) {
	res := Result{Scenario: "local_invalidation", Backend: env.Backend, Params: paramsMap(p)}
	if env.EmbeddedRedis {
		res.Notes = append(res.Notes, "skipped: miniredis has no client tracking")
		return res, nil
	}
	p.Keys = max(p.Keys, 1)
	for _, v := range localVariants() {
		row, err := runLocalVariant(ctx, env, p, v)
		if err != nil {
			return res, fmt.Errorf("local_invalidation: %s: %w", v.name, err)
		}
		res.Rows = append(res.Rows, row)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d reader processes × %d goroutines (a read every %v each) over %d hot keys, %d writes one every %v, Local.TTL %v; "+
		"invalidation_*: write returned → every reader process served the new version", p.Instances, p.Goroutines, p.ReadEvery, p.Keys, p.Writes, p.WriteEvery, p.LocalTTL))
	return res, nil
}

func runLocalVariant(ctx context.Context, env *Env, p LocalInvalidationParams, v localVariant) (Row, error) {
	ns := env.Sub("local-" + strings.ReplaceAll(v.name, "/", "-"))
	var truth sync.Map // key index -> *atomic.Int64 version
	for k := 0; k < p.Keys; k++ {
		truth.Store(k, new(atomic.Int64))
	}
	verOf := func(k int) *atomic.Int64 { x, _ := truth.Load(k); return x.(*atomic.Int64) }
	load := func(_ context.Context, id string) (Value, error) {
		k, err := strconv.Atoi(id)
		if err != nil {
			return Value{}, err
		}
		return versioned(k, verOf(k).Load()), nil
	}
	pol := cacheaside.Policy{TTL: time.Hour, Strategy: cacheaside.SingleFlight, Local: &cacheaside.LocalPolicy{TTL: p.LocalTTL}}
	open := func() (*cacheaside.Cache, *cacheaside.Entity[Value], error) {
		c, err := cacheaside.New(env.NewClient(), &cacheaside.Options{Namespace: ns, LocalInvalidation: v.mode})
		if err != nil {
			return nil, nil, err
		}
		e, err := cacheaside.NewEntity[Value](c, "user", pol)
		if err == nil {
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err = c.WaitLocal(wctx)
			cancel()
		}
		if err != nil {
			_ = c.Close()
			return nil, nil, err
		}
		return c, e, nil
	}
	wc, writer, err := open()
	if err != nil {
		return Row{}, err
	}
	defer wc.Close()
	readers := make([]*cacheaside.Entity[Value], p.Instances)
	for i := range readers {
		c, e, err := open()
		if err != nil {
			return Row{}, err
		}
		defer c.Close()
		readers[i] = e
	}

	start := time.Now()
	since := func() int64 { return int64(time.Since(start)) }
	stop := make(chan struct{})
	var errs atomic.Int64
	recs := make([][]readRec, p.Instances*p.Goroutines)
	var wg sync.WaitGroup
	for i := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := readers[i/p.Goroutines]
			for n := i; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				k := n % p.Keys
				b := since()
				got, err := e.Get(ctx, strconv.Itoa(k), load)
				if err != nil {
					errs.Add(1)
					continue
				}
				ver, _ := strconv.ParseInt(got.Name, 10, 64)
				recs[i] = append(recs[i], readRec{key: k, ver: ver, begin: b, end: since(), proc: i / p.Goroutines})
				if p.ReadEvery > 0 {
					time.Sleep(p.ReadEvery)
				} else {
					runtime.Gosched()
				}
			}
		}()
	}

	writes := make([]writeRec, 0, p.Writes)
	tick := time.NewTicker(p.WriteEvery)
	for w := 0; w < p.Writes; w++ {
		<-tick.C
		if v.kill && w == p.Writes/2 {
			if err := killNearConns(ctx, env.NewClient(), ns); err != nil {
				errs.Add(1)
			}
		}
		k := w % p.Keys
		ver := verOf(k).Add(1)
		id := strconv.Itoa(k)
		if v.plain {
			key, _ := writer.Key(id)
			err = env.NewClient().Del(ctx, key).Err()
		} else {
			err = writer.Set(ctx, id, versioned(k, ver))
		}
		if err != nil {
			errs.Add(1)
		}
		writes = append(writes, writeRec{key: k, ver: ver, done: since()})
	}
	tick.Stop()
	// Let the last writes reach every reader before stopping (a fixed
	// tail: what matters is measured from the records, not from it).
	time.Sleep(max(200*time.Millisecond, 4*p.WriteEvery))
	close(stop)
	wg.Wait()

	delays, stale, requests := analyseLocal(recs, writes, p.Instances, since())
	row := Row{Variant: v.name, Notes: v.notes}
	row.Set(MetricRequests, float64(requests))
	row.Set(MetricErrors, float64(errs.Load()))
	row.Set(MetricInvalidationP50, ms(quantile(delays, 0.5)))
	row.Set(MetricInvalidationP99, ms(quantile(delays, 0.99)))
	row.Set(MetricInvalidationMax, ms(quantile(delays, 1)))
	row.Set(MetricStaleAfter, float64(stale))
	return row, nil
}

// versioned is key k's value at version ver (the version in Name).
func versioned(k int, ver int64) Value {
	return Value{ID: int64(k), Name: strconv.FormatInt(ver, 10)}
}

// analyseLocal returns the sorted propagation delays of the writes, the
// stale reads past the window and the number of reads.
// A write some process never served the new version of counts with the
// delay until the run's end.
func analyseLocal(recs [][]readRec, writes []writeRec, procs int, end int64) ([]time.Duration, int, int) {
	byKey := map[int][]readRec{}
	n := 0
	for _, rs := range recs {
		for _, r := range rs {
			byKey[r.key] = append(byKey[r.key], r)
		}
		n += len(rs)
	}
	for _, rs := range byKey {
		slices.SortFunc(rs, func(a, b readRec) int { return cmp.Compare(a.begin, b.begin) })
	}
	var delays []time.Duration
	for _, w := range writes {
		rs := byKey[w.key]
		i, _ := slices.BinarySearchFunc(rs, w.done, func(r readRec, t int64) int { return cmp.Compare(r.begin, t) })
		first := make([]int64, procs) // end of each process's first fresh read
		seen := 0
		for ; i < len(rs) && seen < procs; i++ {
			if r := rs[i]; r.ver >= w.ver && first[r.proc] == 0 {
				first[r.proc] = r.end
				seen++
			}
		}
		if seen < procs {
			delays = append(delays, time.Duration(end-w.done))
			continue
		}
		delays = append(delays, time.Duration(slices.Max(first)-w.done))
	}
	slices.Sort(delays)
	window := int64(quantile(delays, 1) + 10*time.Millisecond)
	stale := 0
	wk := map[int][]writeRec{} // by key, in order of return
	for _, w := range writes {
		wk[w.key] = append(wk[w.key], w)
	}
	for k, rs := range byKey {
		ws := wk[k]
		for _, r := range rs {
			// The last write of k that returned more than window before r.
			j, _ := slices.BinarySearchFunc(ws, r.begin-window, func(w writeRec, t int64) int { return cmp.Compare(w.done, t) })
			if j > 0 && r.ver < ws[j-1].ver {
				stale++
			}
		}
	}
	return delays, stale, n
}

// killNearConns closes the near cache connections of namespace ns (CLIENT
// KILL by name) on every master.
func killNearConns(ctx context.Context, client redis.UniversalClient, ns string) error {
	kill := func(ctx context.Context, node redis.Cmdable) error {
		list, err := node.ClientList(ctx).Result()
		if err != nil {
			return err
		}
		for line := range strings.Lines(list) {
			var id int64
			if !strings.Contains(line, " name="+ns+":near ") {
				continue
			}
			if _, err := fmt.Sscanf(line, "id=%d", &id); err != nil {
				return err
			}
			if err := node.ClientKillByFilter(ctx, "ID", strconv.FormatInt(id, 10)).Err(); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
		}
		return nil
	}
	if cc, ok := client.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return kill(ctx, node) })
	}
	return kill(ctx, client)
}
