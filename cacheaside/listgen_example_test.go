package cacheaside_test

import (
	"context"
	"fmt"

	"github.com/asidekit/asidekit/cacheaside"
)

// A list's pages are cached under its generation. A writer reads the
// generation before its COMMIT (Seen) and, after it, appends a line
// saying where its row now is (Patch), which readers apply to the pages
// they cached under the base; a writer that cannot patch (or whose
// generation changed meanwhile) bumps it, and every page reloads.
func ExampleListGenerations() {
	c, cleanup := exampleCache()
	defer cleanup()
	ctx := context.Background()
	lists, err := cacheaside.NewListGenerations(c, "orders.gen.by_customer")
	if err != nil {
		panic(err)
	}
	const list = "customer=7"

	gens, _ := lists.Read(ctx, list) // started: pages are cached under gens[0]
	before := gens[0]

	seen := lists.Seen(ctx, list) // a writer, before its COMMIT
	// ... the writer's COMMIT: order 42 joins the list ...
	patched, _ := lists.Patch(ctx, list, seen[list], "+42")
	gens, _ = lists.Read(ctx, list)
	fmt.Println("patched:", patched, gens[0].Patches, gens[0].Base == before.Base)

	_ = lists.Bump(ctx, list) // a write that cannot patch
	gens, _ = lists.Read(ctx, list)
	fmt.Println("bumped:", gens[0].Patches, gens[0].Base == before.Base)
	// Output:
	// patched: true [+42] true
	// bumped: [] false
}
