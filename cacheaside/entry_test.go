package cacheaside

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

func TestEntry_roundTrip(t *testing.T) {
	t.Parallel()
	for _, h := range []header{
		{expiry: 1, loadUS: 0},
		{expiry: time.Now().UnixMilli(), loadUS: 1234},
		{null: true, expiry: 1 << 50, loadUS: maxDurationUS},
	} {
		payload := []byte(`{"a":1}`)
		if h.null {
			payload = nil
		}
		got, p, err := decodeEntry(encodeEntry(h, payload))
		if err != nil || got != h || !bytes.Equal(p, payload) {
			t.Fatalf("round trip of %+v = %+v, %q, %v", h, got, p, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(encodeEntry(header{expiry: 1700000000000, loadUS: 5}, []byte(`{"id":"1"}`)))
	f.Add(encodeEntry(header{null: true, expiry: 1}, nil))
	f.Add([]byte{})
	f.Add([]byte(`{"id":"1"}`))
	f.Add([]byte{entryMagic, entryVersion, 0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, payload, err := decodeEntry(b)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to the same bytes.
		if again := encodeEntry(h, payload); !bytes.Equal(again, b) {
			t.Fatalf("decode/encode changed %x into %x", b, again)
		}
		var u user
		_ = (JSON{}).Unmarshal(payload, &u) // must not panic either
	})
}

// A corrupt or foreign entry is a miss: deleted, counted, reloaded.
func TestEntity_Get_corruptEntry(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "user", Policy{Strategy: Mutex})
	ctx := context.Background()
	var l counter
	for i, junk := range [][]byte{
		[]byte("plain string from another app"),
		encodeEntry(header{expiry: time.Now().Add(time.Hour).UnixMilli()}, []byte("{not json")),
		{entryMagic, entryVersion},
	} {
		key, _ := e.Key("1")
		r.Client.Set(ctx, key, junk, time.Hour)
		u, err := e.Get(ctx, "1", l.load)
		if err != nil || u.ID != "1" {
			t.Fatalf("junk %d: Get = %+v, %v", i, u, err)
		}
		if got := e.Stats().DecodeErrors; got < uint64(i+1) {
			t.Fatalf("junk %d: decode errors = %d", i, got)
		}
		if err := e.Invalidate(ctx, "1"); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.calls.Load(); n != 3 {
		t.Fatalf("loads = %d, want 3", n)
	}
}
