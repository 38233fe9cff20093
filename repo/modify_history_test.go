package repo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/repo"
)

// stockRow is a row without a unique key or a cached query: Modify's
// UPDATE is not guarded (nothing is read before it), so a row absent when
// the UPDATE ran and back before Modify asked why is the case its
// conditional re-run must answer.
type stockRow struct {
	ID  string `gorm:"primaryKey;size:64"`
	Qty int64  `gorm:"not null"`
}

// rowClass is what a Modify with the condition "qty >= 1" (price for
// products) can find of a row: absent, meeting the condition, failing it.
type rowClass int

const (
	classAbsent rowClass = iota
	classMeets
	classFails
)

// plentiful is the quantity a row that meets the condition is given: the
// decrements of one history never bring it to 0.
const plentiful = 1 << 30

// classOp is one change of a row's class by the plain-SQL writer, which
// took effect at some instant between start and end.
type classOp struct {
	start, end time.Time
	class      rowClass
}

// modifyCall is one Modify and what it answered.
type modifyCall struct {
	row        int
	start, end time.Time
	got        rowClass // what the answer says the row was: modified (meets), ErrNotFound, ErrConditionFailed
}

// modifyScene is one table of the Modify history: the SQL that changes
// its rows' class, and the Modify under test.
type modifyScene struct {
	table  string
	column string // the quantity column the condition reads
	insert func(id string, qty int64) (string, []any)
	modify func(ctx context.Context, id string) error
}

// Modify with a condition answers, for each call, what the row was at
// some instant during the call, while a plain-SQL writer deletes the rows,
// inserts them again and flips them between meeting the condition and
// failing it: modified only if the row met it then, ErrNotFound only if
// it was absent then, ErrConditionFailed only if it failed it then. For a
// table whose writes are guarded (a unique key: the read before the write,
// and the locked run in a transaction) and one whose are not. With the
// locked run off (see TestModify_historyFailsLockOff), a row
// absent at the UPDATE and back, meeting the condition, by the time Modify
// asks why is answered ErrConditionFailed.
func TestModify_history(t *testing.T) {
	t.Parallel()
	for _, guarded := range []bool{false, true} {
		t.Run(fmt.Sprint("guarded=", guarded), func(t *testing.T) {
			t.Parallel()
			if wrong := modifyHistory(t, guarded); len(wrong) > 0 {
				t.Fatalf("%d wrong answers, first: %s", len(wrong), wrong[0])
			}
		})
	}
}

// With Modify's locked run off, the history finds a wrong answer: a row
// absent when the UPDATE ran, back and meeting the condition when Modify
// asked why, answered ErrConditionFailed. Not parallel: the switch is
// process-wide.
func TestModify_historyFailsLockOff(t *testing.T) {
	testswitch.ModifyLockOff.Store(true)
	defer testswitch.ModifyLockOff.Store(false)
	const plays = 8
	for play := 1; play <= plays; play++ {
		if wrong := modifyHistory(t, false); len(wrong) > 0 {
			t.Logf("play %d: %d wrong answers, first: %s", play, len(wrong), wrong[0])
			return
		}
	}
	t.Fatalf("no wrong answer in %d plays: the history shows nothing", plays)
}

// modifyHistory plays one history on a table of its own and returns the
// wrong answers.
func modifyHistory(t *testing.T, guarded bool) []string {
	t.Helper()
	const (
		rows      = 3
		modifiers = 4
		calls     = 150 // per modifier
	)
	e := newEnv(t)
	ctx := context.Background()
	s := stockScene(t, e)
	if guarded {
		s = productScene(t, e)
	}
	ids := make([]string, rows)
	for i := range ids {
		ids[i] = fmt.Sprint("m", i)
		q, args := s.insert(ids[i], plentiful)
		if err := e.db.Exec(q, args...).Error; err != nil {
			t.Fatal(err)
		}
	}
	ops := make([][]classOp, rows) // by row; one writer per row, so in order
	var stop sync.WaitGroup
	done := make(chan struct{})
	for i := range ids {
		stop.Add(1)
		go func() {
			defer stop.Done()
			rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			cur := classMeets
			for {
				select {
				case <-done:
					return
				default:
				}
				next, q, args := s.change(ids[i], cur, rng)
				op := classOp{start: time.Now(), class: next}
				if err := e.db.Exec(q, args...).Error; err != nil {
					t.Error(err)
					return
				}
				op.end = time.Now()
				ops[i] = append(ops[i], op)
				cur = next
			}
		}()
	}
	results := make([][]modifyCall, modifiers)
	var wg sync.WaitGroup
	for m := range modifiers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(m), uint64(time.Now().UnixNano())))
			for range calls {
				c := modifyCall{row: rng.IntN(rows), start: time.Now()}
				err := s.modify(ctx, ids[c.row])
				c.end = time.Now()
				switch {
				case err == nil:
					c.got = classMeets
				case errors.Is(err, repo.ErrNotFound):
					c.got = classAbsent
				case errors.Is(err, repo.ErrConditionFailed):
					c.got = classFails
				default:
					t.Error(err)
					return
				}
				results[m] = append(results[m], c)
			}
		}()
	}
	wg.Wait()
	close(done)
	stop.Wait()
	var wrong []string
	for _, rs := range results {
		for _, c := range rs {
			if !possible(ops[c.row], c) {
				wrong = append(wrong, fmt.Sprintf("row %d: Modify answered %s, but the row was never that during the call (%s)", c.row, className(c.got), classesDuring(ops[c.row], c)))
			}
		}
	}
	return wrong
}

