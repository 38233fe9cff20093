package cdc

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/jackc/pglogrepl"
)

// values shares a text column's decoded bytes instead of copying them
// (text), which is safe only while the decoder copies them out of the
// message it parses: the reader parses the connection's read buffer, which
// the next receive overwrites. A change keeps its values after the buffer
// it was parsed from is reused.
func TestRelation_valuesOutliveTheBuffer(t *testing.T) {
	rel := &relation{name: "public.users", cols: []string{"id", "name"}, types: []uint32{20, 25}, key: []bool{true, false}}
	buf := insertMessage(7, "42", "Ada")
	msg, err := pglogrepl.Parse(buf)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := rel.change(msg)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, insertMessage(7, "43", "Bob")) // the next message, in the same buffer
	id, _ := ch.New.Lookup("id")
	name, _ := ch.New.Lookup("name")
	if string(id.Text) != "42" || string(name.Text) != "Ada" {
		t.Fatalf("values after the buffer was reused: %v, want id 42, name Ada", ch.New)
	}
}

// insertMessage encodes a pgoutput Insert of relation rel with text
// columns.
func insertMessage(rel uint32, cols ...string) []byte {
	b := []byte{'I'}
	b = binary.BigEndian.AppendUint32(b, rel)
	b = append(b, 'N')
	b = binary.BigEndian.AppendUint16(b, uint16(len(cols)))
	for _, c := range cols {
		b = append(b, 't')
		b = binary.BigEndian.AppendUint32(b, uint32(len(c)))
		b = append(b, c...)
	}
	return b
}

// A change says what it knows of each column: a NULL is a known value
// with its type; a column outside the key of a key-only old row is
// absent (unknown); an unchanged TOAST value of the new row is the old
// row's when the old row carries it (REPLICA IDENTITY FULL), else
// unknown.
func TestRelation_knownNullUnknownToast(t *testing.T) {
	rel := &relation{name: "public.docs", cols: []string{"id", "body", "deleted_at"},
		types: []uint32{20, 25, 1184}, key: []bool{true, false, false}}
	col := func(kind uint8, data string) *pglogrepl.TupleDataColumn {
		c := &pglogrepl.TupleDataColumn{DataType: kind}
		if kind == pglogrepl.TupleDataTypeText {
			c.Data = []byte(data)
		}
		return c
	}
	tuple := func(cols ...*pglogrepl.TupleDataColumn) *pglogrepl.TupleData {
		return &pglogrepl.TupleData{ColumnNum: uint16(len(cols)), Columns: cols}
	}
	full := &pglogrepl.UpdateMessage{
		OldTupleType: pglogrepl.UpdateMessageTupleTypeOld,
		OldTuple:     tuple(col('t', "1"), col('t', "long text"), col('n', "")),
		NewTuple:     tuple(col('t', "1"), col('u', ""), col('t', "2026-12-04 20:41:34.665+00")),
	}
	ch, err := rel.change(full)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := ch.Old.Lookup("deleted_at"); !ok || !c.Null || c.Type != 1184 {
		t.Errorf("FULL old deleted_at = %+v, %v; want a known NULL of type 1184", c, ok)
	}
	if c, ok := ch.New.Lookup("body"); !ok || string(c.Text) != "long text" || c.Type != 25 {
		t.Errorf("FULL new body (unchanged TOAST) = %+v, %v; want the old row's text", c, ok)
	}
	keyOnly := &pglogrepl.UpdateMessage{
		OldTupleType: pglogrepl.UpdateMessageTupleTypeKey,
		OldTuple:     tuple(col('t', "1"), col('n', ""), col('n', "")),
		NewTuple:     tuple(col('t', "2"), col('u', ""), col('n', "")),
	}
	if ch, err = rel.change(keyOnly); err != nil {
		t.Fatal(err)
	}
	if _, ok := ch.Old.Lookup("deleted_at"); ok {
		t.Errorf("key-only old row carries deleted_at; want it unknown")
	}
	if _, ok := ch.New.Lookup("body"); ok {
		t.Errorf("new body (unchanged TOAST, no old value) is known; want it unknown")
	}
	if c, ok := ch.New.Lookup("deleted_at"); !ok || !c.Null {
		t.Errorf("new deleted_at = %+v, %v; want a known NULL", c, ok)
	}
	short := &pglogrepl.InsertMessage{Tuple: tuple(col('t', "1"))}
	if ch, err = rel.change(short); !errors.Is(err, ErrUndecoded) || ch.New == nil || len(ch.New) != 0 {
		t.Errorf("a tuple shorter than its relation = %v, %v; want an empty row and ErrUndecoded", ch.New, err)
	}
}
