package benchmarks_test

import (
	"context"
	"fmt"
	"os"

	"github.com/asidekit/asidekit/benchmarks"
	"github.com/asidekit/asidekit/testcontainers"
)

// exampleConfig names the servers of the examples: $ASIDEKIT_REDIS_ADDR
// (else the Redis the tests use) and $ASIDEKIT_POSTGRES_DSN.
func exampleConfig() benchmarks.Config {
	addr, err := testcontainers.RedisAddr()
	if err != nil {
		panic(err)
	}
	return benchmarks.Config{RedisAddr: addr, PostgresDSN: os.Getenv("ASIDEKIT_POSTGRES_DSN"), DBPool: 4}
}

// RunPenetration compares asidekit's penetration guards on one workload:
// reads of ids that exist nowhere.
func ExampleRunPenetration() {
	ctx := context.Background()
	env, err := benchmarks.Open(ctx, exampleConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer env.Close() // drops the run's database and deletes its keys

	p := benchmarks.QuickParams().Penetration
	p.Load = benchmarks.Load{Instances: 2, Goroutines: 2}
	p.Rows, p.AbsentIDs, p.Reads = 100, 50, 200 // 4 reads of each absent id
	res, err := benchmarks.RunPenetration(ctx, env, p, benchmarks.PenetrationVariants(p))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range res.Rows {
		loads, _ := r.Get(benchmarks.MetricDBLoads)
		fmt.Printf("%-10s %3.0f DB loads for 200 reads of 50 absent ids\n", r.Variant, loads)
	}
	// Output:
	// none       200 DB loads for 200 reads of 50 absent ids
	// null_cache  50 DB loads for 200 reads of 50 absent ids
	// bloom        0 DB loads for 200 reads of 50 absent ids
	// bloom_null   0 DB loads for 200 reads of 50 absent ids
}

// noCache is a Subject without a cache: every Get is a DB load.
type noCache struct{ load benchmarks.Loader }

func (n noCache) Get(ctx context.Context, id int64) (benchmarks.Value, error) {
	return n.load(ctx, id)
}

// A Variant plugs any cache implementation into the workloads: New builds
// one Subject per simulated process from its Setup (its own Redis client, a
// namespace, the shared counted Loader and the scenario's TTL).
func ExampleVariant() {
	ctx := context.Background()
	env, err := benchmarks.Open(ctx, exampleConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer env.Close()

	direct := benchmarks.Variant{
		Name:  "direct",
		Notes: "no cache at all",
		New: func(s benchmarks.Setup) (benchmarks.Subject, error) {
			return noCache{load: s.Load}, nil
		},
	}
	p := benchmarks.QuickParams().Penetration
	p.Load = benchmarks.Load{Instances: 1, Goroutines: 2}
	p.Rows, p.AbsentIDs, p.Reads = 10, 10, 30
	res, err := benchmarks.RunPenetration(ctx, env, p, []benchmarks.Variant{direct})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := res.Row("direct")
	loads, _ := r.Get(benchmarks.MetricDBLoads)
	notFound, _ := r.Get("not_found")
	fmt.Printf("%s: %.0f DB loads, %.0f not found\n", r.Variant, loads, notFound)
	// Output:
	// direct: 30 DB loads, 30 not found
}
