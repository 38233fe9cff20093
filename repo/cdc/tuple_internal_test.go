package cdc

import (
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/jackc/pglogrepl"
)

// tupleBytes encodes a TupleData: cols are "n" (NULL), "u" (unchanged
// TOAST), or "t…"/"b…" (text or binary, the rest being the value).
func tupleBytes(cols ...string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(cols)))
	for _, c := range cols {
		b = append(b, c[0])
		if c[0] == 't' || c[0] == 'b' {
			b = binary.BigEndian.AppendUint32(b, uint32(len(c)-1))
			b = append(b, c[1:]...)
		}
	}
	return b
}

func rowMessage(typ byte, rel uint32, parts ...[]byte) []byte {
	b := binary.BigEndian.AppendUint32([]byte{typ}, rel)
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// parseRowChange decodes what pglogrepl.Parse decodes, the same, and
// every message cut short is an error, never a panic.
func TestParseRowChange(t *testing.T) {
	row := tupleBytes("t42", "tada@example.com", "n", "u", "t", "b\x00\x01")
	key := tupleBytes("t42", "n", "n", "n", "n", "n")
	for name, data := range map[string][]byte{
		"insert":     rowMessage('I', 16384, []byte{'N'}, row),
		"update":     rowMessage('U', 16384, []byte{'N'}, row),
		"update key": rowMessage('U', 7, []byte{'K'}, key, []byte{'N'}, row),
		"update old": rowMessage('U', 7, []byte{'O'}, row, []byte{'N'}, row),
		"delete key": rowMessage('D', 1, []byte{'K'}, key),
		"delete old": rowMessage('D', 1, []byte{'O'}, row),
	} {
		t.Run(name, func(t *testing.T) {
			want, err := pglogrepl.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := parseRowChange(data)
			if !ok || err != nil {
				t.Fatalf("parseRowChange = %v, %v", ok, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("parseRowChange = %#v,\nParse = %#v", got, want)
			}
			// The values are copies: the caller's buffer may be reused.
			clear(data)
			if !reflect.DeepEqual(got, want) {
				t.Fatal("the decoded message changed with the buffer it came from")
			}
		})
	}
	full := rowMessage('U', 7, []byte{'O'}, row, []byte{'N'}, row)
	for n := 1; n < len(full); n++ {
		if msg, ok, err := parseRowChange(full[:n]); !ok || err == nil {
			t.Errorf("the first %d of %d bytes: %v, %v, %v; want an error", n, len(full), msg, ok, err)
		}
	}
	for name, data := range map[string][]byte{
		"insert without N":       rowMessage('I', 1, []byte{'K'}, row),
		"update without N":       rowMessage('U', 1, []byte{'K'}, key, []byte{'X'}, row),
		"delete without K/O":     rowMessage('D', 1, []byte{'N'}, row),
		"length past the end":    append(rowMessage('I', 1, []byte{'N'}), 0, 1, 't', 0xff, 0xff, 0xff, 0xff, 'x'),
		"more columns than data": append(rowMessage('I', 1, []byte{'N'}), 0xff, 0xff, 'n'),
	} {
		if _, ok, err := parseRowChange(data); !ok || err == nil {
			t.Errorf("%s: %v, %v; want an error", name, ok, err)
		}
	}
	for _, data := range [][]byte{nil, {'B'}, {'C', 0}, {'R'}, {'T'}} {
		if msg, ok, err := parseRowChange(data); ok || msg != nil || err != nil {
			t.Errorf("%q: %v, %v, %v; want it left to pglogrepl.Parse", data, msg, ok, err)
		}
	}
}
