package benchmarks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/repo"
)

// queryItem is the query scenario's row: a product in a category.
type queryItem struct {
	ID         int64 `gorm:"primaryKey;autoIncrement:false"`
	CategoryID int64 `gorm:"not null;index"`
	Price      int64 `gorm:"not null"`
}

func (queryItem) TableName() string { return "asidebench_query_items" }

// seedCategory is row id's category at the start (0: no such row).
func (p QueryParams) seedCategory(id int64) int64 {
	small := int64(p.Checked * p.CheckedRows)
	switch {
	case id < 1 || id > int64(p.Rows):
		return 0
	case id <= small:
		return (id-1)/int64(p.CheckedRows) + 1
	default:
		return int64(p.Checked) + 1 + id%int64(p.Categories-p.Checked)
	}
}

// queryProc is one simulated process of a variant.
type queryProc struct {
	repo  *repo.Repository[queryItem, int64]
	query *repo.Query[queryItem, int64]
	lists redis.UniversalClient // ttl_lists' client
	ns    string
}

// queryWorker is one worker's state; it alone writes the rows it owns
// (ids ≡ w modulo the number of workers).
type queryWorker struct {
	w      int
	rnd    *rand.Rand
	zipf   *rand.Zipf
	cat    map[int64]int64 // owned rows' current category
	ids    []int64         // owned rows
	pos    map[int64]int   // index in ids
	hot    []int64         // owned rows once put in a checked category
	nextID int64
	hist   map[int64][]qEvent
	reads  []qRead
	writes int
}

func runQueryVariant(ctx context.Context, env *Env, p QueryParams, v queryVariant) (Row, error) {
	row := Row{Variant: v.name}
	if err := seedQueryItems(ctx, env.DB, p); err != nil {
		return row, err
	}
	ns := env.Sub("query-" + v.name)
	// Mutex, the recommended strategy: a row or page that misses in every
	// process at once (a row just inserted, read by every process's next
	// list read) loads once for the fleet, not once per process.
	pol := cacheaside.Policy{TTL: 10 * time.Minute, NullTTL: time.Minute, Strategy: cacheaside.Mutex}
	procs := make([]*queryProc, p.Instances)
	for i := range procs {
		cache, err := cacheaside.New(env.NewClient(), &cacheaside.Options{Namespace: ns})
		if err != nil {
			return row, err
		}
		defer cache.Close()
		// asidekit writes rows through (Options.WriteThrough): a write
		// stores its row, so the list read after it finds the row cached.
		// asidekit_cdc stores the rows of plain-SQL writes from the log
		// (Options.LogStores): the list read after a write finds the row
		// cached too.
		r, err := repo.New[queryItem, int64](env.DB, cache, &repo.Options{Policy: pol, WriteThrough: v.name == "asidekit", LogStores: v.cdc})
		if err != nil {
			return row, err
		}
		pr := &queryProc{repo: r, lists: cache.Client(), ns: ns}
		if v.name == "asidekit" || v.cdc {
			if pr.query, err = repo.NewQuery(r, repo.QueryOf{Name: "by_category", Where: []string{"category_id"}, Order: "id", Policy: pol}); err != nil {
				return row, err
			}
		}
		procs[i] = pr
	}
	if v.cdc {
		stop, err := startQueryCDC(ctx, env, procs[0].repo)
		if err != nil {
			return row, err
		}
		defer stop()
	}

	workers := p.Instances * p.Goroutines
	ws := make([]*queryWorker, workers)
	for w := range ws {
		ws[w] = newQueryWorker(p, w, workers)
	}
	if err := warmQueryLists(ctx, env.DB, p, v, procs, workers); err != nil {
		return row, err
	}
	var dbReads atomic.Int64
	// The queries of the primary's position after loads (LogStores) run
	// outside GORM, unseen by the list readers' counter: all of the run's
	// are counted as list reads' statements.
	positions := procs[0].repo.ReadStats().LoadPositions
	lat := newLatencies(workers)
	tr := env.track("query "+v.name, p.Duration.Milliseconds())
	start := time.Now()
	deadline := start.Add(p.Duration)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for _, qw := range ws {
		pr := procs[qw.w%p.Instances]
		wg.Go(func() { errs <- qw.run(ctx, env.DB, p, v, pr, &dbReads, lat, deadline) })
	}
	go func() {
		for t := time.NewTicker(100 * time.Millisecond); time.Now().Before(deadline); <-t.C {
			tr.Add(100)
		}
	}()
	wg.Wait()
	dbReads.Add(procs[0].repo.ReadStats().LoadPositions - positions)
	tr.Done()
	close(errs)
	for err := range errs {
		if err != nil {
			return row, err
		}
	}

	hist := map[int64][]qEvent{}
	var reads []qRead
	writes, lists := 0, 0
	for _, qw := range ws {
		for id, evs := range qw.hist {
			hist[id] = evs
		}
		reads = append(reads, qw.reads...)
		writes += qw.writes
	}
	for _, s := range lat.perWorker {
		lists += len(s)
	}
	initial := map[int64][]int64{}
	for id := int64(1); id <= int64(p.Checked*p.CheckedRows); id++ {
		c := p.seedCategory(id)
		initial[c] = append(initial[c], id)
	}
	var lag time.Duration
	if v.cdc {
		lag = p.CDCWindow
	}
	h := newQHistory(hist, p.seedCategory, initial, lag)
	stale, checked := 0, 0
	for _, r := range reads {
		s, c := h.stale(r)
		if s {
			stale++
		}
		if c {
			checked++
		}
	}
	var inv int64
	for _, pr := range procs {
		if pr.query != nil {
			inv += pr.query.Stats().Invalidations
		}
	}
	sorted := lat.sorted()
	row.Set(MetricListReads, float64(lists))
	row.Set(MetricWrites, float64(writes))
	row.Set(MetricDBQueriesPerListRead, float64(dbReads.Load())/float64(max(lists, 1)))
	row.Set(MetricListP50, ms(quantile(sorted, 0.5)))
	row.Set(MetricListP99, ms(quantile(sorted, 0.99)))
	row.Set(MetricCheckedListReads, float64(checked))
	row.Set(MetricStaleListReads, float64(stale))
	row.Set(MetricInvalidationsPerWrite, float64(inv)/float64(max(writes, 1)))
	return row, nil
}

