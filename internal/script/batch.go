package script

import (
	"context"
	"sync"
)

// A Batch joins the RunMany calls of a known number of concurrent
// participants (the effects that follow one commit) into one pipeline per
// client: one round trip per node instead of one per participant. A
// participant's RunMany under the Batch's context waits until every other
// participant is waiting in RunMany too or has finished (Done), then the
// calls go out together; each participant gets its own calls' replies and
// errors, as from a RunMany of its own. A RunMany after every participant
// finished runs at once. The cost: a participant's round trip waits for
// the slowest participant's work before it.
type Batch struct {
	ctx     context.Context
	mu      sync.Mutex
	open    int         // participants not yet Done
	waiting []*batchReq // RunMany calls not sent yet
}

type batchReq struct {
	c     Pipeliner
	calls []Call
	err   error
	done  chan struct{}
}

type batchKey struct{}

// NewBatch returns a Batch of n participants and the context they pass to
// RunMany to join it.
func NewBatch(ctx context.Context, n int) (*Batch, context.Context) {
	b := &Batch{open: n}
	b.ctx = context.WithValue(ctx, batchKey{}, b)
	return b, b.ctx
}

// Done reports that a participant has finished: it calls RunMany no more.
// Each participant calls it once. Done of a nil *Batch does nothing.
func (b *Batch) Done() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.open--
	reqs := b.ready()
	b.mu.Unlock()
	b.send(reqs)
}

// ready takes the waiting calls once every open participant waits (b.mu
// held).
func (b *Batch) ready() []*batchReq {
	if len(b.waiting) == 0 || len(b.waiting) < b.open {
		return nil
	}
	reqs := b.waiting
	b.waiting = nil
	return reqs
}

// run is RunMany under b.
func (b *Batch) run(c Pipeliner, calls []Call) error {
	r := &batchReq{c: c, calls: calls, done: make(chan struct{})}
	b.mu.Lock()
	if b.open <= 0 { // every participant finished: nothing to wait for
		b.mu.Unlock()
		return runMany(b.ctx, c, calls)
	}
	b.waiting = append(b.waiting, r)
	reqs := b.ready()
	b.mu.Unlock()
	b.send(reqs)
	<-r.done
	return r.err
}

// send runs reqs, one pipeline per client (concurrently when there are
// several), and wakes their callers.
func (b *Batch) send(reqs []*batchReq) {
	if len(reqs) == 0 {
		return
	}
	var order []Pipeliner
	byClient := map[Pipeliner][]*batchReq{}
	for _, r := range reqs {
		if _, ok := byClient[r.c]; !ok {
			order = append(order, r.c)
		}
		byClient[r.c] = append(byClient[r.c], r)
	}
	var wg sync.WaitGroup
	for _, c := range order[1:] {
		wg.Go(func() { b.sendTo(c, byClient[c]) })
	}
	b.sendTo(order[0], byClient[order[0]])
	wg.Wait()
	for _, r := range reqs {
		close(r.done)
	}
}

// sendTo runs the calls of reqs, all on client c, in one RunMany and
// gives each its replies and error: the first of its own calls' errors,
// or the pipeline's when it failed as a whole without a call carrying it.
func (b *Batch) sendTo(c Pipeliner, reqs []*batchReq) {
	var all []Call
	for _, r := range reqs {
		all = append(all, r.calls...)
	}
	err := runMany(b.ctx, c, all)
	carried := false
	for i := range all {
		if all[i].Cmd.Err() != nil {
			carried = true
			break
		}
	}
	k := 0
	for _, r := range reqs {
		for i := range r.calls {
			r.calls[i].Cmd = all[k].Cmd
			k++
			if r.err == nil {
				r.err = r.calls[i].Cmd.Err()
			}
		}
		if r.err == nil && !carried {
			r.err = err
		}
	}
}
