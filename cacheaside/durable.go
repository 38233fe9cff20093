package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/script"
	"github.com/asidekit/asidekit/internal/topology"
)

// Redis replication is asynchronous: a master acknowledges an invalidation
// before its replicas have it, and a replica promoted after its master
// dies (Cluster failover, Sentinel) may lack it. The old entry then comes
// back with a valid version token and is served until its TTL. With
// Options.ReplicaAcks, every invalidation (Invalidate, Set, and the
// background retries of both) is followed, on the same connection to the
// same master, by WAIT ReplicaAcks ReplicaAckTimeout; an invalidation that
// fewer replicas confirmed is treated as failed: it is queued for the
// retrier (reads of its id skip Redis until it is applied) and counted in
// Stats.ReplicaAckShortfalls.

// DefaultReplicaAckTimeout is the default of Options.ReplicaAckTimeout.
const DefaultReplicaAckTimeout = 100 * time.Millisecond

// errShortfall: the master applied a write but fewer replicas than
// Options.ReplicaAcks confirmed it within Options.ReplicaAckTimeout. Redis
// answered, so it charges nothing to the breaker.
var errShortfall = errors.New("cacheaside: too few replicas acknowledged the invalidation")

// acks is a Cache's replica acknowledgement rule; its zero value is off.
type acks struct {
	n  int   // Options.ReplicaAcks; 0 = off
	ms int64 // Options.ReplicaAckTimeout in milliseconds, >= 1
}

// newAcks checks the options against the client: WAIT blocks the
// connection for up to the timeout, which must end before the client's
// read timeout does.
func newAcks(client redis.UniversalClient, n int, timeout time.Duration) (acks, error) {
	if n < 0 {
		return acks{}, fmt.Errorf("%w: negative ReplicaAcks %d", ErrInvalid, n)
	}
	if n == 0 {
		return acks{}, nil
	}
	if timeout < 0 {
		return acks{}, fmt.Errorf("%w: negative ReplicaAckTimeout %v", ErrInvalid, timeout)
	}
	if timeout == 0 {
		timeout = DefaultReplicaAckTimeout
	}
	to, ok := topology.Of(client).Timeouts()
	if !ok {
		return acks{}, fmt.Errorf("%w: ReplicaAcks needs %s, not %T", ErrInvalid, topology.SupportedSentinel, client)
	}
	if read := to.Read; read > 0 && timeout >= read {
		return acks{}, fmt.Errorf("%w: ReplicaAckTimeout %v must be below the client's ReadTimeout %v", ErrInvalid, timeout, read)
	}
	ms := timeout.Milliseconds()
	if ms < 1 {
		ms = 1 // WAIT n 0 would block for ever
	}
	return acks{n: n, ms: ms}, nil
}

// writeOutcome of one write.lua call of writeAll.
type writeOutcome int8

const (
	writeApplied writeOutcome = iota // applied (and confirmed, with ReplicaAcks)
	writeFailed                      // not applied, or unknown: Redis failed
	writeShort                       // applied by the master, too few replicas confirmed it
)

// writeAll runs calls (write.lua) and reports each call's outcome. err is
// the first Redis failure, or, when every failure is a shortfall, an error
// matching errShortfall; nil when every call is applied.
func (c *Cache) writeAll(ctx context.Context, calls []script.Call) ([]writeOutcome, error) {
	out := make([]writeOutcome, len(calls))
	if c.acks.n == 0 {
		err := script.RunMany(ctx, c.client, calls)
		if err == nil {
			return out, nil
		}
		some := false
		for i := range calls {
			if calls[i].Cmd.Err() != nil {
				out[i], some = writeFailed, true
			}
		}
		if !some { // a failure that no call carries: count them all
			for i := range out {
				out[i] = writeFailed
			}
		}
		return out, err
	}

	groups, err := c.byNode(ctx, calls, out)
	errs := make([]error, len(groups))
	if len(groups) == 1 {
		errs[0] = c.writeNode(ctx, groups[0], calls, out)
	} else { // one round trip in all: the masters in parallel
		var wg sync.WaitGroup
		for gi := range groups {
			wg.Add(1)
			go func(g *nodeGroup, errp *error) {
				defer wg.Done()
				*errp = c.writeNode(ctx, g, calls, out)
			}(groups[gi], &errs[gi])
		}
		wg.Wait()
	}
	var shortErr error
	for _, e := range errs {
		switch {
		case e == nil:
		case errors.Is(e, errShortfall):
			if shortErr == nil {
				shortErr = e
			}
		case err == nil:
			err = e
		}
	}
	if err != nil {
		c.topo.Reload(ctx) // a node died or slots moved: route the retry anew
		return out, err
	}
	return out, shortErr
}

