package seqgen_test

import (
	"context"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/seqgen"
)

func ExampleGenerator_Peek() {
	rdb, db, name, cleanup := exampleBackends()
	defer cleanup()

	at := time.Date(2026, 11, 29, 9, 30, 0, 0, time.UTC)
	gen, err := seqgen.New(rdb, db, &seqgen.Options{Namespace: name, Location: time.UTC,
		Clock: func() time.Time { return at }, Prefix: func(string) string { return "ORD" }})
	if err != nil {
		panic(err)
	}
	defer gen.Close()

	ctx := context.Background()
	biz := name + "-orders"
	_, _ = gen.NextN(ctx, biz, 2)
	p, _ := gen.Peek(ctx, biz, at) // issues nothing
	fmt.Println(p.Last, p.Next, p.DBMark >= p.Last)
	next, _ := gen.Next(ctx, biz)
	fmt.Println(next)
	// Output:
	// 2 ORD2026112900003 true
	// ORD2026112900003
}
