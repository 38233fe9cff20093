package msgpackcodec_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/cacheaside/msgpackcodec"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

// record carries json tags only, as most models do, plus a field json
// skips and one with a msgpack tag of its own.
type record struct {
	ID      int64             `json:"id"`
	Name    string            `json:"name"`
	Tags    []string          `json:"tags,omitempty"`
	Attrs   map[string]string `json:"attrs"`
	At      time.Time         `json:"at"`
	Secret  string            `json:"-"`
	Renamed string            `msgpack:"mp_name" json:"json_name"`
}

func sample() record {
	return record{
		ID: 42, Name: "Ada", Tags: []string{"a", "b"}, Attrs: map[string]string{"k": "v"},
		At: time.Date(2026, 11, 30, 1, 2, 3, 4, time.UTC), Secret: "s", Renamed: "r",
	}
}

func TestCodec_roundTrip(t *testing.T) {
	var c msgpackcodec.Codec
	in := sample()
	b, err := c.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out record
	if err := c.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	want := in
	want.Secret = "" // json:"-" is honoured
	// A MessagePack timestamp has no zone: the instant survives, the
	// location comes back as time.Local.
	if !out.At.Equal(want.At) {
		t.Fatalf("At = %v, want the instant %v", out.At, want.At)
	}
	out.At = want.At
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("round trip = %+v, want %+v", out, want)
	}
}

// The field names on the wire are the json tags' (a msgpack tag wins),
// so models keep the names they have in JSON.
func TestCodec_fieldNamesFromJSONTags(t *testing.T) {
	b, err := msgpackcodec.Codec{}.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := msgpack.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "name", "tags", "attrs", "at", "mp_name"} {
		if _, ok := m[k]; !ok {
			t.Errorf("field %q missing from %v", k, m)
		}
	}
	for _, k := range []string{"ID", "Secret", "-", "json_name"} {
		if _, ok := m[k]; ok {
			t.Errorf("field %q present in %v", k, m)
		}
	}
}

func TestCodec_badInput(t *testing.T) {
	var c msgpackcodec.Codec
	var out record
	for _, data := range [][]byte{nil, {0xc1}, {0x81, 0xa2, 'i'}, []byte(`{"id":1}`)} {
		if err := c.Unmarshal(data, &out); err == nil {
			t.Errorf("Unmarshal(%q) = nil error, want one", data)
		}
	}
	if err := c.Unmarshal([]byte{0x80}, out); err == nil {
		t.Error("Unmarshal into a non-pointer = nil error, want one")
	}
	if _, err := c.Marshal(make(chan int)); err == nil {
		t.Error("Marshal(chan) = nil error, want one")
	}
	// A failed call leaves the pooled coders usable.
	if _, err := c.Marshal(sample()); err != nil {
		t.Fatal(err)
	}
}

func TestCodec_concurrent(t *testing.T) {
	var c msgpackcodec.Codec
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				in := sample()
				in.ID = int64(g*1000 + i)
				in.Name = strings.Repeat("x", i)
				b, err := c.Marshal(in)
				if err != nil {
					t.Error(err)
					return
				}
				var out record
				if err := c.Unmarshal(b, &out); err != nil || out.ID != in.ID || out.Name != in.Name {
					t.Errorf("goroutine %d: got %d %q, %v", g, out.ID, out.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// Through a cacheaside.Entity on real Redis: the first Get loads and
// stores a MessagePack payload, the second is a hit decoded from it.
func TestCodec_withEntity(t *testing.T) {
	rn := testcontainers.Redis(t)
	cache, err := cacheaside.New(rn.Client, &cacheaside.Options{Namespace: rn.Namespace, Codec: msgpackcodec.Codec{}})
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	ent, err := cacheaside.NewEntity[record](cache, "record", cacheaside.Policy{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	loads := 0
	load := func(context.Context, string) (record, error) {
		loads++
		if loads > 1 {
			return record{}, errors.New("loaded twice")
		}
		return sample(), nil
	}
	for range 2 {
		got, err := ent.Get(ctx, "42", load)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != 42 || got.Name != "Ada" || !got.At.Equal(sample().At) {
			t.Fatalf("Get = %+v", got)
		}
	}
	if s := ent.Stats(); loads != 1 || s.Hits != 1 || s.DecodeErrors != 0 {
		t.Fatalf("loads %d, stats %+v: want 1 load, 1 hit, no decode error", loads, s)
	}
	// The entry is MessagePack: a JSON cache in the same namespace finds
	// it foreign, counts a decode error and loads, as the package doc says.
	jsonCache, err := cacheaside.New(rn.Client, &cacheaside.Options{Namespace: rn.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	defer jsonCache.Close()
	jsonEnt, err := cacheaside.NewEntity[record](jsonCache, "record", cacheaside.Policy{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	jsonLoads := 0
	if _, err := jsonEnt.Get(ctx, "42", func(context.Context, string) (record, error) {
		jsonLoads++
		return sample(), nil
	}); err != nil {
		t.Fatal(err)
	}
	if s := jsonEnt.Stats(); jsonLoads != 1 || s.DecodeErrors != 1 {
		t.Fatalf("JSON reader of a MessagePack entry: %d loads, stats %+v; want 1 load, 1 decode error", jsonLoads, s)
	}
}
