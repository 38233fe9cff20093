package repo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

// isNotFound checks that err matches all three not-found sentinels.
func isNotFound(t *testing.T, err error) {
	t.Helper()
	for _, target := range []error{repo.ErrNotFound, cacheaside.ErrNotFound, gorm.ErrRecordNotFound} {
		if !errors.Is(err, target) {
			t.Fatalf("error %v does not match %v", err, target)
		}
	}
}

// The sample service: create, read twice, update, delete, read a batch.
func TestRepository_sampleService(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{})
	ctx := context.Background()

	u := sample.User{Email: "ada@example.com", Name: "Ada"}
	if err := users.Create(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if u.ID == 0 {
		t.Fatal("Create did not fill in the id")
	}

	// create, then get: one SQL statement, the second get from the cache.
	e.reset()
	got, err := users.Get(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Email != u.Email || got.Name != u.Name {
		t.Fatalf("first get = %+v, want %+v", got, u)
	}
	if n := e.sql.Count(""); n != 1 {
		t.Fatalf("first get ran %d SQL statements, want 1: %q", n, e.sql.All())
	}
	hits := users.Stats().Hits
	e.reset()
	again, err := users.Get(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.sql.Count(""); n != 0 {
		t.Fatalf("second get ran %d SQL statements, want 0: %q", n, e.sql.All())
	}
	if n := e.cmds.count("get"); n != 1 || e.cmds.count("") != 1 {
		t.Fatalf("second get sent %d GETs and %d commands, want 1 and 1", n, e.cmds.count(""))
	}
	if users.Stats().Hits != hits+1 {
		t.Fatalf("second get was not a cache hit: %+v", users.Stats())
	}
	if again.Name != "Ada" || !again.CreatedAt.Equal(got.CreatedAt) {
		t.Fatalf("cached user = %+v, want %+v", again, got)
	}

	// update: the next get sees the new value.
	again.Name = "Ada Lovelace"
	if err := users.Update(ctx, &again); err != nil {
		t.Fatal(err)
	}
	got, err = users.Get(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Ada Lovelace" {
		t.Fatalf("get after update: name %q", got.Name)
	}

	// delete: the next get is ErrNotFound (and so is the one after, from
	// the cached absence, with no SQL).
	if err := users.Delete(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	_, err = users.Get(ctx, u.ID)
	isNotFound(t, err)
	e.reset()
	_, err = users.Get(ctx, u.ID)
	isNotFound(t, err)
	if n := e.sql.Count(""); n != 0 {
		t.Fatalf("get of a cached absence ran %d SQL statements", n)
	}
	if ok, err := users.Exists(ctx, u.ID); ok || err != nil {
		t.Fatalf("Exists after delete = %v, %v", ok, err)
	}
	// The escape hatch is plain, uncached GORM on the table.
	var count int64
	if err := users.DB(ctx).Where("email = ?", u.Email).Count(&count).Error; err != nil || count != 0 {
		t.Fatalf("DB().Count after delete = %d, %v", count, err)
	}
	isNotFound(t, users.Delete(ctx, u.ID))

	// GetMany of 100 ids, 30 of them cached: one MGET, one SELECT.
	batch := make([]sample.User, 100)
	for i := range batch {
		batch[i] = sample.User{Email: fmt.Sprintf("u%d@example.com", i), Name: fmt.Sprintf("User %d", i)}
	}
	if err := e.db.Create(&batch).Error; err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(batch))
	for i, b := range batch {
		ids[i] = b.ID
	}
	for _, id := range ids[:30] {
		if _, err := users.Get(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	e.reset()
	many, err := users.GetMany(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.cmds.count("mget"); n != 1 {
		t.Errorf("GetMany sent %d MGETs, want 1", n)
	}
	if n, sel := e.sql.Count(""), e.sql.Count("SELECT"); n != 1 || sel != 1 {
		t.Errorf("GetMany ran %d SQL statements (%d SELECTs), want 1 SELECT: %q", n, sel, e.sql.All())
	}
	if len(many) != 100 {
		t.Fatalf("GetMany returned %d users, want 100", len(many))
	}
	for _, b := range batch {
		if m := many[b.ID]; m.Email != b.Email || m.Name != b.Name {
			t.Fatalf("GetMany[%d] = %+v, want %+v", b.ID, m, b)
		}
	}
	// Now all 100 are cached: no SQL at all.
	e.reset()
	if _, err := users.GetMany(ctx, ids); err != nil {
		t.Fatal(err)
	}
	if n := e.sql.Count(""); n != 0 {
		t.Errorf("second GetMany ran %d SQL statements", n)
	}
}

func TestRepository_GetMany_absentAndDuplicates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{})
	ctx := context.Background()
	a := sample.User{Email: "a@example.com", Name: "A"}
	b := sample.User{Email: "b@example.com", Name: "B"}
	for _, u := range []*sample.User{&a, &b} {
		if err := users.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	ids := []int64{a.ID, 1_000_001, b.ID, a.ID, 1_000_002, 1_000_001}
	e.reset()
	got, err := users.GetMany(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[a.ID].Email != a.Email || got[b.ID].Email != b.Email {
		t.Fatalf("GetMany = %+v", got)
	}
	if n := e.sql.Count("SELECT"); n != 1 {
		t.Fatalf("GetMany ran %d SELECTs, want 1", n)
	}
	// The absent ids are null-cached: asking again costs no SQL.
	e.reset()
	got, err = users.GetMany(ctx, ids)
	if err != nil || len(got) != 2 {
		t.Fatalf("second GetMany = %v, %v", got, err)
	}
	if n := e.sql.Count(""); n != 0 {
		t.Fatalf("second GetMany ran %d SQL statements, want 0", n)
	}
	_, err = users.Get(ctx, 1_000_002)
	isNotFound(t, err)
	if n := e.sql.Count(""); n != 0 {
		t.Fatalf("Get of a null-cached id ran %d SQL statements", n)
	}

	// Empty input: no work.
	e.reset()
	if got, err := users.GetMany(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("GetMany(nil) = %v, %v", got, err)
	}
	if e.cmds.count("")+e.sql.Count("") != 0 {
		t.Fatal("GetMany(nil) did some work")
	}
}

// A batch larger than BatchSize is loaded in chunks, still one MGET.
func TestRepository_GetMany_chunked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{BatchSize: 40})
	ctx := context.Background()
	batch := make([]sample.User, 100)
	for i := range batch {
		batch[i] = sample.User{Email: fmt.Sprintf("c%d@example.com", i), Name: "C"}
	}
	if err := e.db.Create(&batch).Error; err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, b := range batch {
		ids = append(ids, b.ID)
	}
	e.reset()
	got, err := users.GetMany(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 100 {
		t.Fatalf("got %d users", len(got))
	}
	if n := e.sql.Count("SELECT"); n != 3 {
		t.Fatalf("100 misses with BatchSize 40 ran %d SELECTs, want 3", n)
	}
	if n := e.cmds.count("mget"); n != 1 {
		t.Fatalf("%d MGETs, want 1", n)
	}
}

func TestRepository_Update_absent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{})
	ctx := context.Background()
	ghost := sample.User{ID: 424242, Email: "ghost@example.com", Name: "G"}
	isNotFound(t, users.Update(ctx, &ghost))
	var n int64
	if err := e.db.Model(&sample.User{}).Count(&n).Error; err != nil || n != 0 {
		t.Fatalf("Update of an absent row inserted it: %d rows, %v", n, err)
	}
	if err := users.Update(ctx, &sample.User{Name: "no id"}); !errors.Is(err, repo.ErrInvalidID) {
		t.Fatalf("Update without an id: %v", err)
	}
	if err := users.Create(ctx, nil); err == nil {
		t.Fatal("Create(nil) succeeded")
	}
}

func TestRepository_Put(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{})
	ctx := context.Background()
	// An absent id is cached as absent, then Put creates it: the absence
	// is cleared.
	_, err := users.Get(ctx, 77)
	isNotFound(t, err)
	u := sample.User{ID: 77, Email: "p@example.com", Name: "P"}
	if err := users.Put(ctx, &u); err != nil {
		t.Fatal(err)
	}
	got, err := users.Get(ctx, 77)
	if err != nil || got.Name != "P" {
		t.Fatalf("Get after Put = %+v, %v", got, err)
	}
	u.Name = "P2"
	if err := users.Put(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if got, err := users.Get(ctx, 77); err != nil || got.Name != "P2" {
		t.Fatalf("Get after second Put = %+v, %v", got, err)
	}
	var n int64
	e.db.Model(&sample.User{}).Count(&n)
	if n != 1 {
		t.Fatalf("%d rows after two Puts of one id", n)
	}
}

func TestRepository_Get_badInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	users := e.users(t, repo.Options{})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := users.Get(cctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context: %v", err)
	}
	if _, err := users.GetMany(cctx, []int64{1, 2}); !errors.Is(err, context.Canceled) {
		t.Fatalf("GetMany with a cancelled context: %v", err)
	}

	type Sku struct {
		Code string `gorm:"primaryKey;size:64"`
		Name string
	}
	if err := e.db.AutoMigrate(&Sku{}); err != nil {
		t.Fatal(err)
	}
	skus, err := repo.New[Sku, string](e.db, e.cache, &repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := skus.Get(ctx, ""); !errors.Is(err, repo.ErrInvalidID) {
		t.Fatalf("Get(\"\"): %v", err)
	}
	long := string(slices.Repeat([]byte("x"), 2000))

	// A database that is gone: an error, not ErrNotFound, and nothing
	// cached (the next read asks again).
	dead, err := gorm.Open(postgres.Open(e.dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := dead.DB()
	_ = sqlDB.Close()
	deadUsers, err := repo.New[sample.User, int64](dead, e.cache, &repo.Options{Name: "deadusers"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := deadUsers.Get(ctx, 1); err == nil || errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("Get on a closed database: %v", err)
		}
	}
	if st := deadUsers.Stats(); st.LoadErrors != 2 {
		t.Fatalf("stats after two failed loads: %+v", st)
	}
	if _, err := skus.Get(ctx, long); !errors.Is(err, repo.ErrInvalidID) {
		t.Fatalf("Get of a 2000-byte id: %v", err)
	}
}
