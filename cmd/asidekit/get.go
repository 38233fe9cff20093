package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
)

// cached is what Redis holds for an id (cacheaside.Entity.Peek).
type cached struct {
	Key        string          `json:"key"`
	State      string          `json:"state"`
	Value      json.RawMessage `json:"value,omitempty"`
	Expiry     *time.Time      `json:"expiry,omitempty"`
	Expired    bool            `json:"expired,omitempty"`
	TTLMillis  int64           `json:"ttl_ms,omitempty"`
	Version    string          `json:"version,omitempty"`
	Lease      string          `json:"lease,omitempty"`
	LeaseTTLMs int64           `json:"lease_ttl_ms,omitempty"`

	state cacheaside.PeekState
	raw   []byte // the whole entry, to tell whether two peeks saw one store
}

// idReport is the answer of get (and the row part of getby).
type idReport struct {
	Entity  string      `json:"entity"`
	ID      string      `json:"id"`
	Redis   cached      `json:"redis"`
	DB      dbRow       `json:"db"`
	Agree   bool        `json:"agree"`
	Kind    string      `json:"kind,omitempty"` // of disagreement: stale, ghost, false not-found, corrupt
	Verdict string      `json:"verdict"`
	Compare *comparison `json:"compare,omitempty"`
}

// Kinds of disagreement.
const (
	kindStale         = "stale"           // a cached row that differs from the database's
	kindGhost         = "ghost"           // a cached row the database does not have
	kindFalseNotFound = "false not-found" // a cached "not found" for a row that exists
	kindCorrupt       = "corrupt"         // an entry of another format
	kindMapping       = "divergent mapping"
)

func runGet(r *runner, args []string) error {
	fs := r.flags("get")
	pos, err := r.parse(fs, args, "ENTITY ID", 2, 2)
	if err != nil {
		return err
	}
	e, err := r.entityArg(pos[0])
	if err != nil {
		return err
	}
	id := pos[1]
	if err := r.checkIDs(e, e.Name, "id", id); err != nil {
		return err
	}
	db, err := r.b.DB(r.ctx)
	if err != nil {
		return err
	}
	row, err := readRow(r.ctx, db, e, e.Key, id)
	if err != nil {
		return err
	}
	rep, err := r.inspectID(e, id, row)
	if err != nil {
		return err
	}
	if err := r.output(rep, func(w io.Writer) { rep.print(w) }); err != nil {
		return err
	}
	if !rep.Agree {
		return errProblem
	}
	return nil
}

// entityArg loads the config and finds the entity.
func (r *runner) entityArg(name string) (*EntityConfig, error) {
	cfg, err := r.config()
	if err != nil {
		return nil, err
	}
	return cfg.entity(name)
}

// checkIDs refuses ids that cannot name an entry of entity name of e
// (empty, too long: cacheaside.Entity.Key) without contacting a server;
// what says what they are ("id", a column) in the message.
func (r *runner) checkIDs(e *EntityConfig, name, what string, ids ...string) error {
	ent, err := r.b.entityOf(r.ctx, e, name, false)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := ent.Key(id); err != nil {
			return usageErr("%s: bad %s %q: %v", e.Name, what, id, err)
		}
	}
	return nil
}

// peek reads what Redis holds for id in entity name of e.
func (r *runner) peek(e *EntityConfig, name, id string) (cached, error) {
	ent, err := r.b.entity(r.ctx, e, name)
	if err != nil {
		return cached{}, err
	}
	p, err := ent.Peek(r.ctx, id)
	if err != nil {
		if errors.Is(err, cacheaside.ErrInvalid) {
			return cached{}, usageErr("%s: bad id %q: %v", name, id, err)
		}
		return cached{}, unreachable("Redis", err)
	}
	c := cached{Key: p.Key, State: p.State.String(), Version: p.Version, Lease: p.Lease,
		LeaseTTLMs: p.LeaseTTL.Milliseconds(), TTLMillis: p.TTL.Milliseconds(), state: p.State, raw: p.Raw}
	if !p.Expiry.IsZero() {
		exp := p.Expiry
		c.Expiry, c.Expired = &exp, time.Now().After(exp)
	}
	if p.State == cacheaside.PeekValue {
		if c.Value, err = payloadJSON(e.Codec, p.Value); err != nil {
			return cached{}, fmt.Errorf("%s %q: %w", name, id, err)
		}
	}
	return c, nil
}

