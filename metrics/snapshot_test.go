package metrics_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// numbered returns an S whose integer fields hold 1, 2, 3... in order, so
// that each field's value names it.
func numbered[S any](t *testing.T) S {
	t.Helper()
	var s S
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.Uint64:
			f.SetUint(uint64(i + 1))
		case reflect.Int64:
			f.SetInt(int64(i + 1))
		default:
			t.Fatalf("%s.%s is a %s: teach the collector and this test about it",
				v.Type(), v.Type().Field(i).Name, f.Kind())
		}
	}
	return s
}

// checkEveryField fails unless c exports each field of a numbered S
// exactly once: a field added to S must be exported too.
func checkEveryField[S any](t *testing.T, c prometheus.Collector) {
	t.Helper()
	reg := registry(t, c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got = append(got, m.GetCounter().GetValue())
		}
	}
	slices.Sort(got)
	typ := reflect.TypeFor[S]()
	var want []float64
	for i := range typ.NumField() {
		want = append(want, float64(i+1))
	}
	if !slices.Equal(got, want) {
		t.Errorf("exported values %v, want each of %v once (one per field of %s)", got, want, typ)
	}
}

// statsFunc adapts a func to the Stats interfaces.
type statsFunc[S any] func() S

func (f statsFunc[S]) Stats() S { return f() }
