package chaos

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
)

// The CDC phase's workload. Every process's writers take a row (writes of
// a row are serialised, as in the main run, so that version order is
// real-time order) and write it one of three ways:
//
//   - plain SQL (cdc_sql.go): INSERT, UPDATE moving the row to another
//     group with a new time and rank, soft delete, undelete, DELETE; the
//     writer then takes the log's position and waits for its process's
//     Invalidator (holder or stand-by) to have applied it: the write ends
//     when Wait returns;
//   - through its process's write-through repository: Update or Put,
//     ending when the call returns;
//   - a pair: an Update through the last process's repository (its cache
//     link slowed, so that its write-through store comes late) and, at
//     once, a plain-SQL UPDATE of the same row through the writer's
//     process; half of the time the SQL waits until the repository's
//     COMMIT is visible, so that it commits right after it and the
//     Invalidator applies it before the repository's store. The pair ends
//     when both returned and the Invalidator applied both (Position, then
//     Wait); its two writes end then.
//
// Readers Get rows and list groups through both queries; after each pair
// every process reads the row at once.

// cdcWork is the phase's workload state across processes.
type cdcWork struct {
	run   *run
	db    *gorm.DB // the checker's handle on the phase's database
	procs []*cdcProc
	keys  map[int64]*cdcKey
	pairs atomic.Int64
	t0    time.Time // the base of the rows' times
}

// cdcKey is one row's writer state: writes hold mu throughout.
type cdcKey struct {
	mu  sync.Mutex
	ver int64    // the last version handed out
	row *CDCItem // the row as stored after the last write; nil: absent (never inserted, or deleted)
}

// seed inserts the first cdcLive rows at version 1, before any slot
// exists (every cache is empty), and records them as writes.
func (w *cdcWork) seed(ctx context.Context) error {
	w.t0 = time.Now().UTC().Truncate(time.Second)
	var rows []CDCItem
	for j := range cdcRows {
		id := cdcBase + int64(j)
		w.keys[id] = &cdcKey{}
		if j < cdcLive {
			rows = append(rows, CDCItem{ID: id, Grp: int64(j%cdcGroups + 1), Touched: w.t0.Add(time.Duration(j) * time.Minute),
				Rank: int64(j * 10), Version: 1})
		}
	}
	start := w.run.clk.now()
	if err := w.db.WithContext(ctx).Create(&rows).Error; err != nil {
		return err
	}
	end := w.run.clk.now()
	for _, r := range rows {
		ks := w.keys[r.ID]
		ks.ver, ks.row = 1, &r
		op := Op{Proc: -1, Kind: OpCreate, Token: "seed", Keys: []int64{r.ID}, Start: start, End: end, Applied: Yes}
		w.run.hist.add(withState(op, r.Version, &r), nil)
	}
	return nil
}

// withState is op (a write) with the row's state after it: its version,
// its group (Value; 0 when the row is absent or soft-deleted: in no list)
// and its order values (Sort). A write that leaves the row absent is a
// delete to the reads check.
func withState(op Op, ver int64, row *CDCItem) Op {
	op.Versions = []int64{ver}
	if row == nil || row.DeletedAt.Valid {
		op.Kind, op.Value, op.Sort = OpDelete, 0, nil
		return op
	}
	op.Value, op.Sort = row.Grp, []int64{row.Touched.UnixMicro(), row.Rank}
	return op
}

