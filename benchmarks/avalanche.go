package benchmarks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/backoff"
	"github.com/asidekit/asidekit/internal/faultproxy"
)

// bucketWidth is the avalanche timeline's resolution.
const bucketWidth = 100 * time.Millisecond

// RunAvalanche caches p.Keys keys at once (through Warmer when the
// subject has it) and reads random ones steadily until p.Tail after the
// last possible expiry (TTL·(1+Jitter)): p.Rate requests per second in
// all, sent when due whether or not earlier ones have answered (open
// loop, as traffic reaches a service), spread over p.Instances processes,
// with at most p.Instances × p.Goroutines in flight (a request due while
// all are busy is dropped and counted). Rows report db_loads, the DB loads in each 100 ms
// bucket (Timeline, db_loads_per_100ms in JSON) and their peak.
//
// A variant with Outage set runs with a long TTL instead and its clients
// go through a loopback proxy that is cut at p.OutageAt for p.OutageFor:
// its row adds max_inflight_db_loads (the most SQL statements running at
// once) next to db_load_cap. Outage variants need a real standalone Redis
// and are skipped, with a note, otherwise.
func RunAvalanche(ctx context.Context, env *Env, p AvalancheParams, variants []Variant) (Result, error) {
	p.Keys = max(p.Keys, 1)
	res := Result{Scenario: "avalanche", Backend: env.Backend, Params: paramsMap(p)}
	if err := env.ensureUsers(ctx, p.Keys); err != nil {
		return res, err
	}
	ids := make([]int64, p.Keys)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	for _, v := range variants {
		if v.Outage && (env.EmbeddedRedis || env.Cluster) {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: skipped: it cuts a loopback proxy in front of a real standalone Redis (use -redis)", v.Name))
			continue
		}
		row, err := runAvalancheVariant(ctx, env, p, v, ids)
		if err != nil {
			return res, fmt.Errorf("avalanche: %s: %w", v.Name, err)
		}
		res.Rows = append(res.Rows, row)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d keys cached at once, TTL %v; DB loads counted per %v", p.Keys, p.TTL, bucketWidth))
	if n := jitterReloadNote(p.TTL, time.Duration(float64(p.TTL)*(1+max(p.Jitter, 0)))+p.Tail, p.Jitter); n != "" {
		res.Notes = append(res.Notes, n)
	}
	return res, nil
}

func runAvalancheVariant(ctx context.Context, env *Env, p AvalancheParams, v Variant, ids []int64) (Row, error) {
	row := Row{Variant: v.Name, Notes: v.Notes}
	ttl := p.TTL
	window := time.Duration(float64(p.TTL)*(1+max(p.Jitter, 0))) + p.Tail
	var clients func() redis.UniversalClient
	var px *faultproxy.Proxy
	if v.Outage {
		var err error
		if px, err = faultproxy.New(env.RedisAddrs[0]); err != nil {
			return row, err
		}
		defer px.Close()
		clients = func() redis.UniversalClient { return env.newClientAt([]string{px.Addr()}) }
		ttl = 10 * time.Minute
		window = p.OutageAt + p.OutageFor + max(p.Tail, time.Second)
	}
	subs, cleanup, err := env.instances(v, "", "avalanche", p.Instances, ttl, nil, clients)
	if err != nil {
		return row, err
	}
	defer cleanup()

	if err := warm(ctx, subs[0], ids, p.Load); err != nil {
		return row, fmt.Errorf("warm-up: %w", err)
	}
	// The keys were written at the end of the warm-up: from here they
	// expire after TTL, a whole number of buckets.
	t0 := time.Now()
	rec := &recorder{}
	env.dbc.rec.Store(rec)
	env.dbc.maxInflight.Store(env.dbc.inflight.Load())
	before := env.Counts()

	var outage sync.WaitGroup
	if px != nil {
		outage.Add(1)
		go func() {
			defer outage.Done()
			_ = backoff.Sleep(ctx, time.Until(t0.Add(p.OutageAt)))
			px.Cut()
			_ = backoff.Sleep(ctx, p.OutageFor)
			px.Heal()
		}()
	}
	l := p.Load.norm()
	var mu sync.Mutex // guards rng
	rng := rand.New(rand.NewPCG(uint64(len(ids)), 7))
	stop := env.trackTime("avalanche "+v.Name, window)
	o, dropped := driveRate(ctx, subs, p.Rate, l.Instances*l.Goroutines, t0.Add(window), func(int64) int64 {
		mu.Lock()
		defer mu.Unlock()
		return ids[rng.IntN(len(ids))]
	})
	stop()
	outage.Wait()
	env.dbc.rec.Store(nil)
	after := env.Counts()
	if err := ctx.Err(); err != nil {
		return row, err
	}

	row.Timeline = bucket(starts(rec.snapshot()), t0, bucketWidth, int(window/bucketWidth))
	row.Set(MetricDBLoads, float64(after.DBStatements-before.DBStatements))
	row.Set(MetricPeakPer100ms, float64(maxOf(row.Timeline)))
	o.fill(&row)
	row.Set(MetricOverloaded, float64(o.overloaded.Load()))
	row.Set("dropped", float64(dropped))
	if v.Outage {
		row.Set(MetricMaxInflight, float64(env.dbc.maxInflight.Load()))
		if v.LoadCap > 0 {
			row.Set(MetricLoadCap, float64(v.LoadCap*l.Instances))
		}
	}
	return row, nil
}

// warm caches ids through s: with Warm in batches of 500 when s is a
// Warmer, else with concurrent Gets.
func warm(ctx context.Context, s Subject, ids []int64, l Load) error {
	if w, ok := s.(Warmer); ok {
		for lo := 0; lo < len(ids); lo += 500 {
			if err := w.Warm(ctx, ids[lo:min(lo+500, len(ids))]); err != nil {
				return err
			}
		}
		return nil
	}
	o := drive(ctx, []Subject{s}, Load{Instances: 1, Goroutines: l.workers()}, sequence(ids), nil)
	if e := o.firstErr.Load(); e != nil {
		return *e
	}
	return nil
}
