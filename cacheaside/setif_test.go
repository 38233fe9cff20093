package cacheaside

import (
	"context"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/token"
	"github.com/asidekit/asidekit/testcontainers"
)

// SetIfVersion stores a writer's value when the version is still the one
// it read before its write, and deletes the entry when another
// invalidation came between: two writers whose upkeeps run out of order
// never leave the older value. A load that began before it has its fill
// refused either way.
func TestSetIfVersion(t *testing.T) {
	t.Parallel()
	rn := testcontainers.Redis(t)
	c := newCache(t, rn.Client, rn.Namespace, nil)
	e := newEntity[user](t, c, "u", Policy{})
	ctx := context.Background()
	loads := 0
	get := func() user {
		t.Helper()
		u, err := e.Get(ctx, "1", func(context.Context, string) (user, error) {
			loads++
			return user{ID: "1", Name: "from the database"}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	version := func() string {
		t.Helper()
		v, err := e.Version(ctx, "1")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	// No version yet, none since: stored.
	v0 := version()
	if stored, err := e.SetIfVersion(ctx, "1", v0, user{ID: "1", Name: "first"}); err != nil || !stored {
		t.Fatalf("SetIfVersion = %v, %v; want stored", stored, err)
	}
	if u := get(); u.Name != "first" || loads != 0 {
		t.Fatalf("Get = %+v after %d loads, want the stored value and no load", u, loads)
	}

	// Two writers: the older one's upkeep comes last, and finds the
	// version replaced by the newer one's.
	older, newer := version(), version()
	if stored, err := e.SetIfVersion(ctx, "1", newer, user{ID: "1", Name: "newer"}); err != nil || !stored {
		t.Fatalf("newer SetIfVersion = %v, %v; want stored", stored, err)
	}
	if stored, err := e.SetIfVersion(ctx, "1", older, user{ID: "1", Name: "older"}); err != nil || stored {
		t.Fatalf("older SetIfVersion = %v, %v; want not stored", stored, err)
	}
	if u := get(); u.Name != "from the database" || loads != 1 {
		t.Fatalf("Get = %+v after %d loads, want a load after the late write's delete", u, loads)
	}

	// An invalidation between the read and the write: deleted, not stored.
	v := version()
	if err := e.Invalidate(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	if stored, err := e.SetIfVersion(ctx, "1", v, user{ID: "1", Name: "late"}); err != nil || stored {
		t.Fatalf("SetIfVersion after an invalidation = %v, %v; want not stored", stored, err)
	}
	if u := get(); u.Name != "from the database" || loads != 2 {
		t.Fatalf("Get = %+v after %d loads, want a load", u, loads)
	}

	// A load that read the version before SetIfVersion cannot store over it.
	v = version()
	key, _ := e.Key("1")
	tok, _, err := readVersion(ctx, e, key)
	if err != nil {
		t.Fatal(err)
	}
	if stored, err := e.SetIfVersion(ctx, "1", v, user{ID: "1", Name: "written"}); err != nil || !stored {
		t.Fatalf("SetIfVersion = %v, %v; want stored", stored, err)
	}
	if tok == version() {
		t.Fatal("SetIfVersion kept the version a load read before it")
	}

	if _, err := e.SetIfVersion(ctx, "", v, user{}); err == nil {
		t.Error("SetIfVersion of an empty id: no error")
	}
	if _, err := e.Version(ctx, ""); err == nil {
		t.Error("Version of an empty id: no error")
	}
}

// readVersion runs version.lua for key as a load does before it reads the
// source of truth.
func readVersion(ctx context.Context, e *Entity[user], key string) (ver string, entry []byte, err error) {
	res, err := versionScript.Run(ctx, e.c.client, []string{key, key + ":ver"}, token.New(), e.verPX, time.Now().UnixMilli()).Slice()
	if err != nil {
		return "", nil, err
	}
	return parseVersion(res)
}
