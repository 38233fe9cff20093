package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/internal/sample"
)

// Value is the row every workload reads and caches: a user of the sample
// schema. Its JSON is about 200 bytes for the rows the workloads create.
type Value = sample.User

// ErrNotFound is what a Subject and a Loader return, wrapped or not, for an
// id that has no row. A Subject maps its library's own "absent" answer to it.
var ErrNotFound = errors.New("benchmarks: not found")

// Loader is the shared database read: it selects one users row by primary
// key through the Env's counted *gorm.DB and returns ErrNotFound when there
// is none. Every DB load a Subject causes goes through it (or, for asidekit's
// variants, through repo, which issues the same kind of statement).
type Loader func(ctx context.Context, id int64) (Value, error)

// Subject is one instance of a cache implementation, as one process of a
// service holds it. Get reads id through the cache, calling the Setup's
// Loader on a miss; it returns ErrNotFound when the row does not exist. Get
// is called from many goroutines at once. If a Subject also implements
// io.Closer, the harness closes it when its run ends.
type Subject interface {
	Get(ctx context.Context, id int64) (Value, error)
}

// Setup is what a Variant's New receives, once per simulated process.
type Setup struct {
	// Env is the run's environment (database, counters).
	Env *Env
	// Instance numbers the simulated processes of one variant from 0; New
	// is called for instance 0 first, so one-off preparation (warming a
	// Bloom filter) belongs there.
	Instance int
	// Client is this process's own Redis client, counted; the harness
	// closes it.
	Client redis.UniversalClient
	// Namespace is the key prefix of this variant in this run, shared by
	// its instances and by no other variant. It contains no ':' or braces.
	Namespace string
	// Load is the shared, counted database read.
	Load Loader
	// TTL is the lifetime of a cached value the scenario is built around.
	// Avalanche and breakdown rely on values expiring after it (plus only
	// the jitter the variant itself adds).
	TTL time.Duration
	// Scenario is the scenario's name: "hit", "penetration", "avalanche" or
	// "breakdown".
	Scenario string
}

// Variant is one named configuration of a cache implementation.
type Variant struct {
	// Name is the variant's row label, e.g. "none" or "mutex".
	Name string
	// Notes is one line on what it does, printed under the table.
	Notes string
	// New builds the Subject of one simulated process.
	New func(s Setup) (Subject, error)
	// Outage marks an avalanche variant that runs with Redis cut off in
	// the middle of its reads (through a loopback proxy the harness
	// controls; real standalone Redis only). Default false.
	Outage bool
	// LoadCap is the most DB loads one process of this variant runs at
	// once, if it has such a cap; reported as db_load_cap (× instances)
	// next to the measured maximum. Default 0: no cap to report.
	LoadCap int
}

// NewLoader returns the Env's shared database read.
func (e *Env) NewLoader() Loader {
	return func(ctx context.Context, id int64) (Value, error) {
		var v Value
		err := e.DB.WithContext(ctx).Take(&v, id).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return v, ErrNotFound
		}
		if err != nil {
			return v, fmt.Errorf("load user %d: %w", id, err)
		}
		return v, nil
	}
}

// instances builds n subjects of v, each with its own client.
func (e *Env) instances(v Variant, ns, scenario string, n int, ttl time.Duration, load Loader, clients func() redis.UniversalClient) ([]Subject, func(), error) {
	if v.New == nil {
		return nil, nil, fmt.Errorf("benchmarks: variant %q has no New", v.Name)
	}
	if clients == nil {
		clients = e.NewClient
	}
	var subs []Subject
	cleanup := func() {
		for _, s := range subs {
			if c, ok := s.(io.Closer); ok {
				_ = c.Close()
			}
		}
	}
	if load == nil {
		load = e.NewLoader()
	}
	if ns == "" {
		ns = e.Sub(v.Name)
	}
	for i := 0; i < n; i++ {
		s, err := v.New(Setup{
			Env:       e,
			Instance:  i,
			Client:    clients(),
			Namespace: ns,
			Load:      load,
			TTL:       ttl,
			Scenario:  scenario,
		})
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("%s: instance %d: %w", v.Name, i, err)
		}
		subs = append(subs, s)
	}
	return subs, cleanup, nil
}
