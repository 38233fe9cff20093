package repo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

// Every writer of a repository with two unique keys and Bloom filters,
// in a random history: after each write, every id and every unique value
// reads what the table holds, although rows and absences are cached for
// an hour (only the writes' own upkeep can have refreshed them). The
// history is small on purpose (5 ids, 4 values per key), so that values
// move between rows, rows are deleted and come back, and cached absences
// and mappings are read before they change.
func TestWriters_twoUniqueKeys_history(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	if err := e.db.AutoMigrate(&sample.Member{}); err != nil {
		t.Fatal(err)
	}
	members, err := repo.New[sample.Member, int64](e.db, e.cache, &repo.Options{
		Name:         "members",
		UniqueKey:    []string{"email"},
		Policy:       cacheaside.Policy{TTL: time.Hour, NullTTL: time.Hour},
		Filter:       e.filterOptions(1000),
		FilterClient: e.rdb,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = members.Close() })
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	h := newHistory(rng)

	writers := []struct {
		name  string
		write func(m sample.Member) error
	}{
		{"Create", func(m sample.Member) error { return members.Create(ctx, &m) }},
		{"Put", func(m sample.Member) error { return members.Put(ctx, &m) }},
		{"Update", func(m sample.Member) error { return members.Update(ctx, &m) }},
		{"Delete", func(m sample.Member) error { return members.Delete(ctx, m.ID) }},
		{"CreateMany", func(m sample.Member) error { return members.CreateMany(ctx, []sample.Member{m}) }},
		{"PutMany", func(m sample.Member) error { return members.PutMany(ctx, []sample.Member{m}) }},
		{"InsertIfAbsent", func(m sample.Member) error {
			ok, err := members.InsertIfAbsent(ctx, &m)
			if err == nil && !ok {
				return errDuplicate
			}
			return err
		}},
		{"UpdateColumns(handle)", func(m sample.Member) error { return members.UpdateColumns(ctx, &m, "handle") }},
		{"UpdateColumns(email, name)", func(m sample.Member) error { return members.UpdateColumns(ctx, &m, "Email", "name") }},
		{"Modify", func(m sample.Member) error {
			_, err := members.Modify(ctx, m.ID,
				map[string]any{"email": m.Email, "name": gorm.Expr("left(name, 10) || ?", "+")},
				gorm.Expr("handle <> ?", m.Handle))
			return err
		}},
		{"Transaction+Put", func(m sample.Member) error {
			return repo.Transaction(ctx, e.db, func(tx *repo.Tx) error { return members.WithTx(tx).Put(ctx, &m) })
		}},
		{"Transaction+Delete", func(m sample.Member) error {
			return repo.Transaction(ctx, e.db, func(tx *repo.Tx) error { return members.WithTx(tx).Delete(ctx, m.ID) })
		}},
	}
	h.check(t, ctx, members, "start")
	for step := range 300 {
		w := writers[rng.IntN(len(writers))]
		m := h.randomRow()
		err := w.write(m)
		what := fmt.Sprintf("step %d: %s(%+v)", step, w.name, m)
		switch {
		case err == nil:
		case errors.Is(err, repo.ErrNotFound), errors.Is(err, repo.ErrDuplicate), errors.Is(err, errDuplicate),
			errors.Is(err, repo.ErrConditionFailed),
			isUniqueViolation(err):
			// Refused by the table: nothing changed.
		default:
			t.Fatalf("%s: %v", what, err)
		}
		h.reload(t, e, what)
		h.check(t, ctx, members, what)
	}
}

var errDuplicate = errors.New("duplicate")

func isUniqueViolation(err error) bool {
	var coded interface{ SQLState() string }
	return errors.As(err, &coded) && coded.SQLState() == "23505"
}

// history is the table's content as a test knows it, and the domain of
// its random rows.
type history struct {
	rng  *rand.Rand
	rows map[int64]sample.Member
}

func newHistory(rng *rand.Rand) *history { return &history{rng: rng, rows: map[int64]sample.Member{}} }

func (h *history) randomRow() sample.Member {
	n := h.rng.IntN(1000)
	return sample.Member{
		ID:     1 + h.rng.Int64N(5),
		Email:  fmt.Sprintf("e%d", 1+h.rng.IntN(4)),
		Handle: fmt.Sprintf("h%d", 1+h.rng.IntN(4)),
		Name:   fmt.Sprintf("n%d", n),
	}
}

// reload reads the table (the truth) with plain SQL.
func (h *history) reload(t *testing.T, e *env, what string) {
	t.Helper()
	var rows []sample.Member
	if err := e.db.Find(&rows).Error; err != nil {
		t.Fatalf("%s: read the table: %v", what, err)
	}
	h.rows = map[int64]sample.Member{}
	for _, r := range rows {
		h.rows[r.ID] = r
	}
}

// check reads every id and every value of both unique keys through the
// repository and compares with the table.
func (h *history) check(t *testing.T, ctx context.Context, r *repo.Repository[sample.Member, int64], what string) {
	t.Helper()
	for id := int64(1); id <= 5; id++ {
		got, err := r.Get(ctx, id)
		want, ok := h.rows[id]
		switch {
		case ok && (err != nil || got != want):
			t.Fatalf("%s: Get(%d) = %+v, %v; want %+v", what, id, got, err, want)
		case !ok && !errors.Is(err, repo.ErrNotFound):
			t.Fatalf("%s: Get(%d) = %+v, %v; want ErrNotFound", what, id, got, err)
		}
	}
	for _, col := range []string{"email", "handle"} {
		for i := 1; i <= 4; i++ {
			v := fmt.Sprintf("%c%d", col[0], i)
			var want *sample.Member
			for _, m := range h.rows {
				if (col == "email" && m.Email == v) || (col == "handle" && m.Handle == v) {
					want = &m
				}
			}
			got, err := r.GetBy(ctx, col, v)
			switch {
			case want != nil && (err != nil || got != *want):
				t.Fatalf("%s: GetBy(%s, %s) = %+v, %v; want %+v", what, col, v, got, err, *want)
			case want == nil && !errors.Is(err, repo.ErrNotFound):
				t.Fatalf("%s: GetBy(%s, %s) = %+v, %v; want ErrNotFound", what, col, v, got, err)
			}
		}
	}
}