// play runs the workload for d, then waits until every change is applied
// and reads every row and every list through every process.
func (w *cdcWork) play(ctx context.Context, seed uint64, d time.Duration) error {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	g := w.run.cfg.Goroutines
	for _, p := range w.procs {
		nw := max(2, g) // writers wait for the Invalidator: more of them
		for k := range nw + max(1, g/2) {
			rng := rand.New(rand.NewPCG(seed, uint64(p.id*1000+k)))
			if k < nw {
				wg.Go(func() { w.writeLoop(p, rng, stop) })
			} else {
				wg.Go(func() { w.readLoop(p, rng, stop) })
			}
		}
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	close(stop)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, _, err := w.sync(w.procs[0]); err != nil {
		return err
	}
	for _, p := range w.procs {
		for id := range w.keys {
			w.get(p, id)
		}
		for grp := range int64(cdcGroups) {
			w.list(p, p.byTime, "time", grp+1)
			w.list(p, p.byRank, "rank", grp+1)
		}
	}
	return nil
}

// writeLoop writes rows as process p until stop: 45 % plain SQL, 30 %
// through the repository, 25 % pairs.
func (w *cdcWork) writeLoop(p *cdcProc, rng *rand.Rand, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		id := cdcBase + rng.Int64N(cdcRows)
		ks := w.keys[id]
		ks.mu.Lock()
		switch n := rng.IntN(100); {
		case n < 45 || ks.row == nil && n >= 75:
			w.sqlWrite(p, rng, ks, id)
		case n < 75:
			w.repoWrite(p, rng, ks, id)
		default:
			w.pair(p, rng, ks, id)
		}
		ks.mu.Unlock()
	}
}

// readLoop reads as process p until stop: half Gets, half lists.
func (w *cdcWork) readLoop(p *cdcProc, rng *rand.Rand, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		grp := rng.Int64N(cdcGroups) + 1
		switch rng.IntN(4) {
		case 0, 1:
			w.get(p, cdcBase+rng.Int64N(cdcRows))
		case 2:
			w.list(p, p.byTime, "time", grp)
		default:
			w.list(p, p.byRank, "rank", grp)
		}
	}
}

// next draws a row's next place: a group, a time (whole microseconds, in
// UTC, as PostgreSQL keeps it) and a rank.
func (w *cdcWork) next(rng *rand.Rand, id, ver int64) CDCItem {
	return CDCItem{ID: id, Grp: rng.Int64N(cdcGroups) + 1, Rank: rng.Int64N(1000), Version: ver,
		Touched: w.t0.Add(time.Duration(rng.Int64N(int64(time.Hour/time.Microsecond))) * time.Microsecond)}
}