// warmQueryLists reads page 1 of every category once, from workers
// goroutines spread over the processes, before the timed phase: the run
// then measures a warm cache's steady state, not its first fills.
func warmQueryLists(ctx context.Context, db *gorm.DB, p QueryParams, v queryVariant, procs []*queryProc, workers int) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		pr := procs[w%len(procs)]
		wg.Go(func() {
			for c := int64(w + 1); c <= int64(p.Categories); c += int64(workers) {
				if _, _, err := listPage(ctx, db, p, v, pr, c); err != nil {
					errs <- fmt.Errorf("warm-up: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// seedQueryItems empties the table and fills it with p.Rows rows.
func seedQueryItems(ctx context.Context, db *gorm.DB, p QueryParams) error {
	db = db.WithContext(ctx)
	if err := db.Exec("DELETE FROM asidebench_query_items").Error; err != nil {
		return err
	}
	batch := make([]queryItem, 0, 1000)
	for id := int64(1); id <= int64(p.Rows); id++ {
		batch = append(batch, queryItem{ID: id, CategoryID: p.seedCategory(id), Price: id % 1000})
		if len(batch) == cap(batch) || id == int64(p.Rows) {
			if err := db.Create(&batch).Error; err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}

func newQueryWorker(p QueryParams, w, workers int) *queryWorker {
	rnd := rand.New(rand.NewPCG(uint64(w)+1, 0x9e3779b9))
	qw := &queryWorker{w: w, rnd: rnd, zipf: rand.NewZipf(rnd, p.ZipfS, 1, uint64(p.Categories-1)),
		cat: map[int64]int64{}, pos: map[int64]int{}, hist: map[int64][]qEvent{}}
	n := int64(workers)
	first := int64(w)
	if first == 0 {
		first = n
	}
	for id := first; id <= int64(p.Rows); id += n {
		qw.add(id, p.seedCategory(id), p)
	}
	// New ids: above Rows, still ≡ w modulo n.
	qw.nextID = int64(p.Rows) + 1 + ((int64(w)-int64(p.Rows)-1)%n+n)%n
	return qw
}

func (qw *queryWorker) add(id, c int64, p QueryParams) {
	qw.cat[id] = c
	qw.pos[id] = len(qw.ids)
	qw.ids = append(qw.ids, id)
	if c <= int64(p.Checked) {
		qw.hot = append(qw.hot, id)
	}
}

func (qw *queryWorker) remove(id int64) {
	i := qw.pos[id]
	last := qw.ids[len(qw.ids)-1]
	qw.ids[i], qw.pos[last] = last, i
	qw.ids = qw.ids[:len(qw.ids)-1]
	delete(qw.pos, id)
	delete(qw.cat, id)
}

// run lists and writes until deadline, and past it until the worker has
// made at least one write and one read of a checked category: on a
// starved machine a short run could otherwise end with none, and show
// nothing of what the scenario measures.
func (qw *queryWorker) run(ctx context.Context, db *gorm.DB, p QueryParams, v queryVariant, pr *queryProc, dbReads *atomic.Int64, lat *latencies, deadline time.Time) error {
	rctx := withListCounter(ctx, dbReads)
	for time.Now().Before(deadline) || qw.writes == 0 || len(qw.reads) == 0 {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if qw.rnd.Float64() < p.WriteShare {
			if err := qw.write(ctx, db, p, v, pr); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			continue
		}
		c := int64(qw.zipf.Uint64()) + 1
		start := time.Now()
		ids, more, err := listPage(rctx, db, p, v, pr, c)
		end := time.Now()
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		lat.add(qw.w, end.Sub(start))
		if c <= int64(p.Checked) {
			qw.reads = append(qw.reads, qRead{cat: c, start: start, end: end, ids: ids, more: more})
		}
	}
	return nil
}

// listPage reads page 1 of category c the variant's way: the ids in
// order, and whether more rows follow.
func listPage(ctx context.Context, db *gorm.DB, p QueryParams, v queryVariant, pr *queryProc, c int64) ([]int64, bool, error) {
	switch v.name {
	case "sql":
		var rows []queryItem
		if err := db.WithContext(ctx).Where("category_id = ?", c).Order("id").Limit(p.PageSize + 1).Find(&rows).Error; err != nil {
			return nil, false, err
		}
		more := len(rows) > p.PageSize
		rows = rows[:min(len(rows), p.PageSize)]
		ids := make([]int64, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		return ids, more, nil
	case "ttl_lists":
		return ttlListPage(ctx, db, p, pr, c)
	}
	rows, next, err := pr.query.List(ctx, repo.Page{Size: p.PageSize}, c)
	if err != nil {
		return nil, false, err
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids, next != "", nil
}

// ttlList is ttl_lists' cached page: its ids and whether more follow.
type ttlList struct {
	IDs  []int64 `json:"i"`
	More bool    `json:"m"`
}

// ttlListPage is the hand-rolled list cache: the page's ids under a key
// with a TTL, filled from a SELECT on a miss, never invalidated; the rows
// through repo.GetMany.
func ttlListPage(ctx context.Context, db *gorm.DB, p QueryParams, pr *queryProc, c int64) ([]int64, bool, error) {
	key := pr.ns + ":qlist:" + strconv.FormatInt(c, 10)
	var l ttlList
	b, err := pr.lists.Get(ctx, key).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		var ids []int64
		if err := db.WithContext(ctx).Model(&queryItem{}).Where("category_id = ?", c).Order("id").Limit(p.PageSize+1).Pluck("id", &ids).Error; err != nil {
			return nil, false, err
		}
		l = ttlList{IDs: ids[:min(len(ids), p.PageSize)], More: len(ids) > p.PageSize}
		enc, _ := json.Marshal(l)
		if err := pr.lists.Set(ctx, key, enc, p.ListTTL).Err(); err != nil {
			return nil, false, err
		}
	case err != nil:
		return nil, false, err
	default:
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, false, err
		}
	}
	got, err := pr.repo.GetMany(ctx, l.IDs)
	if err != nil && !errors.Is(err, repo.ErrNotFound) {
		return nil, false, err
	}
	ids := make([]int64, 0, len(l.IDs))
	for _, id := range l.IDs {
		if _, ok := got[id]; ok {
			ids = append(ids, id)
		}
	}
	return ids, l.More, nil
}
