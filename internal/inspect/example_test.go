package inspect_test

import (
	"context"
	"fmt"

	"github.com/asidekit/asidekit/internal/inspect"
)

// A walk of two items: one agrees, one is stale at both looks.
func ExampleRun_Do() {
	look := func(_ context.Context, id string) (inspect.Look, error) {
		lk := inspect.Look{Entity: "users", ID: id}
		if id == "2" {
			return lk.As(inspect.Stale), nil
		}
		return lk, nil
	}
	r := inspect.New(inspect.Options{Rate: 1000})
	walk := func(ctx context.Context) (bool, error) {
		for _, id := range []string{"1", "2"} {
			if err := r.Judge(ctx, id, look, nil); err != nil {
				return false, err
			}
		}
		return true, nil
	}
	rep, err := r.Do(context.Background(), walk)
	if err != nil {
		panic(err)
	}
	fmt.Println(rep.Inspected, rep.Consistent, rep.Stale, rep.Found[0].Kind, rep.Found[0].ID)
	// Output: 2 1 1 stale 2
}
