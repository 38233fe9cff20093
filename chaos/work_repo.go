package chaos

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"

	"github.com/asidekit/asidekit/repo"
)

// keyState serialises the writes of one row, so that versions grow in the
// order the writes happened: version order is real-time order.
type keyState struct {
	mu  sync.Mutex // held for the whole write
	ver int64      // the last version handed out, guarded by mu
}

// repoWorker is one goroutine of the repository workload.
type repoWorker struct {
	run  *run
	p    *process
	r    *rand.Rand
	keys int // per strategy
}

func (w *repoWorker) loop(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		si := w.r.IntN(len(strategies))
		id := w.pick(si)
		switch n := w.r.IntN(100); {
		case n < 45:
			w.get(si, id)
		case n < 55:
			w.run.readBy(w.p.id, w.p.items[si], id)
		case n < 67:
			w.getMany(si)
		case n < 82:
			w.write(OpUpdate, si, id)
		case n < 90:
			w.write(OpPut, si, id)
		case n < 95:
			w.write(OpCreate, si, id)
		default:
			w.write(OpDelete, si, id)
		}
	}
}

// pick chooses a row of strategy si: half the time its hot first row.
func (w *repoWorker) pick(si int) int64 {
	if w.r.IntN(2) == 0 {
		return itemID(si, 0)
	}
	return itemID(si, w.r.IntN(w.keys))
}

func (w *repoWorker) get(si int, id int64) {
	w.run.read(w.p.id, w.p.items[si], id)
}

// read records one Get of id through r.
func (rn *run) read(proc int, r *repo.Repository[Item, int64], id int64) {
	rn.readOne(proc, OpGet, id, func(ctx context.Context) (Item, error) { return r.Get(ctx, id) })
}

// readBy records one GetBy of id's slug through r.
func (rn *run) readBy(proc int, r *repo.Repository[Item, int64], id int64) {
	rn.readOne(proc, OpGetBy, id, func(ctx context.Context) (Item, error) { return r.GetBy(ctx, "slug", slugOf(id)) })
}

// readOne records one read of row id, of kind, made by get.
func (rn *run) readOne(proc int, kind Kind, id int64, get func(context.Context) (Item, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	op := Op{Proc: proc, Kind: kind, Keys: []int64{id}, Start: rn.clk.now()}
	v, err := get(ctx)
	op.End = rn.clk.now()
	switch {
	case err == nil:
		op.Versions = []int64{v.Version}
	case errors.Is(err, repo.ErrNotFound):
		op.Versions, err = []int64{Absent}, nil
	}
	rn.hist.add(op, err)
}

func (w *repoWorker) getMany(si int) {
	w.run.readMany(w.p.id, w.p.items[si], []int64{w.pick(si), w.pick(si), w.pick(si)})
}

// readMany records one GetMany of ids through r.
func (rn *run) readMany(proc int, r *repo.Repository[Item, int64], ids []int64) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	op := Op{Proc: proc, Kind: OpGetMany, Keys: ids, Start: rn.clk.now()}
	got, err := r.GetMany(ctx, ids)
	op.End = rn.clk.now()
	if err == nil {
		for _, id := range ids {
			v, ok := got[id]
			if !ok {
				v.Version = Absent
			}
			op.Versions = append(op.Versions, v.Version)
		}
	}
	rn.hist.add(op, err)
}

func (w *repoWorker) write(kind Kind, si int, id int64) {
	w.run.write(w.p.id, w.p.items[si], kind, id)
}

// write records one write of id through r, with the row's next version.
func (rn *run) write(proc int, r *repo.Repository[Item, int64], kind Kind, id int64) error {
	ks := rn.keys[id]
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.ver++
	v := newItem(id, ks.ver)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	op := Op{Proc: proc, Kind: kind, Keys: []int64{id}, Versions: []int64{v.Version}, Start: rn.clk.now()}
	var err error
	switch kind {
	case OpUpdate:
		err = r.Update(ctx, &v)
	case OpPut:
		err = r.Put(ctx, &v)
	case OpCreate:
		err = r.Create(ctx, &v)
	case OpDelete:
		err = r.Delete(ctx, id)
	}
	op.End = rn.clk.now()
	op.Applied = applied(err)
	rn.hist.add(op, err)
	return err
}
