package rowchange_test

import (
	"testing"

	"github.com/asidekit/asidekit/internal/rowchange"
)

type owner struct {
	name string
	rowchange.Source
}

func TestTableOf(t *testing.T) {
	tbl := &struct{ n int }{1}
	o := &owner{name: "o", Source: rowchange.NewSource(tbl)}
	if got, ok := rowchange.TableOf(o); !ok || got != tbl {
		t.Errorf("TableOf(owner) = %v, %v; want its table", got, ok)
	}
	view := *o // a copy (a transaction's view) carries the same table
	if got, ok := rowchange.TableOf(&view); !ok || got != tbl {
		t.Errorf("TableOf(copy) = %v, %v; want the same table", got, ok)
	}
	for _, bad := range []any{nil, 42, &owner{}, struct{}{}, (*owner)(nil)} {
		if got, ok := rowchange.TableOf(bad); ok || got != nil {
			t.Errorf("TableOf(%#v) = %v, %v; want nil, false", bad, got, ok)
		}
	}
}
