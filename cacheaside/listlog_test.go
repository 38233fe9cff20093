package cacheaside

import (
	"context"
	"strings"
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
)

// Lines from the log (PatchFromLog) are appended to a generation that
// carries none but log lines, in position order, up to the cap; a
// writer's line (Patch), a position not after the last one (the same
// batch sent again, or another reader replaying the log) and a full
// generation bump it instead. The effects of one list in one Effects are
// one call, their lines in the order added; an absent key is bumped (no
// page of it is reachable).
func TestPatchFromLog(t *testing.T) {
	r := testcontainers.Redis(t)
	c := newCache(t, r.Client, r.Namespace, nil)
	g := newListGenerations(t, c)
	ctx := context.Background()
	const id = `("1")`
	run := func(effects ...Effect) {
		t.Helper()
		var w Effects
		w.Add(effects...)
		if err := w.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	logged := func(gen Generation) []string {
		var out []string
		for _, l := range gen.Patches {
			_, patch, ok := Logged(l)
			if !ok {
				out = append(out, "writer:"+l)
				continue
			}
			out = append(out, patch)
		}
		return out
	}

	start := readOne(t, g, id)
	run(PatchFromLog(g, id, LogPos{LSN: 100, Xid: 7}, "+0a 1"), PatchFromLog(g, id, LogPos{LSN: 200, Xid: 8}, "-2"),
		PatchFromLog(g, `("2")`, LogPos{LSN: 200, Xid: 8}, "+0b 2"))
	got := readOne(t, g, id)
	if got.Base != start.Base || strings.Join(logged(got), ",") != "+0a 1,-2" {
		t.Fatalf("after two lines: %+v (started %+v)", got, start)
	}
	if xid, patch, ok := Logged(got.Patches[1]); !ok || xid != 8 || patch != "-2" {
		t.Errorf("Logged(%q) = %d, %q, %v", got.Patches[1], xid, patch, ok)
	}
	if s := g.Stats(); s.Patches != 2 || s.Bumps != 1 { // list 2 had no generation: bumped
		t.Errorf("stats %+v, want 2 patches and a bump", s)
	}

	// The same batch again: its first position is not after the last.
	run(PatchFromLog(g, id, LogPos{LSN: 200, Xid: 8}, "-2"))
	if again := readOne(t, g, id); again.Base == got.Base || len(again.Patches) != 0 {
		t.Fatalf("a line at a position already there: %+v, want a bump", again)
	}

	// After a writer's line, a log line bumps.
	base := readOne(t, g, id)
	if ok, err := g.Patch(ctx, id, base.Exact(), "+0c 3"); err != nil || !ok {
		t.Fatalf("Patch = %v, %v", ok, err)
	}
	run(PatchFromLog(g, id, LogPos{LSN: 300, Xid: 9}, "-3"))
	if after := readOne(t, g, id); after.Base == base.Base || len(after.Patches) != 0 {
		t.Fatalf("a log line after a writer's: %+v, want a bump", after)
	}

	// Up to the cap, then a bump.
	base = readOne(t, g, id)
	for i := range maxListPatches {
		run(PatchFromLog(g, id, LogPos{LSN: uint64(400 + i), Xid: 10}, "-4"))
	}
	if full := readOne(t, g, id); full.Base != base.Base || len(full.Patches) != maxListPatches {
		t.Fatalf("after %d lines: base %q, %d lines", maxListPatches, full.Base, len(full.Patches))
	}
	run(PatchFromLog(g, id, LogPos{LSN: 1000, Xid: 11}, "-4"))
	if over := readOne(t, g, id); over.Base == base.Base {
		t.Fatalf("a line past the cap: %+v, want a bump", over)
	}

	// An absent key: a bump.
	if err := r.Client.Del(ctx, mustKey(t, g, `("9")`)).Err(); err != nil {
		t.Fatal(err)
	}
	run(PatchFromLog(g, `("9")`, LogPos{LSN: 2000, Xid: 12}, "-9"))
	if n := readOne(t, g, `("9")`); len(n.Patches) != 0 || !strings.HasSuffix(n.Base, "#1") {
		t.Fatalf("a line for an absent key: %+v, want a new base", n)
	}

	for _, bad := range []string{"", "+0a 1", "@12 7 -1", "@0000000000000064 x -1", "@0000000000000064 7"} {
		if _, _, ok := Logged(bad); ok {
			t.Errorf("Logged(%q) parses", bad)
		}
	}
}

func mustKey(t *testing.T, g *ListGenerations, id string) string {
	t.Helper()
	k, err := g.Key(id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Patches are kept one by one (two writes' patches of one list: the
// first appends, the second bumps, whatever their order); JoinPatches (a
// transaction's) makes those that compare the same value one call, their
// lines in order; BumpPatches (a transaction whose COMMIT's outcome is
// unknown) turns them into a bump.
func TestPatch_joinedAndBumped(t *testing.T) {
	r := testcontainers.Redis(t)
	c := newCache(t, r.Client, r.Namespace, nil)
	g := newListGenerations(t, c)
	ctx := context.Background()
	const id = `("1")`
	start := readOne(t, g, id)
	var w Effects
	w.Add(Patch(g, id, start.Exact(), "+0a 1"), Patch(g, id, start.Exact(), "-2"))
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readOne(t, g, id); got.Base == start.Base {
		t.Fatalf("two writes' Patches of one seen value: %+v, want a bump", got)
	}
	start = readOne(t, g, id)
	w.Reset()
	w.Add(Patch(g, id, start.Exact(), "+0a 1"), Bump(g, `("2")`), Patch(g, id, start.Exact(), "-1"))
	w.JoinPatches()
	if w.Len() != 3 {
		t.Errorf("Len after JoinPatches = %d, want 3", w.Len())
	}
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readOne(t, g, id); got.Base != start.Base || strings.Join(got.Patches, ",") != "+0a 1,-1" {
		t.Fatalf("a transaction's two Patches of one seen value: %+v, want both lines in order", got)
	}
	now := readOne(t, g, id)
	w.Reset()
	w.Add(Patch(g, id, now.Exact(), "+0b 2"))
	w.BumpPatches()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readOne(t, g, id); got.Base == now.Base || len(got.Patches) != 0 {
		t.Fatalf("after BumpPatches: %+v, want a new base", got)
	}
	if s := g.Stats(); s.Patches != 3 || s.Bumps != 3 {
		t.Errorf("stats %+v, want 3 lines patched and 3 bumps", s)
	}
}