// inspectID peeks id's entry and judges it against row.
func (r *runner) inspectID(e *EntityConfig, id string, row dbRow) (*idReport, error) {
	c, err := r.peek(e, e.Name, id)
	if err != nil {
		return nil, err
	}
	return judge(e, id, c, row)
}

// judge compares what Redis holds for id with the row.
func judge(e *EntityConfig, id string, c cached, row dbRow) (*idReport, error) {
	rep := &idReport{Entity: e.Name, ID: id, Redis: c, DB: row}
	switch c.state {
	case cacheaside.PeekAbsent, cacheaside.PeekLeaseOnly:
		rep.Agree, rep.Verdict = true, "not cached"
	case cacheaside.PeekCorrupt:
		rep.Kind, rep.Verdict = kindCorrupt, "corrupt entry (not this library's format, or another codec's); a Get would delete it"
	case cacheaside.PeekNotFound:
		if row.Found {
			rep.Kind, rep.Verdict = kindFalseNotFound, "disagree: Redis caches \"not found\", the database has the row"
		} else {
			rep.Agree, rep.Verdict = true, "agree: not found in either"
		}
	case cacheaside.PeekValue:
		if !row.Found {
			rep.Kind, rep.Verdict = kindGhost, "disagree: Redis caches a row the database does not have"
			break
		}
		cmp, err := compareDocs(c.Value, row.Row)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", e.Name, id, err)
		}
		rep.Compare = &cmp
		if !cmp.Agree {
			rep.Kind = kindStale
		}
		switch {
		case cmp.Agree:
			rep.Agree, rep.Verdict = true, "agree"
		case cmp.Compared == 0:
			rep.Verdict = "disagree: no field of the cached value matches a column (is the entity's table right?)"
		default:
			rep.Verdict = fmt.Sprintf("disagree: %d of %d fields differ", len(cmp.Differ), cmp.Compared)
		}
	}
	return rep, nil
}

func (rep *idReport) print(w io.Writer) {
	fmt.Fprintf(w, "%s %s\n", rep.Entity, rep.ID)
	rep.Redis.print(w, "redis")
	switch {
	case rep.DB.SoftDeleted:
		fmt.Fprintf(w, "  %-8s soft-deleted: %s\n", "db", compact(rep.DB.Row))
	case rep.DB.Found:
		fmt.Fprintf(w, "  %-8s %s\n", "db", compact(rep.DB.Row))
	default:
		fmt.Fprintf(w, "  %-8s not found\n", "db")
	}
	fmt.Fprintf(w, "  %-8s %s\n", "verdict", rep.Verdict)
	if c := rep.Compare; c != nil {
		if len(c.Differ) > 0 {
			fmt.Fprintf(w, "  %-8s %v\n", "differ", c.Differ)
		}
		if len(c.OnlyInCache)+len(c.OnlyInDB) > 0 {
			fmt.Fprintf(w, "  %-8s cache only %v, db only %v\n", "unjudged", c.OnlyInCache, c.OnlyInDB)
		}
	}
}

func (c *cached) print(w io.Writer, label string) {
	fmt.Fprintf(w, "  %-8s %s  %s", label, c.Key, c.State)
	if c.Expiry != nil {
		if c.Expired {
			fmt.Fprintf(w, ", logically expired %s ago", time.Since(*c.Expiry).Round(time.Second))
		} else {
			fmt.Fprintf(w, ", fresh for %s", time.Until(*c.Expiry).Round(time.Second))
		}
	}
	if c.TTLMillis > 0 {
		fmt.Fprintf(w, ", ttl %s", (time.Duration(c.TTLMillis) * time.Millisecond).Round(time.Second))
	}
	if c.Version != "" {
		fmt.Fprintf(w, ", version %s", c.Version)
	}
	if c.Lease != "" {
		fmt.Fprintf(w, ", lease held by %s for %dms", c.Lease, c.LeaseTTLMs)
	}
	fmt.Fprintln(w)
	if c.Value != nil {
		fmt.Fprintf(w, "  %-8s %s\n", "", compact(c.Value))
	}
}

// compact returns a JSON document on one line.
func compact(b json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}
