package repo_test

import (
	"context"
	"fmt"

	"github.com/asidekit/asidekit/repo"
)

// A cached list of products by category, newest first, read page by page,
// and its count; a move to another category invalidates both categories'
// lists and no other.
func ExampleNewQuery() {
	db, _, cache, _, cleanup := exampleSetup()
	defer cleanup()
	ctx := context.Background()
	if err := db.AutoMigrate(&qitem{}); err != nil {
		panic(err)
	}
	items, err := repo.New[qitem, int64](db, cache, nil)
	if err != nil {
		panic(err)
	}
	byCategory, err := repo.NewQuery(items, repo.QueryOf{
		Name:  "by_category",
		Where: []string{"category_id"},
		Order: "created_at DESC, id",
	})
	if err != nil {
		panic(err)
	}
	for i := range 5 {
		if err := items.Create(ctx, &qitem{CategoryID: 7, CreatedAt: t0.AddDate(0, 0, i), Price: 100}); err != nil {
			panic(err)
		}
	}
	var ids []int64
	page := repo.Page{Size: 2}
	for {
		rows, next, err := byCategory.List(ctx, page, 7)
		if err != nil {
			panic(err)
		}
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		if next == "" {
			break
		}
		page.After = next
	}
	fmt.Println(ids)

	moved := qitem{ID: 5, CategoryID: 3, CreatedAt: t0.AddDate(0, 0, 4), Price: 100}
	if err := items.Update(ctx, &moved); err != nil {
		panic(err)
	}
	in7, _ := byCategory.Count(ctx, 7)
	in3, _ := byCategory.Count(ctx, 3)
	// Five inserts changed list 7 once each, the move 7 and 3: seven
	// invalidations. Five were patches of the cached pages; the first write
	// of each list found no generation yet, and started one.
	s := byCategory.Stats()
	fmt.Println(in7, in3, s.Invalidations, s.Patches)
	// Output:
	// [5 4 3 2 1]
	// 4 1 7 5
}
