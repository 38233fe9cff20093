package cacheaside_test

import (
	"context"
	"fmt"

	"github.com/asidekit/asidekit/cacheaside"
)

// A writer that stores its row after the COMMIT (StoreIfVersion) and
// patches the lists it moves the row between (Patch) reads, before its
// statement, the row's version and the lists' generations: ReadBefore
// sends those reads in one round trip.
func ExampleEntity_ReadBefore() {
	c, cleanup := exampleCache()
	defer cleanup()
	ctx := context.Background()
	users, err := cacheaside.NewEntity[User](c, "user", cacheaside.Policy{})
	if err != nil {
		panic(err)
	}
	byName, err := cacheaside.NewListGenerations(c, "user.gen.by_name")
	if err != nil {
		panic(err)
	}
	_, _ = byName.Read(ctx, "Ada", "Grace") // both lists cached

	// User 1 is renamed Ada → Grace: it leaves one list and joins the other.
	seen := users.ReadBefore(ctx, "1", true, []cacheaside.ListRead{{Lists: byName, IDs: []string{"Ada", "Grace"}}})
	if seen.VersionErr != nil {
		panic(seen.VersionErr) // Redis failing: the writer would invalidate instead
	}
	// ... the UPDATE and its COMMIT ...
	var effects cacheaside.Effects
	effects.Add(
		cacheaside.StoreIfVersion(users, "1", seen.Version, User{ID: 1, Name: "Grace"}),
		cacheaside.Patch(byName, "Ada", seen.Lists[0]["Ada"], "-1"),
		cacheaside.Patch(byName, "Grace", seen.Lists[0]["Grace"], "+1"),
	)
	if err := effects.Run(ctx); err != nil {
		panic(err)
	}
	u, _ := users.Get(ctx, "1", loadUser) // stored: no db query
	gens, _ := byName.Read(ctx, "Ada", "Grace")
	fmt.Println(u.Name, gens[0].Patches, gens[1].Patches)
	// Output:
	// Grace [-1] [+1]
}