// nodeGroup is the calls of writeAll that go to one master.
type nodeGroup struct {
	node *redis.Client
	idx  []int // indexes into calls
}

// byNode groups calls by the master of their key (on a standalone client
// all of them, in order, on the one node; newAcks refused the clients
// without per-node access). A call whose master is unknown is marked
// failed (its Cmd carries the error); err is the first such error.
func (c *Cache) byNode(ctx context.Context, calls []script.Call, out []writeOutcome) (groups []*nodeGroup, err error) {
	by := make(map[*redis.Client]*nodeGroup)
	for i := range calls {
		node, nerr := c.topo.MasterForKey(ctx, calls[i].Keys[0])
		if nerr != nil {
			calls[i].Cmd = redis.NewCmd(ctx)
			calls[i].Cmd.SetErr(nerr)
			out[i] = writeFailed
			if err == nil {
				err = nerr
			}
			continue
		}
		g := by[node]
		if g == nil {
			g = &nodeGroup{node: node}
			by[node] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
	}
	return groups, err
}

// writeNode runs g's calls on its master in one pipeline (two if the
// master answers NOSCRIPT), each pipeline ending with WAIT on the same
// connection, so that WAIT counts the replicas that have these writes.
func (c *Cache) writeNode(ctx context.Context, g *nodeGroup, calls []script.Call, out []writeOutcome) error {
	mine := make([]script.Call, len(g.idx))
	for j, i := range g.idx {
		mine[j] = calls[i]
	}
	w := &ackWaiter{node: g.node, n: c.acks.n, ms: c.acks.ms}
	err := script.RunMany(ctx, w, mine)
	for j, i := range g.idx {
		calls[i].Cmd = mine[j].Cmd
	}
	got, werr := w.confirmed()
	if err != nil || werr != nil {
		// The master's replies are all there is: a call without an error
		// was applied, but its WAIT did not answer, so it is not confirmed.
		for _, i := range g.idx {
			out[i] = writeFailed
		}
		if err == nil {
			err = werr
		}
		return err
	}
	if got < int64(c.acks.n) {
		for _, i := range g.idx {
			out[i] = writeShort
		}
		return fmt.Errorf("%w: %d of %d replicas of %s within %dms", errShortfall, got, c.acks.n, g.node.Options().Addr, c.acks.ms)
	}
	return nil
}

// ackWaiter is a script.Pipeliner over one master whose pipelines end with
// WAIT n ms.
type ackWaiter struct {
	node  *redis.Client
	n     int
	ms    int64
	waits []*redis.Cmd // one per pipeline sent
}

func (w *ackWaiter) Pipeline() redis.Pipeliner {
	return &waitPipe{Pipeliner: w.node.Pipeline(), w: w}
}

// confirmed returns the fewest replicas any of the pipelines' WAITs
// counted: every pipeline's writes must be confirmed.
func (w *ackWaiter) confirmed() (int64, error) {
	least := int64(-1)
	for _, cmd := range w.waits {
		n, err := cmd.Int64()
		if err != nil {
			return 0, err
		}
		if least < 0 || n < least {
			least = n
		}
	}
	if least < 0 {
		return 0, errors.New("cacheaside: no WAIT was sent")
	}
	return least, nil
}

// waitPipe is a pipeline that sends WAIT after its other commands.
type waitPipe struct {
	redis.Pipeliner
	w *ackWaiter
}

func (p *waitPipe) Exec(ctx context.Context) ([]redis.Cmder, error) {
	p.w.waits = append(p.w.waits, p.Pipeliner.Do(ctx, "WAIT", p.w.n, p.w.ms))
	return p.Pipeliner.Exec(ctx)
}
