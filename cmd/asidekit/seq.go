package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/asidekit/asidekit/seqgen"
)

// seqReport is the answer of seq peek.
type seqReport struct {
	Biz        string `json:"biz"`
	Day        string `json:"day"`
	Key        string `json:"key"`
	Exists     bool   `json:"exists"`
	Last       int64  `json:"last"`
	Next       string `json:"next"`
	Mark       int64  `json:"redis_mark"`
	DBMark     int64  `json:"db_mark"`
	Lease      string `json:"lease,omitempty"`
	LeaseTTLMs int64  `json:"lease_ttl_ms,omitempty"`
}

// runSeq is seq peek NAME: a seqgen counter's state, issuing nothing.
func runSeq(r *runner, args []string) error {
	fs := r.flags("seq")
	tz := fs.String("tz", "Local", "the service's seqgen time `ZONE` (Options.Location), e.g. Asia/Shanghai")
	day := fs.String("day", "", "the `DATE` to look at, yyyy-mm-dd (default today in -tz)")
	prefix := fs.String("prefix", "", "the printed `PREFIX` of the biz (Options.Prefix; default the biz code)")
	width := fs.Int("width", 0, "the counter's `DIGITS` (Options.Width; default seqgen's 5)")
	pos, err := r.parse(fs, args, "peek NAME [-tz ZONE] [-day yyyy-mm-dd] [-prefix P]", 2, 2)
	if err != nil {
		return err
	}
	if pos[0] != "peek" {
		return usageErr("usage: asidekit seq peek NAME")
	}
	loc, err := time.LoadLocation(*tz)
	if err != nil {
		return usageErr("seq: -tz %q: %v", *tz, err)
	}
	at := time.Now()
	if *day != "" {
		if at, err = time.ParseInLocation("2006-01-02", *day, loc); err != nil {
			return usageErr("seq: -day %q: want yyyy-mm-dd", *day)
		}
		at = at.Add(12 * time.Hour)
	}
	cfg, err := r.config()
	if err != nil {
		return err
	}
	rdb, err := r.b.Redis(r.ctx)
	if err != nil {
		return err
	}
	db, err := r.b.DB(r.ctx)
	if err != nil {
		return err
	}
	o := &seqgen.Options{Namespace: cfg.Namespace, Location: loc, Width: *width}
	if *prefix != "" {
		p := *prefix
		o.Prefix = func(string) string { return p }
	}
	g, err := seqgen.New(rdb, db, o)
	if err != nil {
		return usageErr("seq: %v", err)
	}
	defer g.Close()
	p, err := g.Peek(r.ctx, pos[1], at)
	if err != nil {
		var pe *pgconn.PgError
		switch {
		case errors.Is(err, seqgen.ErrInvalid):
			return usageErr("%v", err)
		case errors.As(err, &pe) && pe.Code == "42P01":
			return usageErr("%v (the database has no seqgen table: schema.Migrate creates it)", err)
		}
		if isUnreachable(err) {
			return unreachable("PostgreSQL or Redis", err)
		}
		return err
	}
	rep := seqReport{Biz: p.Biz, Day: p.Day.Key, Key: p.Key, Exists: p.Exists, Last: p.Last, Next: p.Next,
		Mark: p.Mark, DBMark: p.DBMark, Lease: p.Lease, LeaseTTLMs: p.LeaseTTL.Milliseconds()}
	return r.output(rep, func(w io.Writer) {
		fmt.Fprintf(w, "%s %s  %s\n", rep.Biz, rep.Day, rep.Key)
		if rep.Exists {
			fmt.Fprintf(w, "  last     %d, next %s\n", rep.Last, rep.Next)
		} else {
			fmt.Fprintf(w, "  last     no counter in Redis (unused today, or lost: the next number is re-seeded above the db mark)\n")
		}
		fmt.Fprintf(w, "  marks    redis %d, db %d\n", rep.Mark, rep.DBMark)
		if rep.Lease != "" {
			fmt.Fprintf(w, "  lease    %s, %dms left (a segment is being reserved)\n", rep.Lease, rep.LeaseTTLMs)
		}
	})
}
