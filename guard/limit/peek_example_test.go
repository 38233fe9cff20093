package limit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/guard/limit"
)

func ExamplePeek() {
	rdb := exampleClient()
	defer rdb.Close()
	ctx := context.Background()

	lim, err := limit.NewFixedWindow(rdb, limit.FixedWindow{Limit: 3, Window: time.Minute}, nil)
	if err != nil {
		panic(err)
	}
	key := unique("example:login:")
	defer lim.Reset(ctx, key)
	_, _ = lim.AllowN(ctx, key, 2)

	states, err := limit.Peek(ctx, rdb, key, nil) // counts nothing
	if err != nil {
		panic(err)
	}
	for _, st := range states {
		fmt.Println(st.Algorithm, st.Type, st.TTL > 0)
	}
	// Output:
	// fw string true
}
