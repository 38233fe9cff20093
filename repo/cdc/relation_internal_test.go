package cdc

import (
	"encoding/binary"
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
