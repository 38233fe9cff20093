package repo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/internal/testkit"
	"github.com/asidekit/asidekit/repo"
)

func TestRepository_Inspect_badInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{})
	ctx := context.Background()
	u := sample.User{ID: 1, Email: "a@example.com", Name: "A"}
	if err := users.Create(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if _, err := users.Get(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, o := range []repo.InspectOptions{{Rate: -1}, {For: -1}, {Max: -1}, {Grace: -1}, {SampleSize: -1}} {
		if _, err := users.Inspect(ctx, o); !errors.Is(err, repo.ErrInvalid) {
			t.Errorf("Inspect(%+v) = %v, want ErrInvalid", o, err)
		}
	}
	err := repo.Transaction(ctx, e.db, func(tx *repo.Tx) error {
		_, err := users.WithTx(tx).Inspect(ctx, repo.InspectOptions{})
		return err
	})
	if !errors.Is(err, repo.ErrInvalid) {
		t.Errorf("Inspect in a transaction = %v, want ErrInvalid", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := users.Inspect(cancelled, inspectOptions(&testkit.Logs{})); !errors.Is(err, context.Canceled) {
		t.Errorf("Inspect(cancelled) = %v, want context.Canceled", err)
	}
	// Max bounds the items judged.
	o := inspectOptions(&testkit.Logs{})
	o.Max = 1
	rep, err := users.Inspect(ctx, o)
	if err != nil || rep.Inspected != 1 || rep.Violations() != 0 {
		t.Errorf("Inspect(Max 1) = %+v, %v", rep.InspectStats, err)
	}
	// A database that is gone is an error, not a verdict.
	sqlDB, err := e.db.DB()
	if err != nil {
		t.Fatal(err)
	}
	_ = sqlDB.Close()
	if rep, err := users.Inspect(ctx, inspectOptions(&testkit.Logs{})); err == nil || rep.Violations() != 0 {
		t.Errorf("Inspect(closed database) = %+v, %v; want an error", rep.InspectStats, err)
	}
}
