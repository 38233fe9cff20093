package repo

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"reflect"

	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// maxCursor bounds a cursor's length: a longer one is refused before it
// is decoded.
const maxCursor = 4096

// A cursor is the order columns' values of the last row of a page, as a
// JSON array, behind a CRC-32 of the query's name, the filter values and
// the array, in unpadded URL-safe base64. The checksum is no secret (a
// cursor is not a capability): it catches a cursor that was cut, edited,
// or taken from another query or filter value. The values are decoded
// into the columns' Go types, so a value of another type is refused too.

// cursorOf returns the cursor after the row with order values vals.
func (q *listQuery) cursorOf(where string, vals []any) (string, error) {
	payload, err := json.Marshal(vals)
	if err != nil {
		return "", fmt.Errorf("repo: query %s: cursor: %w", q.name, err)
	}
	b := binary.BigEndian.AppendUint32(nil, q.checksum(where, payload))
	return base64.RawURLEncoding.EncodeToString(append(b, payload...)), nil
}

// decodeCursor returns the order values of cursor s ("" is the first
// page: nil). A cursor that does not decode is an error matching
// ErrInvalid.
func (q *listQuery) decodeCursor(where, s string) ([]any, error) {
	if s == "" {
		return nil, nil
	}
	bad := func(why string) error { return fmt.Errorf("%w: query %s: page cursor %s", ErrInvalid, q.name, why) }
	if len(s) > maxCursor {
		return nil, bad(fmt.Sprintf("of %d bytes, the limit is %d", len(s), maxCursor))
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 4 {
		return nil, bad("is not one of this query's cursors")
	}
	payload := b[4:]
	if binary.BigEndian.Uint32(b) != q.checksum(where, payload) {
		return nil, bad("was altered, or belongs to another query or filter value")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(payload, &raws); err != nil || len(raws) != len(q.order) {
		return nil, bad("does not hold the order's values")
	}
	vals := make([]any, len(raws))
	for i, f := range q.order {
		p := reflect.New(f.FieldType)
		dec := json.NewDecoder(bytes.NewReader(raws[i]))
		if err := dec.Decode(p.Interface()); err != nil {
			return nil, bad(fmt.Sprintf("holds a bad value for %s: %v", f.DBName, err))
		}
		vals[i] = p.Elem().Interface()
	}
	return vals, nil
}

func (q *listQuery) checksum(where string, payload []byte) uint32 {
	h := crc32.NewIEEE()
	h.Write([]byte(q.name))
	h.Write([]byte{0})
	h.Write([]byte(where))
	h.Write([]byte{0})
	h.Write(payload)
	return h.Sum32()
}

// after is the keyset condition "the row comes after vals in the order":
// (c1 > v1) OR (c1 = v1 AND c2 > v2) OR …, with < for descending columns.
func (q *listQuery) after(vals []any) clause.Expression {
	ors := make([]clause.Expression, len(q.order))
	for i, f := range q.order {
		ands := make([]clause.Expression, 0, i+1)
		for j := range i {
			ands = append(ands, clause.Eq{Column: column(q.order[j]), Value: vals[j]})
		}
		if q.desc[i] {
			ands = append(ands, clause.Lt{Column: column(f), Value: vals[i]})
		} else {
			ands = append(ands, clause.Gt{Column: column(f), Value: vals[i]})
		}
		ors[i] = clause.And(ands...)
	}
	return clause.Or(ors...)
}

func column(f *schema.Field) clause.Column {
	return clause.Column{Table: clause.CurrentTable, Name: f.DBName}
}
