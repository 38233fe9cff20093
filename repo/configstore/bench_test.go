package configstore_test

import (
	"fmt"
	"testing"

	"github.com/asidekit/asidekit/repo/configstore"
)

// benchStore returns backends with keys settings written and the hash
// built, and the keys' names.
func benchStore(b *testing.B, keys int) (backends, []string) {
	b.Helper()
	be := newBackends(b)
	values := make(map[string]string, keys)
	names := make([]string, 0, keys)
	for i := range keys {
		k := fmt.Sprintf("key%03d", i)
		values[k] = fmt.Sprintf("value of setting %d", i)
		names = append(names, k)
	}
	s := be.store(b, be.r.Client, be.pg.DB, nil)
	if err := s.SetMany(ctxT(b), values); err != nil {
		b.Fatal(err)
	}
	if _, err := s.All(ctxT(b)); err != nil {
		b.Fatal(err)
	}
	return be, names
}

// Get on a built hash: one HMGET.
func BenchmarkStore_Get(b *testing.B) {
	be, keys := benchStore(b, 100)
	s := be.store(b, be.r.Client, be.pg.DB, nil)
	ctx := ctxT(b)
	for i := 0; b.Loop(); i++ {
		if _, err := s.Get(ctx, keys[i%len(keys)]); err != nil {
			b.Fatal(err)
		}
	}
}

// All of 100 keys on a built hash: one HGETALL.
func BenchmarkStore_All(b *testing.B) {
	be, _ := benchStore(b, 100)
	s := be.store(b, be.r.Client, be.pg.DB, nil)
	ctx := ctxT(b)
	for b.Loop() {
		if _, err := s.All(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// Set: one transaction with an upsert, one script call.
func BenchmarkStore_Set(b *testing.B) {
	be, keys := benchStore(b, 10)
	s := be.store(b, be.r.Client, be.pg.DB, nil)
	ctx := ctxT(b)
	for i := 0; b.Loop(); i++ {
		if err := s.Set(ctx, keys[i%len(keys)], fmt.Sprint(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// Reconcile of 100 keys in sync: one HGETALL, one query, no script.
func BenchmarkStore_Reconcile(b *testing.B) {
	be, _ := benchStore(b, 100)
	s := be.store(b, be.r.Client, be.pg.DB, nil)
	ctx := ctxT(b)
	for b.Loop() {
		if r, err := s.Reconcile(ctx); err != nil || r.Fixes() != 0 {
			b.Fatal(r, err)
		}
	}
}

// Local.Get: an in-process read of a copy kept by Watch, no round trip.
func BenchmarkLocal_Get(b *testing.B) {
	var l configstore.Local
	for i := range 100 {
		l.Apply(configstore.Change{Key: fmt.Sprintf("key%03d", i), Value: "v", Version: 1})
	}
	for i := 0; b.Loop(); i++ {
		if _, ok := l.Get("key042"); !ok {
			b.Fatal("missing")
		}
	}
}
