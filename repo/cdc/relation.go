package cdc

import (
	"fmt"

	"github.com/jackc/pglogrepl"

	"github.com/asidekit/asidekit/internal/rowchange"
)

// relation is a table as the last Relation message described it: pgoutput
// sends one before the first change of a table in a session and again
// after any change of its schema (ALTER TABLE), so the columns of a change
// are always read with the layout they were written with.
type relation struct {
	name   string   // "schema.table"
	cols   []string // column names, in tuple order
	types  []uint32 // column type OIDs, in tuple order
	key    []bool   // part of the replica identity
	target table    // nil: not registered
	// identity is the table's replica identity ('d' default, 'f' full,
	// 'i' index, 'n' nothing), and keyCols the columns its cache keys use
	// (table.KeyColumns): what recentRows keeps.
	identity uint8
	keyCols  map[string]bool
}

func newRelation(m *pglogrepl.RelationMessage, targets map[string]table) *relation {
	r := &relation{name: m.Namespace + "." + m.RelationName, identity: m.ReplicaIdentity}
	for _, c := range m.Columns {
		r.cols = append(r.cols, c.Name)
		r.types = append(r.types, c.DataType)
		r.key = append(r.key, c.Flags&1 != 0)
	}
	r.target = targets[r.name]
	if r.target != nil {
		r.keyCols = map[string]bool{}
		for _, c := range r.target.KeyColumns() {
			r.keyCols[c] = true
		}
	}
	return r
}

// values returns a tuple's columns, each with its type: its text for 't',
// a known NULL for 'n'. Unchanged TOAST values ('u') are taken from
// before, the old row of the same update, when it carries them (an
// unchanged value is the old one); they, binary values and, in a key-only
// tuple, the columns outside the key are otherwise left out as unknown.
// A tuple that does not match the relation's columns is an error, with an
// empty row: every column unknown.
func (r *relation) values(t *pglogrepl.TupleData, keyOnly bool, before rowchange.Row) (rowchange.Row, error) {
	if t == nil {
		return nil, nil
	}
	if len(t.Columns) != len(r.cols) {
		return rowchange.Row{}, fmt.Errorf("%w: %s: a tuple of %d columns, the relation has %d", ErrUndecoded, r.name, len(t.Columns), len(r.cols))
	}
	row := make(rowchange.Row, 0, len(r.cols))
	for i, c := range t.Columns {
		if keyOnly && !r.key[i] {
			continue
		}
		col := rowchange.Column{Name: r.cols[i], Type: r.types[i]}
		switch c.DataType {
		case pglogrepl.TupleDataTypeNull:
			col.Null = true
		case pglogrepl.TupleDataTypeText:
			// The decoder allocates each column's bytes afresh
			// (pglogrepl's TupleData.Decode) and nothing writes them
			// afterwards: the change shares them.
			col.Text = c.Data
		case pglogrepl.TupleDataTypeToast:
			old, ok := before.Lookup(r.cols[i])
			if !ok {
				continue
			}
			col = old
		default:
			continue
		}
		row = append(row, col)
	}
	return row, nil
}

// change decodes a row change message of r into a rowchange.Change. An
// error (matching ErrUndecoded) comes with the change: the columns it
// could not read are unknown in it.
func (r *relation) change(msg pglogrepl.Message) (rowchange.Change, error) {
	var ch rowchange.Change
	var err, err2 error
	switch m := msg.(type) {
	case *pglogrepl.InsertMessage:
		ch.Kind = rowchange.Insert
		ch.New, err = r.values(m.Tuple, false, nil)
	case *pglogrepl.UpdateMessage:
		ch.Kind = rowchange.Update
		ch.Old, err = r.values(m.OldTuple, m.OldTupleType == pglogrepl.UpdateMessageTupleTypeKey, nil)
		ch.New, err2 = r.values(m.NewTuple, false, ch.Old)
		if err == nil {
			err = err2
		}
	case *pglogrepl.DeleteMessage:
		ch.Kind = rowchange.Delete
		ch.Old, err = r.values(m.OldTuple, m.OldTupleType == pglogrepl.DeleteMessageTupleTypeKey, nil)
	}
	return ch, err
}
