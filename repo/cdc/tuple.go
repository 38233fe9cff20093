package cdc

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jackc/pglogrepl"
)

// errShortMessage is why a row change message that ends early does not
// decode.
var errShortMessage = errors.New("message ends early")

// parseRowChange decodes an Insert, Update or Delete message of pgoutput
// (protocol 1) into the message pglogrepl.Parse returns, and reports
// whether data was one (ok false: any other message, for Parse). Parse
// copies every column value on its own; here the values point into one
// copy of data, made once per message (data is the connection's read
// buffer, which the next receive reuses): a row of ten values costs a few
// allocations instead of two dozen, which is most of what decoding a big
// transaction allocates. Every length is checked: a message cut short is
// an error, never a panic.
func parseRowChange(data []byte) (msg pglogrepl.Message, ok bool, err error) {
	if len(data) == 0 {
		return nil, false, nil
	}
	typ := pglogrepl.MessageType(data[0])
	switch typ {
	case pglogrepl.MessageTypeInsert, pglogrepl.MessageTypeUpdate, pglogrepl.MessageTypeDelete:
	default:
		return nil, false, nil
	}
	d := &tupleDecoder{src: append([]byte(nil), data[1:]...)}
	rel := d.uint32()
	switch typ {
	case pglogrepl.MessageTypeInsert:
		m := &pglogrepl.InsertMessage{RelationID: rel}
		if d.byte() != 'N' {
			return nil, true, d.fail("insert", "no new tuple")
		}
		m.Tuple = d.tuple()
		msg = m
	case pglogrepl.MessageTypeUpdate:
		m := &pglogrepl.UpdateMessage{RelationID: rel}
		kind := d.byte()
		if kind == pglogrepl.UpdateMessageTupleTypeKey || kind == pglogrepl.UpdateMessageTupleTypeOld {
			m.OldTupleType, m.OldTuple = kind, d.tuple()
			kind = d.byte()
		}
		if kind != pglogrepl.UpdateMessageTupleTypeNew {
			return nil, true, d.fail("update", fmt.Sprintf("tuple type %q, want N", kind))
		}
		m.NewTuple = d.tuple()
		msg = m
	default:
		m := &pglogrepl.DeleteMessage{RelationID: rel}
		kind := d.byte()
		if kind != pglogrepl.DeleteMessageTupleTypeKey && kind != pglogrepl.DeleteMessageTupleTypeOld {
			return nil, true, d.fail("delete", fmt.Sprintf("tuple type %q, want K or O", kind))
		}
		m.OldTupleType, m.OldTuple = kind, d.tuple()
		msg = m
	}
	if d.err != nil {
		return nil, true, fmt.Errorf("cdc: decode %s message: %w", typ, d.err)
	}
	msg.(interface{ SetType(pglogrepl.MessageType) }).SetType(typ)
	return msg, true, nil
}

// tupleDecoder reads a message's fields from src; after the first read
// past the end, every read returns zero values and err is set.
type tupleDecoder struct {
	src []byte
	err error
}

func (d *tupleDecoder) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.src) {
		d.err = errShortMessage
		return nil
	}
	b := d.src[:n:n]
	d.src = d.src[n:]
	return b
}

func (d *tupleDecoder) byte() byte {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *tupleDecoder) uint32() uint32 {
	if b := d.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (d *tupleDecoder) fail(what, why string) error {
	return fmt.Errorf("cdc: decode %s message: %s", what, why)
}

// tuple reads a TupleData: its columns share one array, and their values
// point into src.
func (d *tupleDecoder) tuple() *pglogrepl.TupleData {
	b := d.take(2)
	if b == nil {
		return nil
	}
	n := int(binary.BigEndian.Uint16(b))
	if n > len(d.src) { // each column takes a byte at least
		d.err = errShortMessage
		return nil
	}
	cols := make([]pglogrepl.TupleDataColumn, n)
	t := &pglogrepl.TupleData{ColumnNum: uint16(n), Columns: make([]*pglogrepl.TupleDataColumn, n)}
	for i := range cols {
		c := &cols[i]
		c.DataType = d.byte()
		if c.DataType == pglogrepl.TupleDataTypeText || c.DataType == pglogrepl.TupleDataTypeBinary {
			c.Length = d.uint32()
			c.Data = d.take(int(c.Length))
		}
		t.Columns[i] = c
	}
	return t
}