// during returns the classes row could have had at some instant of c: the
// class left by the last change that ended before c began (meets before
// the first), and those of the changes running or made during c.
func during(ops []classOp, c modifyCall) []rowClass {
	from := 0
	out := []rowClass{classMeets}
	for i, op := range ops {
		if !op.end.After(c.start) {
			from = i
			out = []rowClass{op.class}
		}
	}
	for _, op := range ops[from:] {
		if op.start.Before(c.end) && op.end.After(c.start) {
			out = append(out, op.class)
		}
	}
	return out
}

func possible(ops []classOp, c modifyCall) bool {
	for _, cl := range during(ops, c) {
		if cl == c.got {
			return true
		}
	}
	return false
}

func classesDuring(ops []classOp, c modifyCall) string {
	var names []string
	for _, cl := range during(ops, c) {
		names = append(names, className(cl))
	}
	return fmt.Sprint(names)
}

func className(c rowClass) string {
	return [...]string{"absent", "meets", "fails"}[c]
}

// change picks the plain-SQL writer's next change of a row of class cur:
// an absent row is inserted, meeting the condition or failing it; a
// present one is deleted or flipped.
func (s modifyScene) change(id string, cur rowClass, rng *rand.Rand) (rowClass, string, []any) {
	qty := func(c rowClass) int64 {
		if c == classMeets {
			return plentiful
		}
		return 0
	}
	if cur == classAbsent {
		next := classMeets
		if rng.IntN(3) == 0 {
			next = classFails
		}
		q, args := s.insert(id, qty(next))
		return next, q, args
	}
	if rng.IntN(2) == 0 {
		return classAbsent, fmt.Sprintf("DELETE FROM %s WHERE id = ?", s.table), []any{id}
	}
	next := classMeets + classFails - cur
	return next, fmt.Sprintf("UPDATE %s SET %s = ? WHERE id = ?", s.table, s.column), []any{qty(next), id}
}

func stockScene(t *testing.T, e *env) modifyScene {
	t.Helper()
	if err := e.db.AutoMigrate(&stockRow{}); err != nil {
		t.Fatal(err)
	}
	stock, err := repo.New[stockRow, string](e.db, e.cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stock.Close() })
	return modifyScene{
		table: "stock_rows", column: "qty",
		insert: func(id string, qty int64) (string, []any) {
			return "INSERT INTO stock_rows (id, qty) VALUES (?, ?)", []any{id, qty}
		},
		modify: func(ctx context.Context, id string) error {
			_, err := stock.Modify(ctx, id, map[string]any{"qty": gorm.Expr("qty - 1")}, gorm.Expr("qty >= 1"))
			return err
		},
	}
}

func productScene(t *testing.T, e *env) modifyScene {
	t.Helper()
	products := e.products(t, repo.Options{})
	return modifyScene{
		table: "products", column: "price",
		insert: func(id string, qty int64) (string, []any) {
			return "INSERT INTO products (id, slug, name, price) VALUES (?, ?, 'p', ?)", []any{id, "s-" + id, qty}
		},
		modify: func(ctx context.Context, id string) error {
			_, err := products.Modify(ctx, id, map[string]any{"price": gorm.Expr("price - 1")}, gorm.Expr("price >= 1"))
			return err
		},
	}
}
