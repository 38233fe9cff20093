package seqgen_test

import (
	"context"
	"errors"
	"testing"

	"github.com/asidekit/asidekit/seqgen"
)

// TestGenerator_Peek: Peek reports the counter, the marks and what the next
// number will be, and changes nothing: the Next after it returns the number
// it predicted, and a Peek of an unused day creates no key.
func TestGenerator_Peek(t *testing.T) {
	e := newEnv(t)
	g := e.gen(t, func(o *seqgen.Options) { o.Prefix = func(string) string { return "ORD" } })
	ctx := context.Background()

	p, err := g.Peek(ctx, "orders", noon)
	if err != nil {
		t.Fatal(err)
	}
	if p.Exists || p.Last != 0 || p.Mark != 0 || p.DBMark != 0 || p.Lease != "" || p.Next != "ORD2026112900001" || p.Day.Key != "20261129" {
		t.Fatalf("unused day: %+v", p)
	}
	if n, err := e.r.Client.Exists(ctx, p.Key, p.Key+":hw", p.Key+":lease").Result(); err != nil || n != 0 {
		t.Fatalf("Peek of an unused day left %d keys (%v)", n, err)
	}
	for i := 0; i < 3; i++ {
		if _, err := g.Next(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
	}
	p, err = g.Peek(ctx, "orders", noon)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Exists || p.Last != 3 || p.Mark < 3 || p.DBMark < p.Mark || p.Next != "ORD2026112900004" {
		t.Fatalf("after 3 numbers: %+v", p)
	}
	again, err := g.Peek(ctx, "orders", noon)
	if err != nil || again != p {
		t.Fatalf("a second Peek: %+v (%v), want %+v", again, err, p)
	}
	if next, err := g.Next(ctx, "orders"); err != nil || next != p.Next {
		t.Fatalf("Next after Peek: %q (%v), want %q", next, err, p.Next)
	}
	if got := dbMark(t, e.pg.DB, "orders", "20261129"); got != p.DBMark {
		t.Fatalf("DBMark %d, the table says %d", p.DBMark, got)
	}
	if _, err := g.Peek(ctx, "", noon); !errors.Is(err, seqgen.ErrInvalid) {
		t.Fatalf("Peek of an empty biz: %v, want ErrInvalid", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g.Peek(cctx, "orders", noon); !errors.Is(err, context.Canceled) {
		t.Fatalf("Peek with a cancelled context: %v", err)
	}
}
