package cacheaside

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// countingCodec is JSON counting its Unmarshal calls.
type countingCodec struct {
	JSON
	unmarshals atomic.Int64
}

func (c *countingCodec) Unmarshal(b []byte, v any) error {
	c.unmarshals.Add(1)
	return c.JSON.Unmarshal(b, v)
}

// tagged holds a slice: callers must not share it.
type tagged struct {
	Tags []string `json:"tags"`
}

// decodeRound sets id to v in e, holds the first GET of it, queues n more
// Gets for the next one, and returns every caller's value and how many
// payloads were decoded for them.
func decodeRound[T any](t *testing.T, e *Entity[T], h *getHook, codec *countingCodec, v T, n int) ([]T, int64) {
	t.Helper()
	ctx := context.Background()
	if err := e.Set(ctx, "1", v); err != nil {
		t.Fatal(err)
	}
	load := func(context.Context, string) (T, error) { t.Error("loaded on a hit"); return v, nil }
	before := codec.unmarshals.Load()
	results := make(chan T, n+1)
	get := func() {
		got, err := e.Get(ctx, "1", load)
		if err != nil {
			t.Error(err)
		}
		results <- got
	}
	go get()
	<-h.reached
	for range n {
		go get()
	}
	key, _ := e.Key("1")
	waitFor(t, 10*time.Second, func() bool { return e.reads.waiting(key) == n })
	close(h.gate)
	out := make([]T, 0, n+1)
	for range n + 1 {
		out = append(out, <-results)
	}
	return out, codec.unmarshals.Load() - before
}

func sharedEntity[T any](t *testing.T) (*Entity[T], *getHook, *countingCodec) {
	t.Helper()
	r := testcontainers.Redis(t)
	client := r.NewClient(t)
	h := &getHook{reached: make(chan struct{}), gate: make(chan struct{})}
	client.AddHook(h)
	codec := &countingCodec{}
	c := newCache(t, client, r.Namespace, &Options{Codec: codec})
	return newEntity[T](t, c, "shared", Policy{TTL: time.Hour}), h, codec
}

// The Gets of one shared GET decode its payload once when T is copy-safe,
// and each for itself when T holds a slice, which then no two callers
// share.
func TestCoalesceReads_decodeOnce(t *testing.T) {
	t.Parallel()
	const queued = 15
	t.Run("copy-safe", func(t *testing.T) {
		t.Parallel()
		e, h, codec := sharedEntity[user](t)
		want := user{ID: "1", Name: "hot", Ver: 3}
		got, decodes := decodeRound(t, e, h, codec, want, queued)
		for _, u := range got {
			if u != want {
				t.Fatalf("Get = %+v, want %+v", u, want)
			}
		}
		if decodes != 2 { // the held GET's, and the shared one's
			t.Fatalf("%d decodes for 2 GETs of %d callers, want 2", decodes, queued+1)
		}
	})
	t.Run("with a slice", func(t *testing.T) {
		t.Parallel()
		e, h, codec := sharedEntity[tagged](t)
		got, decodes := decodeRound(t, e, h, codec, tagged{Tags: []string{"a", "b"}}, queued)
		if decodes != queued+1 {
			t.Fatalf("%d decodes for %d callers, want one each", decodes, queued+1)
		}
		got[0].Tags[0] = "changed"
		for _, v := range got[1:] {
			if !reflect.DeepEqual(v.Tags, []string{"a", "b"}) {
				t.Fatalf("a caller's change reached another: %v", v.Tags)
			}
		}
	})
}

func TestCopySafe(t *testing.T) {
	t.Parallel()
	type inner struct {
		At time.Time
		N  [4]int32
	}
	for _, c := range []struct {
		v    any
		want bool
	}{
		{user{}, true}, {inner{}, true}, {struct{ I inner }{}, true}, {"", true}, {0.5, true},
		{tagged{}, false}, {struct{ P *int }{}, false}, {struct{ M map[string]int }{}, false},
		{struct{ A any }{}, false}, {[2][]byte{}, false},
	} {
		if got := copySafe(reflect.TypeOf(c.v)); got != c.want {
			t.Errorf("copySafe(%T) = %v, want %v", c.v, got, c.want)
		}
	}
}
