package benchmarks

import (
	"context"
	"fmt"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
)

// write changes one of the worker's rows (a price change, a move to a
// Zipf-chosen category, an insert or a delete) through the repository,
// or with plain SQL in the sql and cdc variants, and records it.
func (qw *queryWorker) write(ctx context.Context, db *gorm.DB, p QueryParams, v queryVariant, pr *queryProc) error {
	id := qw.pick(p)
	op := qw.rnd.Float64()
	if id == 0 || op >= 0.6 && op < 0.8 {
		id, op = qw.nextID, 0.7
		qw.nextID += int64(p.Instances * p.Goroutines)
	}
	it := queryItem{ID: id, CategoryID: qw.cat[id], Price: qw.rnd.Int64N(100_000)}
	viaRepo := v.name == "ttl_lists" || v.name == "asidekit"
	db = db.WithContext(ctx)
	start := time.Now()
	var err error
	switch {
	case op < 0.25: // price
		if viaRepo {
			err = pr.repo.Update(ctx, &it)
		} else {
			err = db.Exec("UPDATE asidebench_query_items SET price = ? WHERE id = ?", it.Price, id).Error
		}
	case op < 0.6: // move
		for it.CategoryID == qw.cat[id] {
			it.CategoryID = int64(qw.zipf.Uint64()) + 1
		}
		if viaRepo {
			err = pr.repo.Update(ctx, &it)
		} else {
			err = db.Exec("UPDATE asidebench_query_items SET category_id = ? WHERE id = ?", it.CategoryID, id).Error
		}
	case op < 0.8: // insert
		it.CategoryID = int64(qw.zipf.Uint64()) + 1
		if viaRepo {
			err = pr.repo.Create(ctx, &it)
		} else {
			err = db.Exec("INSERT INTO asidebench_query_items (id, category_id, price) VALUES (?, ?, ?)", id, it.CategoryID, it.Price).Error
		}
	default: // delete
		it.CategoryID = 0
		if viaRepo {
			err = pr.repo.Delete(ctx, id)
		} else {
			err = db.Exec("DELETE FROM asidebench_query_items WHERE id = ?", id).Error
		}
	}
	end := time.Now()
	if err != nil {
		return err
	}
	qw.writes++
	qw.hist[id] = append(qw.hist[id], qEvent{start: start, end: end, cat: it.CategoryID})
	switch _, had := qw.cat[id]; {
	case it.CategoryID == 0:
		qw.remove(id)
	case !had:
		qw.add(id, it.CategoryID, p)
	default:
		qw.cat[id] = it.CategoryID
		if it.CategoryID <= int64(p.Checked) {
			qw.hot = append(qw.hot, id)
		}
	}
	return nil
}

// pick returns an owned row: half the time one in a checked category
// (whose lists the history check reads), else any; 0 if none is left.
func (qw *queryWorker) pick(p QueryParams) int64 {
	for qw.rnd.IntN(2) == 0 && len(qw.hot) > 0 {
		i := qw.rnd.IntN(len(qw.hot))
		id := qw.hot[i]
		if c, ok := qw.cat[id]; ok && c <= int64(p.Checked) {
			return id
		}
		qw.hot[i] = qw.hot[len(qw.hot)-1]
		qw.hot = qw.hot[:len(qw.hot)-1]
	}
	if len(qw.ids) == 0 {
		return 0
	}
	return qw.ids[qw.rnd.IntN(len(qw.ids))]
}

// startQueryCDC gives the table REPLICA IDENTITY FULL (exact list
// invalidation), starts a repo/cdc Invalidator for r and waits until it
// streams. stop ends it and drops its slot.
func startQueryCDC(ctx context.Context, env *Env, r *repo.Repository[queryItem, int64]) (stop func(), err error) {
	if err := env.DB.WithContext(ctx).Exec("ALTER TABLE asidebench_query_items REPLICA IDENTITY FULL").Error; err != nil {
		return nil, err
	}
	d, ok := env.DB.Dialector.(*postgres.Dialector)
	if !ok {
		return nil, fmt.Errorf("cdc needs PostgreSQL, not %T", env.DB.Dialector)
	}
	inv, err := cdc.New(d.Config.DSN, &cdc.Options{Slot: "asidebench_q_" + randomHex(6), StandbyRetry: 100 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	if err := inv.Register(r); err != nil {
		return nil, err
	}
	if err := inv.Setup(ctx); err != nil {
		return nil, err
	}
	ictx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = inv.Run(ictx) }()
	stop = func() {
		cancel()
		<-done
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		for inv.Drop(dctx) != nil && dctx.Err() == nil {
			time.Sleep(50 * time.Millisecond) // the stopped walsender is exiting
		}
	}
	for deadline := time.Now().Add(time.Minute); !inv.Stats().Active; {
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("the Invalidator did not take the slot: %v", inv.Stats().LastError)
		}
		time.Sleep(time.Millisecond)
	}
	return stop, nil
}
