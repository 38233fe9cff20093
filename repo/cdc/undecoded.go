package cdc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/asidekit/asidekit/internal/rowchange"
)

// undecoded records a change of table applied with the safe superset of
// its work (see "Column types" in the package doc): derr is why the log's
// message could not be read whole (nil when it could), lost the columns
// the repository could not decode. It counts the change in
// Stats.Undecoded, records the error in Stats.LastError, and logs each
// table and column once per Invalidator.
func (inv *Invalidator) undecoded(table string, derr error, lost []rowchange.Undecoded) {
	errs := make([]error, 0, len(lost)+1)
	if derr != nil {
		errs = append(errs, derr)
		inv.warnOnce(table+"\x00", derr)
	}
	for _, u := range lost {
		err := fmt.Errorf("%w: %s: column %s: %w", ErrUndecoded, table, u.Column, u.Err)
		errs = append(errs, err)
		inv.warnOnce(table+"\x00"+u.Column, err)
	}
	inv.ctr.undecoded.Add(1)
	inv.ctr.record(errors.Join(errs...))
}

// warnOnce logs err as a warning, the first time key is seen.
func (inv *Invalidator) warnOnce(key string, err error) {
	if _, seen := inv.warned.LoadOrStore(key, true); !seen {
		slog.Warn("asidekit: cdc: a change could not be decoded; its cache work takes the safe path (wider invalidations)",
			"err", err)
	}
}

// unparsed handles a message that did not parse (the reader passes its
// error): it may be a change of any registered table, so each is
// invalidated whole, as by a TRUNCATE, with the transaction it belongs to
// (or at once outside of one).
func (a *applier) unparsed(ctx context.Context, err error) error {
	a.inv.warnOnce("\x00unparsed", err)
	a.inv.ctr.undecoded.Add(1)
	a.inv.ctr.record(err)
	a.recent.forgetAll()
	a.truncs = append(a.truncs, a.targets...)
	if a.inTxn {
		return nil
	}
	return a.apply(ctx)
}
