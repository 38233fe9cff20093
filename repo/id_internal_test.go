package repo

import (
	"errors"
	"net/netip"
	"testing"
)

type userID int64
type code string
type port uint16

func TestIDCodec_kinds(t *testing.T) {
	check := func(name string, got string, err error, want string) {
		t.Helper()
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	i64, _ := newIDCodec[int64]()
	s, err := i64(-42)
	check("int64", s, err, "-42")
	named, _ := newIDCodec[userID]()
	s, err = named(9_007_199_254_740_993)
	check("named int64", s, err, "9007199254740993")
	u64, _ := newIDCodec[uint64]()
	s, err = u64(1<<64 - 1)
	check("uint64", s, err, "18446744073709551615")
	p, _ := newIDCodec[port]()
	s, err = p(8080)
	check("named uint16", s, err, "8080")
	str, _ := newIDCodec[code]()
	s, err = str("a:b")
	check("named string", s, err, "a:b")
	if _, err := str(""); !errors.Is(err, ErrInvalidID) {
		t.Errorf("empty string id: %v", err)
	}
	addr, err := newIDCodec[netip.Addr]()
	if err != nil {
		t.Fatal(err)
	}
	s, err = addr(netip.MustParseAddr("127.0.0.1"))
	check("TextMarshaler", s, err, "127.0.0.1")
	if _, err := addr(netip.Addr{}); !errors.Is(err, ErrInvalidID) {
		t.Errorf("zero netip.Addr marshals to empty text: %v", err)
	}
	if _, err := newIDCodec[struct{ A int }](); !errors.Is(err, ErrInvalid) {
		t.Errorf("struct id: %v", err)
	}
	if _, err := newIDCodec[float64](); !errors.Is(err, ErrInvalid) {
		t.Errorf("float id: %v", err)
	}
}

// Integer ids cost the string and nothing else: no boxing, no fmt.
func TestIDCodec_intAllocs(t *testing.T) {
	c, _ := newIDCodec[userID]()
	id := userID(123_456_789)
	if n := testing.AllocsPerRun(100, func() { _, _ = c(id) }); n > 1 {
		t.Fatalf("%v allocations per int64 id, want at most 1 (the string)", n)
	}
}

func BenchmarkIDCodec_int64(b *testing.B) {
	c, _ := newIDCodec[int64]()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_, _ = c(int64(i))
	}
}

// Each decoder inverts its codec, for every kind that has one; ids marshalled
// as text have none.
func TestIDDecoder_roundTrip(t *testing.T) {
	roundTrip(t, int64(-42), 9_007_199_254_740_993)
	roundTrip(t, userID(-1), userID(1<<63-1))
	roundTrip(t, uint64(1<<64-1))
	roundTrip(t, port(8080))
	roundTrip(t, code("a:b"), code("ü"))
	roundTrip(t, int8(-128))
	roundTrip(t, int16(-300))
	roundTrip(t, int32(1<<31-1))
	roundTrip(t, 7)
	roundTrip(t, uint8(255))
	roundTrip(t, uint16(65535))
	roundTrip(t, uint32(1<<32-1))
	roundTrip(t, uint(3))
	if newIDDecoder[netip.Addr]() != nil {
		t.Error("a TextMarshaler id has a decoder")
	}
	if _, err := newIDDecoder[int8]()("300"); err == nil {
		t.Error("int8 decoder took 300")
	}
	if _, err := newIDDecoder[uint16]()("-1"); err == nil {
		t.Error("uint16 decoder took -1")
	}
}

func roundTrip[ID comparable](t *testing.T, ids ...ID) {
	t.Helper()
	enc, err := newIDCodec[ID]()
	if err != nil {
		t.Fatal(err)
	}
	dec := newIDDecoder[ID]()
	for _, id := range ids {
		s, err := enc(id)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := dec(s); err != nil || got != id {
			t.Errorf("%T %v: encoded %q, decoded %v, %v", id, id, s, got, err)
		}
	}
}
