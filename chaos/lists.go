package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/repo"
)

// The list workload: a worker per process lists the rows of a group
// through a cached query (repo.NewQuery) and moves, creates and deletes
// rows, on a table of its own; check_lists.go judges the list reads.

// Operation kinds of the list workload.
const (
	OpList      Kind = "list"      // one List of a group: Keys are the ids returned, Value the group
	OpListWrite Kind = "listwrite" // one write of a listed row: Value is its group after (0: deleted)
)

// Sizes of the list workload.
const (
	listGroups   = 3  // groups per strategy
	listRows     = 12 // rows per strategy at the start (ids up to listMaxRows)
	listMaxRows  = 16 // ids per strategy the workload may create
	listPageSize = 50 // larger than any group: a page is the whole list
)

// listStrategies are the strategies of the lists' query and rows: None
// (a load per miss) and Mutex (a lease across processes).
var listStrategies = []cacheaside.Strategy{cacheaside.None, cacheaside.Mutex}

// ListItem is the row the list workload reads and writes: a member of
// group Grp.
type ListItem struct {
	ID      int64 `gorm:"primaryKey;autoIncrement:false" json:"id"`
	Grp     int64 `gorm:"not null;index" json:"grp"`
	Version int64 `gorm:"not null" json:"version"`
}

// TableName is the table of ListItem.
func (ListItem) TableName() string { return "chaos_list_items" }

// listID is the id of row j of list strategy si; listGroup its group g
// (1 … listGroups). Ids and groups of strategies do not overlap, so each
// strategy's repository alone writes the rows its query lists.
func listID(si, j int) int64    { return int64(20_000 + si*100 + j + 1) }
func listGroup(si, g int) int64 { return int64(si*10 + g) }

// listWorkload is the list workload's state across processes.
type listWorkload struct {
	// repos and queries are per process, per list strategy.
	repos   [][]*repo.Repository[ListItem, int64]
	queries [][]*repo.Query[ListItem, int64]
	keys    map[int64]*listKey // serialises each row's writes
}

// listKey is one row's writer state: writes hold mu throughout, so that
// version order is real-time order.
type listKey struct {
	mu  sync.Mutex
	ver int64
	grp int64 // the group after the last write that may have happened (0: none)
}

// newListWorkload creates the table, seeds it (recording the seed as
// writes) and declares each process's repositories and queries.
func newListWorkload(ctx context.Context, rn *run) (*listWorkload, error) {
	db := rn.env.db.WithContext(ctx)
	if err := db.AutoMigrate(&ListItem{}); err != nil {
		return nil, err
	}
	lw := &listWorkload{keys: map[int64]*listKey{}}
	var rows []ListItem
	for si := range listStrategies {
		for j := range listMaxRows {
			id := listID(si, j)
			lw.keys[id] = &listKey{}
			if j < listRows {
				rows = append(rows, ListItem{ID: id, Grp: listGroup(si, j%listGroups+1), Version: 1})
			}
		}
	}
	start := rn.clk.now()
	if err := db.Create(&rows).Error; err != nil {
		return nil, err
	}
	end := rn.clk.now()
	for _, r := range rows {
		lw.keys[r.ID].ver, lw.keys[r.ID].grp = 1, r.Grp
		rn.hist.add(Op{Proc: -1, Kind: OpListWrite, Keys: []int64{r.ID}, Versions: []int64{1}, Value: r.Grp,
			Token: "seed", Start: start, End: end, Applied: Yes}, nil)
	}
	for _, p := range rn.procs {
		var rs []*repo.Repository[ListItem, int64]
		var qs []*repo.Query[ListItem, int64]
		for _, s := range listStrategies {
			r, err := repo.New[ListItem, int64](p.db, p.cache, &repo.Options{Name: entityName("lists", s), Policy: policy(s), AfterCommitErrors: true, WriteThrough: true})
			if err != nil {
				return nil, err
			}
			q, err := repo.NewQuery(r, repo.QueryOf{Name: "by_grp", Where: []string{"grp"}, Order: "id", Policy: policy(s)})
			if err != nil {
				return nil, err
			}
			rs, qs = append(rs, r), append(qs, q)
		}
		lw.repos, lw.queries = append(lw.repos, rs), append(lw.queries, qs)
	}
	return lw, nil
}

// loop lists and writes as process p until stop: 60 % list reads, the
// rest moves to another group, creates and deletes.
func (lw *listWorkload) loop(rn *run, p *process, rnd *rand.Rand, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		si := rnd.IntN(len(listStrategies))
		switch n := rnd.IntN(100); {
		case n < 60:
			lw.list(rn, p, si, listGroup(si, rnd.IntN(listGroups)+1))
		case n < 85:
			lw.write(rn, p, si, listID(si, rnd.IntN(listMaxRows)), listGroup(si, rnd.IntN(listGroups)+1))
		default:
			lw.write(rn, p, si, listID(si, rnd.IntN(listMaxRows)), 0)
		}
	}
}

// list records one List of group g.
func (lw *listWorkload) list(rn *run, p *process, si int, g int64) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	op := Op{Proc: p.id, Kind: OpList, Value: g, Start: rn.clk.now()}
	rows, next, err := lw.queries[p.id][si].List(ctx, repo.Page{Size: listPageSize}, g)
	op.End = rn.clk.now()
	if err == nil && next != "" {
		err = fmt.Errorf("chaos: group %d does not fit a page of %d", g, listPageSize)
	}
	for _, r := range rows {
		op.Keys = append(op.Keys, r.ID)
	}
	rn.hist.add(op, err)
}

// write records one write of row id leaving it in group g (0: a delete):
// an Update when the row may exist, else a Create.
func (lw *listWorkload) write(rn *run, p *process, si int, id, g int64) {
	ks := lw.keys[id]
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.ver++
	v := ListItem{ID: id, Grp: g, Version: ks.ver}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	op := Op{Proc: p.id, Kind: OpListWrite, Keys: []int64{id}, Versions: []int64{v.Version}, Value: g, Start: rn.clk.now()}
	r := lw.repos[p.id][si]
	var err error
	switch {
	case g == 0:
		op.Token = "delete"
		err = r.Delete(ctx, id)
	case ks.grp == 0:
		op.Token = "create"
		err = r.Create(ctx, &v)
	default:
		op.Token = "update"
		err = r.Update(ctx, &v)
	}
	op.End = rn.clk.now()
	op.Applied = applied(err)
	switch {
	case op.Applied != No:
		ks.grp = g // when a Maybe write did not happen, the next write finds out
	case errKind(err) == "not_found":
		ks.grp = 0
	case errKind(err) == "duplicate":
		ks.grp = -1 // present, in a group this worker does not know
	}
	rn.hist.add(op, err)
}
