package configstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/asidekit/asidekit/repo/configstore"
)

func TestStore_SetGetDelete(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	s := b.store(t, b.r.Client, b.pg.DB, nil)

	if _, err := s.Get(ctx, "feature.x"); !errors.Is(err, configstore.ErrNotFound) {
		t.Fatalf("Get of an unset key: %v, want ErrNotFound", err)
	}
	if err := s.Set(ctx, "feature.x", "on"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMany(ctx, map[string]string{"a": "1", "b": "", "c": "with:colon {braces} \n newline"}); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "feature.x"); err != nil || v != "on" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if v, err := s.Get(ctx, "b"); err != nil || v != "" {
		t.Fatalf("Get of an empty value = %q, %v", v, err)
	}
	if err := s.Set(ctx, "feature.x", "off"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	if err := s.Delete(ctx, "never-set"); err != nil {
		t.Fatalf("Delete of an unknown key: %v", err)
	}
	if _, err := s.Get(ctx, "a"); !errors.Is(err, configstore.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	all, err := s.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"feature.x": "off", "b": "", "c": "with:colon {braces} \n newline"}
	if !mapsEqual(all, want) {
		t.Fatalf("All = %q, want %q", all, want)
	}

	// The table holds the truth, versions and the tombstone included, and
	// the hash mirrors it exactly.
	db := dbState(t, b.pg.DB, s.Scope())
	wantDB := map[string]string{"feature.x": "2:off", "a": "2", "b": "1:", "c": "1:with:colon {braces} \n newline"}
	if !mapsEqual(db, wantDB) {
		t.Fatalf("table = %q, want %q", db, wantDB)
	}
	if h := hashState(t, b.r.Client, s.Key()); !mapsEqual(h, db) {
		t.Fatalf("hash = %q, table = %q", h, db)
	}

	// A deleted key set again continues its versions.
	if err := s.Set(ctx, "a", "back"); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "a"); err != nil || v != "back" {
		t.Fatalf("Get after re-Set = %q, %v", v, err)
	}
	if got := dbState(t, b.pg.DB, s.Scope())["a"]; got != "3:back" {
		t.Fatalf("row a = %q, want 3:back", got)
	}
}

func TestStore_scopesAreSeparate(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	s1 := b.store(t, b.r.Client, b.pg.DB, &configstore.Options{Scope: "billing"})
	s2 := b.store(t, b.r.Client, b.pg.DB, &configstore.Options{Scope: "bill}ing:{x}"})
	if s1.Key() == s2.Key() {
		t.Fatalf("same hash %s for two scopes", s1.Key())
	}
	if err := s1.Set(ctx, "k", "one"); err != nil {
		t.Fatal(err)
	}
	if err := s2.Set(ctx, "k", "two"); err != nil {
		t.Fatal(err)
	}
	for s, want := range map[*configstore.Store]string{s1: "one", s2: "two"} {
		if v, err := s.Get(ctx, "k"); err != nil || v != want {
			t.Errorf("scope %q: Get = %q, %v; want %q", s.Scope(), v, err, want)
		}
	}
	if !strings.Contains(s2.Key(), "{bill%7Ding%3A%7Bx%7D}") {
		t.Errorf("scope not escaped into one hash tag: %s", s2.Key())
	}
}

func TestNew_badArguments(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	cases := map[string]func() error{
		"nil client": func() error { _, err := configstore.New(nil, b.pg.DB, nil); return err },
		"nil db":     func() error { _, err := configstore.New(b.r.Client, nil, nil); return err },
		"namespace": func() error {
			_, err := configstore.New(b.r.Client, b.pg.DB, &configstore.Options{Namespace: "a:b"})
			return err
		},
		"long scope": func() error {
			_, err := configstore.New(b.r.Client, b.pg.DB, &configstore.Options{Scope: strings.Repeat("s", 256)})
			return err
		},
		"NUL scope": func() error {
			_, err := configstore.New(b.r.Client, b.pg.DB, &configstore.Options{Scope: "a\x00"})
			return err
		},
	}
	for name, f := range cases {
		if err := f(); !errors.Is(err, configstore.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := configstore.New(b.r.Client, b.pg.DB, nil); err != nil {
		t.Errorf("nil options: %v", err)
	}
}

func TestStore_badInput(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	s := b.store(t, b.r.Client, b.pg.DB, &configstore.Options{MaxValueSize: 16})
	bad := map[string]error{
		"empty key":      s.Set(ctx, "", "v"),
		"long key":       s.Set(ctx, strings.Repeat("k", 1025), "v"),
		"invalid UTF-8":  s.Set(ctx, "k\xff", "v"),
		"NUL in value":   s.Set(ctx, "k", "a\x00b"),
		"huge value":     s.Set(ctx, "k", strings.Repeat("v", 17)),
		"one bad of two": s.SetMany(ctx, map[string]string{"ok": "v", "": "v"}),
		"Get empty key":  func() error { _, err := s.Get(ctx, ""); return err }(),
		"Delete empty":   s.Delete(ctx, ""),
	}
	for name, err := range bad {
		if !errors.Is(err, configstore.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if n := len(dbState(t, b.pg.DB, s.Scope())); n != 0 {
		t.Errorf("%d rows written by rejected calls", n)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Set(cancelled, "k", "v"); !errors.Is(err, context.Canceled) {
		t.Errorf("Set with a cancelled context: %v", err)
	}
	if _, err := s.Get(cancelled, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: %v", err)
	}
	if _, err := s.All(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("All with a cancelled context: %v", err)
	}
	if _, err := s.Watch(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Watch with a cancelled context: %v", err)
	}
}

// A hash entry that this package cannot have written is a miss: the read
// replaces it from the table.
func TestStore_Get_repairsForeignEntry(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	s := b.store(t, b.r.Client, b.pg.DB, nil)
	if err := s.SetMany(ctx, map[string]string{"a": "1", "b": "2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.All(ctx); err != nil { // builds the hash
		t.Fatal(err)
	}
	if err := b.r.Client.HSet(ctx, s.Key(), "a", "garbage", "zombie", "x").Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "a"); err != nil || v != "1" {
		t.Fatalf("Get of a foreign entry = %q, %v; want the table's 1", v, err)
	}
	if _, err := s.Get(ctx, "zombie"); !errors.Is(err, configstore.ErrNotFound) {
		t.Fatalf("Get of a foreign entry not in the table: %v, want ErrNotFound", err)
	}
	all, err := s.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "1", "b": "2"}; !mapsEqual(all, want) {
		t.Fatalf("All = %q, want %q", all, want)
	}
	if h, db := hashState(t, b.r.Client, s.Key()), dbState(t, b.pg.DB, s.Scope()); !mapsEqual(h, db) {
		t.Fatalf("hash = %q, table = %q", h, db)
	}
	if got := s.Stats().Repairs; got != 2 {
		t.Errorf("Stats().Repairs = %d, want 2", got)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
