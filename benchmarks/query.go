package benchmarks

import (
	"context"
	"fmt"
	"time"
)

// Metrics of the query scenario.
const (
	MetricListReads             = "list_reads"
	MetricDBQueriesPerListRead  = "db_queries_per_list_read"
	MetricListP50               = "list_p50_ms"
	MetricListP99               = "list_p99_ms"
	MetricStaleListReads        = "stale_list_reads"
	MetricCheckedListReads      = "checked_list_reads"
	MetricInvalidationsPerWrite = "invalidations_per_write"
)

// QueryParams size the query scenario.
type QueryParams struct {
	// Instances is the number of simulated processes (one Redis client,
	// Cache and repository each), Goroutines the workers of each. A worker
	// lists a page of a category per operation and, at WriteShare of its
	// operations, writes one of its own rows instead.
	Instances  int `json:"instances"`
	Goroutines int `json:"goroutines"`
	// Categories and Rows are the table's sizes at the start. Categories
	// 1 … Checked (the most popular, Zipf(ZipfS) by rank) hold
	// CheckedRows rows each and are the ones the history check reads whole;
	// the other rows spread evenly over the other categories.
	Categories  int `json:"categories"`
	Rows        int `json:"rows"`
	Checked     int `json:"checked_categories"`
	CheckedRows int `json:"rows_per_checked_category"`
	// PageSize is the rows listed per read (page 1).
	PageSize int `json:"page_size"`
	// WriteShare is the share of operations that write: a price change,
	// a move to another category, an insert or a delete.
	WriteShare float64 `json:"write_share"`
	ZipfS      float64 `json:"zipf_s"`
	// Duration is how long each variant runs.
	Duration time.Duration `json:"duration"`
	// ListTTL is the TTL of ttl_lists' cached id lists.
	ListTTL time.Duration `json:"list_ttl"`
	// CDCWindow is how long after its COMMIT a plain-SQL write may still
	// be missing from asidekit_cdc's lists without counting as stale.
	CDCWindow time.Duration `json:"cdc_window"`
}

// DefaultQueryParams are the sizes: 1,000 categories, 100k rows.
func DefaultQueryParams() QueryParams {
	return QueryParams{Instances: 2, Goroutines: 4, Categories: 1000, Rows: 100_000, Checked: 50, CheckedRows: 10,
		PageSize: 100, WriteShare: 0.05, ZipfS: 1.1, Duration: 10 * time.Second, ListTTL: time.Minute, CDCWindow: time.Second}
}

// QuickQueryParams are much smaller: the scenario runs in well under 30 s.
func QuickQueryParams() QueryParams {
	p := DefaultQueryParams()
	p.Goroutines, p.Categories, p.Rows, p.Checked, p.Duration = 2, 200, 5000, 20, 2*time.Second
	return p
}

// EmbeddedQueryParams are QuickQueryParams scaled down for the embedded
// backend, where miniredis (one gopher-lua VM per script) and SQLite share
// the benchmark's CPU: a list read and a write still run hundreds of
// times per variant.
func EmbeddedQueryParams() QueryParams {
	p := QuickQueryParams()
	p.Categories, p.Rows, p.Checked, p.Duration = 100, 2000, 10, 1500*time.Millisecond
	return p
}

// TestQueryParams are the smallest sizes, for tests.
func TestQueryParams() QueryParams {
	p := QuickQueryParams()
	p.Categories, p.Rows, p.Checked, p.Duration = 50, 1000, 10, time.Second
	return p
}

// norm fills unset sizes with the smallest sensible values.
func (p QueryParams) norm() QueryParams {
	p.Instances, p.Goroutines = max(p.Instances, 1), max(p.Goroutines, 1)
	p.Checked, p.CheckedRows = max(p.Checked, 1), max(p.CheckedRows, 1)
	p.Categories = max(p.Categories, p.Checked+1)
	p.Rows = max(p.Rows, p.Checked*p.CheckedRows+1)
	p.PageSize = min(max(p.PageSize, 1), 1000)
	if p.ZipfS <= 1 {
		p.ZipfS = 1.1
	}
	if p.Duration <= 0 {
		p.Duration = time.Second
	}
	if p.ListTTL <= 0 {
		p.ListTTL = time.Minute
	}
	return p
}

// queryVariant is one way of serving the lists.
type queryVariant struct {
	name, notes string
	cdc         bool // writers use plain SQL, a repo/cdc Invalidator runs
}

var queryVariants = []queryVariant{
	{"sql", "no cache: SELECT … WHERE category_id = ? ORDER BY id LIMIT n per read; plain-SQL writes", false},
	{"ttl_lists", "page ids cached in Redis with a TTL, no invalidation, rows through repo.GetMany (Mutex); writes through repo", false},
	{"asidekit", "repo.NewQuery(by category, ORDER BY id).List, rows and lists Mutex (one load per miss across the processes); writes through repo, which patch the lists and store the rows (Options.WriteThrough)", false},
	{"asidekit_cdc", "repo.NewQuery List; plain-SQL writes seen through a repo/cdc Invalidator (REPLICA IDENTITY FULL), which stores their rows from the log (Options.LogStores)", true},
}

// RunQuery measures cached list queries: N processes × C workers list
// page 1 of Zipf-popular categories while ~WriteShare of the operations
// change rows (price, category move, insert, delete). Variants sql (no
// cache), ttl_lists (the hand-rolled way: ids cached with a TTL, no
// invalidation), asidekit (repo.NewQuery, writes through repo) and
// asidekit_cdc (plain-SQL writes, repo/cdc; PostgreSQL with
// wal_level=logical only, skipped with a note otherwise). Every read of a
// checked category is judged against the history of writes: a write
// completed before the read began must be reflected.
func RunQuery(ctx context.Context, env *Env, p QueryParams) (Result, error) {
	p = p.norm()
	res := Result{Scenario: "query", Backend: env.Backend, Params: paramsMap(p)}
	level := ""
	if !env.EmbeddedDB {
		if err := env.DB.WithContext(ctx).Raw("SHOW wal_level").Scan(&level).Error; err != nil {
			return res, err
		}
	}
	if err := env.DB.WithContext(ctx).AutoMigrate(&queryItem{}); err != nil {
		return res, err
	}
	if err := registerListCounter(env.DB); err != nil {
		return res, err
	}
	for _, v := range queryVariants {
		if v.cdc && level != "logical" {
			why := "the embedded backend has no WAL stream"
			if !env.EmbeddedDB {
				why = "wal_level is " + level + ", not logical"
			}
			res.Notes = append(res.Notes, fmt.Sprintf("%s: skipped: %s", v.name, why))
			continue
		}
		row, err := runQueryVariant(ctx, env, p, v)
		if err != nil {
			return res, fmt.Errorf("query: %s: %w", v.name, err)
		}
		row.Notes = v.notes
		res.Rows = append(res.Rows, row)
	}
	res.Notes = append(res.Notes,
		"stale_list_reads: reads of page 1 of a checked category (read whole) missing a write completed before the read began; writes concurrent with a read count either way",
		"db_queries_per_list_read: SQL statements issued on behalf of list reads (writes excluded), after a warm-up reading every category once",
		"writes: half pick a row of a checked (most popular) category; moves and inserts go to a Zipf-chosen category, so most writes invalidate a list read right after")
	if res.Row("asidekit_cdc") != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("asidekit_cdc: a write counts as completed %v after its COMMIT (the CDC window)", p.CDCWindow))
	}
	return res, nil
}
