package benchmarks

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

// localRepoBase is the first users id local_invalidation's repo variants
// write: far above the rows other scenarios seed, so that changing their
// names changes no other scenario's data.
const localRepoBase = 900_000_000

// runLocalRepo is runLocalVariant with every process a repo.Repository of
// users over the Env's database: the writer changes a row's name (the
// version) with Update, which commits the UPDATE and then writes the
// cache; the readers Get the rows, loading them from the database on a
// miss.
func runLocalRepo(ctx context.Context, env *Env, p LocalInvalidationParams, v localVariant) (Row, error) {
	ns := env.Sub("local-" + strings.ReplaceAll(v.name, "/", "-"))
	opts := repo.Options{Name: "user", Policy: cacheaside.Policy{TTL: time.Hour, Strategy: cacheaside.SingleFlight,
		Local: &cacheaside.LocalPolicy{TTL: p.LocalTTL}}}
	open := func() (*cacheaside.Cache, *repo.Repository[sample.User, int64], error) {
		var users *repo.Repository[sample.User, int64]
		c, err := openNear(ctx, env, ns, v.mode, func(c *cacheaside.Cache) (err error) {
			users, err = repo.New[sample.User, int64](env.DB, c, &opts)
			return err
		})
		return c, users, err
	}
	wc, writer, err := open()
	if err != nil {
		return Row{}, err
	}
	defer wc.Close()
	// The rows start at version 0 (a previous run's rows are overwritten).
	row := func(k int, ver int64) *sample.User {
		id := int64(localRepoBase + k)
		return &sample.User{ID: id, Email: fmt.Sprintf("local-%d@example.com", id), Name: strconv.FormatInt(ver, 10)}
	}
	vers := make([]int64, p.Keys) // written by the writer only
	for k := range vers {
		if err := writer.Put(ctx, row(k, 0)); err != nil {
			return Row{}, fmt.Errorf("seed: %w", err)
		}
	}
	readers := make([]*repo.Repository[sample.User, int64], p.Instances)
	for i := range readers {
		c, users, err := open()
		if err != nil {
			return Row{}, err
		}
		defer c.Close()
		readers[i] = users
	}
	read := func(ctx context.Context, proc, k int) (Value, error) {
		return readers[proc].Get(ctx, int64(localRepoBase+k))
	}
	d := p.drive(max(200*time.Millisecond, 4*p.WriteEvery), read, func(ctx context.Context, _, k int) (int64, error) {
		vers[k]++
		return vers[k], writer.Update(ctx, row(k, vers[k]))
	})
	st := d.run(ctx)
	out := Row{Variant: v.name, Notes: v.notes}
	st.setInvalidation(&out)
	return out, nil
}
