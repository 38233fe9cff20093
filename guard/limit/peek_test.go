package limit

import (
	"context"
	"errors"
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
)

// TestPeek: Peek finds the state of each algorithm under its own key, and
// changes nothing: the limiter's next call counts from where it was.
func TestPeek(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	want := map[string]string{"fixed_window": "fw", "fixed_window_lockout": "fw", "sliding_log": "sl",
		"sliding_window": "sw", "gcra": "gcra", "funnel": "fun"}
	for _, a := range algos {
		t.Run(a.name, func(t *testing.T) {
			lim, err := a.build(r.Client, &Options{Namespace: r.Namespace})
			if err != nil {
				t.Fatal(err)
			}
			key := "peek:" + a.name
			if st, err := Peek(ctx, r.Client, key, &Options{Namespace: r.Namespace}); err != nil || len(st) != 0 {
				t.Fatalf("Peek of an unused key: %+v, %v", st, err)
			}
			if _, err := lim.AllowN(ctx, key, 2); err != nil {
				t.Fatal(err)
			}
			st, err := Peek(ctx, r.Client, key, &Options{Namespace: r.Namespace})
			if err != nil || len(st) != 1 || st[0].Algorithm != want[a.name] || st[0].TTL <= 0 ||
				(len(st[0].Fields) == 0 && st[0].Members == 0) {
				t.Fatalf("Peek: %+v, %v", st, err)
			}
			if _, err := Peek(ctx, r.Client, key, &Options{Namespace: r.Namespace}); err != nil {
				t.Fatal(err)
			}
			res, err := lim.Allow(ctx, key)
			if err != nil || !res.Allowed || res.Remaining != 0 {
				t.Fatalf("Allow after two Peeks: %+v, %v (want the third of 3 calls)", res, err)
			}
		})
	}
	if _, err := Peek(ctx, r.Client, "", nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Peek of an empty key: %v", err)
	}
	if _, err := Peek(ctx, nil, "k", nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Peek with a nil client: %v", err)
	}
}
