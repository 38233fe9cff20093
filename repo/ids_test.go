package repo_test

import (
	"context"
	"crypto/rand"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

// deviceID is a uuid-like id: 16 bytes, text through MarshalText.
type deviceID [16]byte

func newDeviceID() deviceID {
	var d deviceID
	_, _ = rand.Read(d[:])
	return d
}

func (d deviceID) MarshalText() ([]byte, error) {
	b := make([]byte, 36)
	hex.Encode(b[0:8], d[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], d[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], d[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], d[8:10])
	b[23] = '-'
	hex.Encode(b[24:], d[10:])
	return b, nil
}

func (d deviceID) Value() (driver.Value, error) {
	b, err := d.MarshalText()
	return string(b), err
}

func (d *deviceID) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case string:
		s = v
	case []byte:
		if len(v) == 16 {
			copy(d[:], v)
			return nil
		}
		s = string(v)
	default:
		return fmt.Errorf("deviceID: cannot scan %T", src)
	}
	var raw []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '-' {
			raw = append(raw, s[i])
		}
	}
	if len(raw) != 32 {
		return fmt.Errorf("deviceID: bad text %q", s)
	}
	_, err := hex.Decode(d[:], raw)
	return err
}

type device struct {
	ID   deviceID `gorm:"type:uuid;primaryKey"`
	Name string
}

type skuCode string

type sku struct {
	Code skuCode `gorm:"primaryKey;size:64"`
	Name string
}

type counter struct {
	ID uint64 `gorm:"primaryKey;autoIncrement:false"`
	N  int
}

// roundTrip creates rows through r, reads them back one by one and as a
// batch (with an absent id), and deletes one.
func roundTrip[T any, ID comparable](t *testing.T, r *repo.Repository[T, ID], rows []T, ids []ID, absent ID) {
	t.Helper()
	ctx := context.Background()
	for i := range rows {
		if err := r.Create(ctx, &rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range ids {
		for range 2 { // a miss, then a hit
			got, err := r.Get(ctx, id)
			if err != nil {
				t.Fatalf("Get(%v): %v", id, err)
			}
			if fmt.Sprint(got) != fmt.Sprint(rows[i]) {
				t.Fatalf("Get(%v) = %v, want %v", id, got, rows[i])
			}
		}
	}
	many, err := r.GetMany(ctx, append([]ID{absent}, ids...))
	if err != nil {
		t.Fatal(err)
	}
	if len(many) != len(ids) {
		t.Fatalf("GetMany returned %d rows, want %d", len(many), len(ids))
	}
	for i, id := range ids {
		if fmt.Sprint(many[id]) != fmt.Sprint(rows[i]) {
			t.Fatalf("GetMany[%v] = %v", id, many[id])
		}
	}
	_, err = r.Get(ctx, absent)
	isNotFound(t, err)
	if err := r.Delete(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	_, err = r.Get(ctx, ids[0])
	isNotFound(t, err)
}

func TestNew_idTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.db.AutoMigrate(&device{}, &sku{}, &counter{}); err != nil {
		t.Fatal(err)
	}
	t.Run("uuid-like", func(t *testing.T) {
		r, err := repo.New[device, deviceID](e.db, e.cache, &repo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rows := []device{{ID: newDeviceID(), Name: "a"}, {ID: newDeviceID(), Name: "b"}}
		roundTrip(t, r, rows, []deviceID{rows[0].ID, rows[1].ID}, newDeviceID())
	})
	t.Run("named string", func(t *testing.T) {
		r, err := repo.New[sku, skuCode](e.db, e.cache, &repo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Codes with characters that mean something in Redis keys.
		rows := []sku{{Code: "A:1", Name: "a"}, {Code: "{b} *", Name: "b"}}
		roundTrip(t, r, rows, []skuCode{"A:1", "{b} *"}, "A")
	})
	t.Run("uint64", func(t *testing.T) {
		r, err := repo.New[counter, uint64](e.db, e.cache, &repo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rows := []counter{{ID: 1 << 62, N: 1}, {ID: 7, N: 2}}
		roundTrip(t, r, rows, []uint64{1 << 62, 7}, 8)
	})
}

func TestNew_badModelOrOptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	type pair struct {
		A int64 `gorm:"primaryKey"`
		B int64 `gorm:"primaryKey"`
	}
	check := func(name string, err error) {
		t.Helper()
		if !errors.Is(err, repo.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	_, err := repo.New[pair, int64](e.db, e.cache, &repo.Options{})
	check("composite primary key", err)
	_, err = repo.New[sample.User, string](e.db, e.cache, &repo.Options{})
	check("ID type other than the key's", err)
	_, err = repo.New[sample.User, int64](nil, e.cache, &repo.Options{})
	check("nil db", err)
	_, err = repo.New[sample.User, int64](e.db, nil, &repo.Options{})
	check("nil cache", err)
	_, err = repo.New[sample.User, int64](e.db, e.cache, &repo.Options{BatchSize: -1})
	check("negative BatchSize", err)
	_, err = repo.New[sample.User, int64](e.db, e.cache, &repo.Options{
		Filter: e.filterOptions(10), FilterClient: e.rdb,
		Policy: cacheaside.Policy{Filter: noFilter{}},
	})
	check("Filter and Policy.Filter", err)
	_, err = repo.New[sample.User, int64](e.db, e.cache, &repo.Options{Filter: e.filterOptions(0), FilterClient: e.rdb})
	check("bad bloom options", err)
	_, err = repo.New[sample.User, int64](e.db, e.cache, &repo.Options{Policy: cacheaside.Policy{TTL: -1}})
	check("bad policy", err)

	users, err := repo.New[sample.User, int64](e.db, e.cache, &repo.Options{Name: "people"})
	if err != nil {
		t.Fatal(err)
	}
	if users.Name() != "people" || users.Table() != "users" {
		t.Errorf("Name, Table = %q, %q", users.Name(), users.Table())
	}
}

type noFilter struct{}

func (noFilter) MightContain(context.Context, string) (bool, error) { return true, nil }
