package chaos

import (
	"context"
	"strconv"
	"time"

	"github.com/asidekit/asidekit/guard/lock"
)

// pause spaces the calls of the guard workloads, and backs off after an
// error (a cut link fails at once), so that they do not spin.
func pause(stop <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}

// lockLoop obtains the lock, writes under its fence while it is valid,
// and releases it, until stop.
func (rn *run) lockLoop(p *process, stop <-chan struct{}) {
	for pause(stop, 5*time.Millisecond) {
		rn.holdOnce(p)
	}
}

// holdOnce records one acquisition. The holder relies on the lock from
// the end of a Refresh to that Refresh's start plus the ttl (the key was
// set to expire no earlier, on the server's clock): the hold's Start and
// End are that span, cut short by the Release.
func (rn *run) holdOnce(p *process) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	op := Op{Proc: p.id, Kind: OpHold, Start: rn.clk.now()}
	l, err := p.locker.Obtain(ctx, lockName, lockTTL, &lock.ObtainOptions{WaitTimeout: time.Second})
	if err != nil {
		op.End = rn.clk.now()
		rn.hist.add(op, err)
		return
	}
	op.Value, op.Token = l.Fence(), l.Token()
	rs := rn.clk.now()
	err = l.Refresh(ctx, lockTTL)
	op.Start, op.Until = rn.clk.now(), rs+lockTTL-time.Millisecond
	if err == nil {
		for i := 0; i < 2 && rn.clk.now() < op.Until; i++ {
			rn.fencedWrite(ctx, p, l.Fence(), l.Token())
		}
	}
	op.End = min(rn.clk.now(), op.Until)
	if rerr := l.Release(ctx); err == nil {
		err = rerr
	}
	if op.End < op.Start {
		op.End = op.Start // the validity ran out before the Refresh returned
	}
	rn.hist.add(op, err)
}

// fencedWrite writes the protected row with fence and token: the database
// accepts it when the fence is above the stored one, or equal with the
// same token.
func (rn *run) fencedWrite(ctx context.Context, p *process, fence int64, token string) {
	op := Op{Proc: p.id, Kind: OpFenced, Value: fence, Token: token, Start: rn.clk.now()}
	res := p.db.WithContext(ctx).Exec(
		`UPDATE chaos_fence SET fence = ?, token = ?, counter = counter + 1
		 WHERE id = 1 AND (fence < ? OR (fence = ? AND token = ?))`,
		fence, token, fence, fence, token)
	op.End = rn.clk.now()
	switch {
	case res.Error != nil:
		op.Applied = Maybe
	case res.RowsAffected == 1:
		op.Applied = Yes
	default:
		op.Applied = No
	}
	rn.hist.add(op, res.Error)
}

// serialLoop takes serial numbers until stop.
func (rn *run) serialLoop(p *process, stop <-chan struct{}) {
	for pause(stop, 2*time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		op := Op{Proc: p.id, Kind: OpSerial, Start: rn.clk.now()}
		s, err := p.gen.Next(ctx, serialBiz)
		op.End = rn.clk.now()
		cancel()
		if err == nil {
			op.Token = s
			op.Value, _ = strconv.ParseInt(s[len(s)-serialSize:], 10, 64)
		}
		rn.hist.add(op, err)
	}
}

// allowLoop asks the limiter until stop.
func (rn *run) allowLoop(p *process, stop <-chan struct{}) {
	for pause(stop, 3*time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		op := Op{Proc: p.id, Kind: OpAllow, Start: rn.clk.now()}
		res, err := p.limiter.Allow(ctx, limitKey)
		op.End = rn.clk.now()
		cancel()
		if err == nil && res.Allowed {
			op.Value = 1
		}
		rn.hist.add(op, err)
	}
}
