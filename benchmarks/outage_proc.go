package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit"
	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/seqgen"
)

// outageItem is the outage scenario's row: every write raises Version by
// one in SQL, so versions follow the commit order.
type outageItem struct {
	ID      int64  `gorm:"primaryKey;autoIncrement:false" json:"id"`
	Version int64  `gorm:"not null" json:"version"`
	Name    string `gorm:"size:100;not null" json:"name"`
}

func (outageItem) TableName() string { return "asidebench_outage_items" }

// outageBiz is the serial numbers' business code.
const outageBiz = "ORD"

// outageProc is one simulated process of the service.
type outageProc struct {
	client  redis.UniversalClient
	kit     *asidekit.Kit
	items   *repo.Repository[outageItem, int64]
	limiter limit.Limiter
	gen     *seqgen.Generator
	idx     int // the process's number in its run (the stale reads' notes)
}

// openOutageProc builds a process as docs/namespaces.md shows: a Kit over a client of
// its own (dialing addr), a repository with a Bloom filter, null caching,
// the Mutex strategy and a near cache, a fail-open limiter and a
// generator. It returns once the near cache may serve.
func openOutageProc(ctx context.Context, env *Env, addr, ns string, kitClient bool, rows int) (_ *outageProc, err error) {
	p := &outageProc{}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	o := &redis.Options{Addr: addr}
	if kitClient {
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = asidekit.RecommendedTimeout, asidekit.RecommendedTimeout, asidekit.RecommendedTimeout
		o.ContextTimeoutEnabled, o.MinIdleConns = true, 4
	}
	p.client = redis.NewClient(o)
	if p.kit, err = asidekit.New(asidekit.Config{Namespace: ns, Redis: p.client, DB: env.DB}); err != nil {
		return nil, err
	}
	p.items, err = repo.New[outageItem, int64](env.DB, p.kit.Cache(), &repo.Options{
		Policy: cacheaside.Policy{TTL: 10 * time.Minute, Jitter: 0.1, NullTTL: time.Minute, Strategy: cacheaside.Mutex,
			Local: outageLocal()},
		Filter:            p.kit.FilterOptions(&bloom.Options{Capacity: int64(4 * rows), FalsePositiveRate: 0.01}),
		AfterCommitErrors: true,
	})
	if err != nil {
		return nil, err
	}
	if p.limiter, err = limit.NewGCRA(p.client, limit.GCRA{Rate: limit.PerSecond(1_000_000)}, p.kit.LimitOptions(&limit.Options{FailOpen: true})); err != nil {
		return nil, err
	}
	if p.gen, err = p.kit.Generator(&seqgen.Options{Location: time.UTC}); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := p.kit.Cache().WaitLocal(wctx); err != nil {
		return nil, fmt.Errorf("near cache: %w", err)
	}
	return p, nil
}

// outageNoLocal, for the tests only, runs the processes without a near
// cache.
var outageNoLocal bool

// outageLocal is the processes' near cache policy.
func outageLocal() *cacheaside.LocalPolicy {
	if outageNoLocal {
		return nil
	}
	return &cacheaside.LocalPolicy{TTL: time.Minute}
}

// close stops the process: its repository's rebuilds, generator, Kit and
// client.
func (p *outageProc) close() {
	if p.items != nil {
		_ = p.items.Close()
	}
	if p.gen != nil {
		_ = p.gen.Close()
	}
	if p.kit != nil {
		_ = p.kit.Close()
	}
	if p.client != nil {
		_ = p.client.Close()
	}
}

// outageTruth is what the writers acknowledged, per row (index id-1).
type outageTruth struct {
	acked []atomic.Int64 // highest version a repository write returned (nil or ErrAfterCommit)
	oob   []atomic.Int64 // highest version a plain-SQL write committed
	// oobAtRestore is oob as it was just before the link was restored;
	// written before restoreAt is set, read only by reads that began after.
	oobAtRestore []int64
	restoreAt    atomic.Int64 // UnixNano of the restore; 0 before
	log          outageLog    // every write and stale read, for the notes
}

func newOutageTruth(rows int) *outageTruth {
	return &outageTruth{acked: make([]atomic.Int64, rows), oob: make([]atomic.Int64, rows)}
}

// raise sets a to v unless it holds more already.
func raise(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// markRestore records the plain-SQL versions committed so far, calls heal
// (which restores the link), then records the restore's time.
func (t *outageTruth) markRestore(heal func()) {
	snap := make([]int64, len(t.oob))
	for i := range t.oob {
		snap[i] = t.oob[i].Load()
	}
	t.oobAtRestore = snap
	heal()
	t.restoreAt.Store(time.Now().UnixNano())
}

// want is the lowest version a read of id beginning now may return: repo
// writes acknowledged so far and, when the read begins after the restore
// (after), plain-SQL writes committed before it.
func (t *outageTruth) want(id int64) (acked, oob int64, after bool) {
	acked = t.acked[id-1].Load()
	if t.restoreAt.Load() == 0 {
		return acked, 0, false
	}
	return acked, t.oobAtRestore[id-1], true
}

// oobWrite raises row id's version by one with plain SQL, as another
// program would, and records it.
func (t *outageTruth) oobWrite(ctx context.Context, db *gorm.DB, id int64) error {
	var v int64
	err := db.WithContext(ctx).Raw("UPDATE asidebench_outage_items SET version = version + 1 WHERE id = ? RETURNING version", id).Scan(&v).Error
	if err != nil {
		return err
	}
	raise(&t.oob[id-1], v)
	t.log.wrote(id, outageWrite{ver: v, done: time.Now().UnixNano(), proc: -1})
	return nil
}

// repoWrite raises row id's version by one through process p's repository
// and records the version when the write is acknowledged: nil, or
// ErrAfterCommit (committed, its cache upkeep failed and is retried).
func (t *outageTruth) repoWrite(ctx context.Context, p *outageProc, id int64) (afterCommit bool, err error) {
	it, err := p.items.Modify(ctx, id, map[string]any{"version": gorm.Expr("version + 1")})
	switch {
	case err == nil:
	case errors.Is(err, repo.ErrAfterCommit):
		afterCommit = true
	default:
		return false, err
	}
	raise(&t.acked[id-1], it.Version)
	t.log.wrote(id, outageWrite{ver: it.Version, done: time.Now().UnixNano(), proc: p.idx, afterCommit: afterCommit})
	return afterCommit, nil
}
