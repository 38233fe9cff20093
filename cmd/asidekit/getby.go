package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/asidekit/asidekit/cacheaside"
)

// byReport is the answer of getby: the value → id mapping, then the row.
type byReport struct {
	Entity  string    `json:"entity"`
	Column  string    `json:"column"`
	Value   string    `json:"value"`
	Mapping cached    `json:"mapping"`
	MapsTo  string    `json:"maps_to,omitempty"`
	Agree   bool      `json:"agree"`
	Verdict string    `json:"verdict"`
	Row     *idReport `json:"row,omitempty"`
}

func runGetBy(r *runner, args []string) error {
	fs := r.flags("getby")
	pos, err := r.parse(fs, args, "ENTITY COLUMN VALUE", 3, 3)
	if err != nil {
		return err
	}
	e, err := r.entityArg(pos[0])
	if err != nil {
		return err
	}
	col, val := pos[1], pos[2]
	if !e.unique(col) {
		return usageErr("%s: %q is not one of its unique columns %v", e.Name, col, e.Unique)
	}
	if err := r.checkIDs(e, e.lookupName(col), col, val); err != nil {
		return err
	}
	db, err := r.b.DB(r.ctx)
	if err != nil {
		return err
	}
	row, err := readRow(r.ctx, db, e, col, val)
	if err != nil {
		return err
	}
	m, err := r.peek(e, e.lookupName(col), val)
	if err != nil {
		return err
	}
	rep := judgeMapping(e, col, val, m, row)
	// The row GetBy would return: the database's, else the mapped one.
	id := row.ID
	if id == "" {
		id = rep.MapsTo
	}
	if id != "" {
		idRow := row
		if !row.Found && !row.SoftDeleted {
			if idRow, err = readRow(r.ctx, db, e, e.Key, id); err != nil {
				return err
			}
		}
		if rep.Row, err = r.inspectID(e, id, idRow); err != nil {
			return err
		}
	}
	if err := r.output(rep, func(w io.Writer) { rep.print(w) }); err != nil {
		return err
	}
	if !rep.Agree || (rep.Row != nil && !rep.Row.Agree) {
		return errProblem
	}
	return nil
}

// judgeMapping compares a cached mapping of val with the database's row
// holding val.
func judgeMapping(e *EntityConfig, col, val string, m cached, row dbRow) *byReport {
	rep := &byReport{Entity: e.Name, Column: col, Value: val, Mapping: m}
	switch m.state {
	case cacheaside.PeekAbsent, cacheaside.PeekLeaseOnly:
		rep.Agree, rep.Verdict = true, "mapping not cached"
	case cacheaside.PeekCorrupt:
		rep.Verdict = "corrupt mapping entry"
	case cacheaside.PeekNotFound:
		if row.Found {
			rep.Verdict = fmt.Sprintf("disagree: the mapping caches \"not found\", the database has id %s", row.ID)
		} else {
			rep.Agree, rep.Verdict = true, "agree: not found in either"
		}
	case cacheaside.PeekValue:
		rep.MapsTo = idText(m.Value)
		switch {
		case !row.Found:
			rep.Verdict = fmt.Sprintf("disagree: the mapping points at id %s, no row has the value", rep.MapsTo)
		case rep.MapsTo != row.ID:
			rep.Verdict = fmt.Sprintf("disagree: the mapping points at id %s, the database's row is %s", rep.MapsTo, row.ID)
		default:
			rep.Agree, rep.Verdict = true, "agree"
		}
	}
	return rep
}

// idText renders a cached id (the JSON of repo's ID type) as the id's
// text: a JSON string unquoted, a number as written.
func idText(v json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if dec.Decode(&x) != nil {
		return string(v)
	}
	switch t := x.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	}
	return string(v)
}

func (rep *byReport) print(w io.Writer) {
	fmt.Fprintf(w, "%s by %s %s\n", rep.Entity, rep.Column, rep.Value)
	rep.Mapping.print(w, "mapping")
	fmt.Fprintf(w, "  %-8s %s\n", "verdict", rep.Verdict)
	if rep.Row != nil {
		rep.Row.print(w)
	}
}