// repoWrite writes row id through p's repository: an Update of a live
// row, else (and a third of the time) a Put, which inserts a deleted row
// and overwrites a soft-deleted one.
func (w *cdcWork) repoWrite(p *cdcProc, rng *rand.Rand, ks *cdcKey, id int64) {
	ks.ver++
	v := w.next(rng, id, ks.ver)
	kind := OpPut
	if ks.row != nil && !ks.row.DeletedAt.Valid && rng.IntN(3) > 0 {
		kind = OpUpdate
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	op := Op{Proc: p.id, Kind: kind, Token: "repo", Keys: []int64{id}, Start: w.run.clk.now()}
	var err error
	if kind == OpUpdate {
		err = p.items.Update(ctx, &v)
	} else {
		err = p.items.Put(ctx, &v)
	}
	op.End = w.run.clk.now()
	op.Applied = applied(err)
	w.run.hist.add(withState(op, v.Version, &v), err)
	w.reread(ks, id)
}

// pair writes row id (present, live or soft-deleted) twice at once: an
// Update through the last process's repository and a plain-SQL UPDATE
// through p's pool; then every process reads the row.
func (w *cdcWork) pair(p *cdcProc, rng *rand.Rand, ks *cdcKey, id int64) {
	if ks.row == nil {
		w.sqlWrite(p, rng, ks, id)
		return
	}
	w.pairs.Add(1)
	rv := ks.ver + 2 // the SQL's version is rv-1 before it, rv+1 after it (cdc_sql.go)
	ks.ver += 3
	v := w.next(rng, id, rv)
	slow := w.procs[len(w.procs)-1]
	committed := make(chan struct{})
	rop := Op{Proc: slow.id, Kind: OpUpdate, Token: "pair repo", Keys: []int64{id}}
	var rerr error
	go func() {
		defer close(committed)
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		rop.Start = w.run.clk.now()
		rerr = slow.items.Update(ctx, &v)
		rop.Applied = applied(rerr)
	}()
	if rng.IntN(2) == 0 {
		w.awaitVersion(id, rv, committed)
	}
	sop, ver, row, serr := w.sqlStmt(p, rng, ks, id, pairVersion(rv), true)
	<-committed
	_, end, err := w.sync(p)
	if err != nil && serr == nil && sop.Applied == Yes {
		sop.Applied, serr = Committed, err
	}
	if rop.Applied == Yes && err != nil {
		rop.Applied, rerr = Committed, err
	}
	rop.End, sop.End = end, end
	w.run.hist.add(withState(rop, v.Version, &v), rerr)
	w.run.hist.add(withState(sop, ver, row), serr)
	w.reread(ks, id)
	for _, q := range w.procs {
		w.get(q, id)
	}
}

// awaitVersion returns once row id is stored at version v, or done is
// closed: it aims the pair's SQL at the moment right after the
// repository's COMMIT (the check does not depend on it).
func (w *cdcWork) awaitVersion(id, v int64, done <-chan struct{}) {
	for {
		var cur int64
		err := w.db.Raw("SELECT version FROM chaos_cdc_items WHERE id = ?", id).Scan(&cur).Error
		if err != nil || cur == v {
			return
		}
		select {
		case <-done:
			return
		case <-time.After(time.Millisecond):
		}
	}
}

// sync waits until p's Invalidator applied every transaction committed
// so far; end is when it returned. The position is pg_current_wal_lsn()
// on p's pool, which Wait's doc offers beside Position: Position opens a
// connection of its own per call, 50 to 400 ms each on a loaded 2-core
// machine.
func (w *cdcWork) sync(p *cdcProc) (start, end time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start = w.run.clk.now()
	var s string
	var lsn cdc.LSN
	err = p.db.WithContext(ctx).Raw("SELECT pg_current_wal_lsn()::text").Scan(&s).Error
	if err == nil {
		err = lsn.Scan(s)
	}
	if err == nil {
		err = p.inv.Wait(ctx, lsn)
	}
	return start, w.run.clk.now(), err
}

// reread sets ks.row to the row as stored now (the row's writes are
// serialised: nothing else writes it meanwhile).
func (w *cdcWork) reread(ks *cdcKey, id int64) {
	var rows []CDCItem
	if err := w.db.Unscoped().Where("id = ?", id).Find(&rows).Error; err != nil {
		return // kept as it was: the next write finds out
	}
	ks.row = nil
	if len(rows) == 1 {
		ks.row = &rows[0]
	}
}

// get records one Get of id through p.
func (w *cdcWork) get(p *cdcProc, id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	op := Op{Proc: p.id, Kind: OpGet, Keys: []int64{id}, Start: w.run.clk.now()}
	v, err := p.items.Get(ctx, id)
	op.End = w.run.clk.now()
	switch {
	case err == nil:
		op.Versions = []int64{v.Version}
	case errors.Is(err, repo.ErrNotFound):
		op.Versions, err = []int64{Absent}, nil
	}
	w.run.hist.add(op, err)
}

// list records one List of group grp through q (which: "time" or
// "rank"), a page larger than any group.
func (w *cdcWork) list(p *cdcProc, q *repo.Query[CDCItem, int64], which string, grp int64) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	op := Op{Proc: p.id, Kind: OpList, Token: which, Value: grp, Start: w.run.clk.now()}
	rows, _, err := q.List(ctx, repo.Page{Size: listPageSize}, grp)
	op.End = w.run.clk.now()
	for _, r := range rows {
		op.Keys = append(op.Keys, r.ID)
	}
	w.run.hist.add(op, err)
}
