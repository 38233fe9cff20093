package cdc

import (
	"fmt"
	"unsafe"

	"github.com/jackc/pglogrepl"

	"github.com/asidekit/asidekit/internal/rowchange"
)

// relation is a table as the last Relation message described it: pgoutput
// sends one before the first change of a table in a session and again
// after any change of its schema (ALTER TABLE), so the columns of a change
// are always read with the layout they were written with.
type relation struct {
	name   string          // "schema.table"
	cols   []string        // column names, in tuple order
	key    []bool          // part of the replica identity
	target rowchange.Table // nil: not registered
}

func newRelation(m *pglogrepl.RelationMessage, targets map[string]rowchange.Table) *relation {
	r := &relation{name: m.Namespace + "." + m.RelationName}
	for _, c := range m.Columns {
		r.cols = append(r.cols, c.Name)
		r.key = append(r.key, c.Flags&1 != 0)
	}
	r.target = targets[r.name]
	return r
}

// values returns a tuple's column values by name: text for 't', nil for
// NULL; unchanged TOAST values ('u'), binary values and, in a key-only
// tuple, the columns outside the key are left out as unknown.
func (r *relation) values(t *pglogrepl.TupleData, keyOnly bool) (map[string]any, error) {
	if t == nil {
		return nil, nil
	}
	if len(t.Columns) != len(r.cols) {
		return nil, fmt.Errorf("%w: %s: a tuple of %d columns, the relation has %d", ErrSkipped, r.name, len(t.Columns), len(r.cols))
	}
	m := make(map[string]any, len(r.cols))
	for i, c := range t.Columns {
		if keyOnly && !r.key[i] {
			continue
		}
		switch c.DataType {
		case pglogrepl.TupleDataTypeNull:
			m[r.cols[i]] = nil
		case pglogrepl.TupleDataTypeText:
			m[r.cols[i]] = text(c.Data)
		}
	}
	return m, nil
}

// change decodes a row change message of r into a rowchange.Change.
func (r *relation) change(msg pglogrepl.Message) (rowchange.Change, error) {
	var ch rowchange.Change
	var err error
	switch m := msg.(type) {
	case *pglogrepl.InsertMessage:
		ch.Kind = rowchange.Insert
		ch.New, err = r.values(m.Tuple, false)
	case *pglogrepl.UpdateMessage:
		ch.Kind = rowchange.Update
		if ch.Old, err = r.values(m.OldTuple, m.OldTupleType == pglogrepl.UpdateMessageTupleTypeKey); err == nil {
			ch.New, err = r.values(m.NewTuple, false)
		}
	case *pglogrepl.DeleteMessage:
		ch.Kind = rowchange.Delete
		ch.Old, err = r.values(m.OldTuple, m.OldTupleType == pglogrepl.DeleteMessageTupleTypeKey)
	}
	return ch, err
}

// text returns a text column's value without copying it: the decoder
// allocates each column's bytes afresh (pglogrepl's TupleData.Decode) and
// nothing writes them afterwards.
func text(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
