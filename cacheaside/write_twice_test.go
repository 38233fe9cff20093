package cacheaside

import (
	"context"
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
)

// A write.lua that Redis runs twice with the same token (the client resent
// it after its reply was lost), the second time after another writer's,
// stores a version no load can hold: a load that read the version of the
// first run has its fill refused, as the other writer's write requires.
func TestWrite_appliedTwice(t *testing.T) {
	t.Parallel()
	rn := testcontainers.Redis(t)
	c := newCache(t, rn.Client, rn.Namespace, nil)
	e := newEntity[user](t, c, "u", Policy{})
	ctx := context.Background()
	key, err := e.Key("1")
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{key, key + ":ver"}
	run := func(tok, pos string) string {
		t.Helper()
		if err := writeScript.Run(ctx, rn.Client, keys, tok, e.verPX, pos).Err(); err != nil {
			t.Fatal(err)
		}
		return rn.Client.Get(ctx, key+":ver").Val()
	}
	loadedVersion(t, e, "1")
	first := run("resent", "00000000000000a0")
	run("other", "0000000000000010")
	again := run("resent", "00000000000000a0")
	if again == first {
		t.Fatalf("the resent write brought back version %q, which a load may hold", first)
	}
	if got := tokenLSN(again); got != 0xa0 {
		t.Fatalf("version %q records position %X, want A0", again, got)
	}
}
