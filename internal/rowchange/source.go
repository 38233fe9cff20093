package rowchange

import (
	"reflect"
	"runtime"
	"sync"
)

// tables maps the address of a registered repository to its table (what
// the repository gives the change-data-capture reader: package repo/cdc
// declares the interface it must satisfy). The address is kept as a
// number, not a pointer, so that the registry does not keep a repository
// alive; a cleanup removes the entry when the repository is collected
// (the garbage collector does not move objects).
var tables sync.Map // uintptr → any

// Register makes t the table of the repository at pointer owner, until
// owner is collected. t must not refer to owner.
func Register[O any](owner *O, t any) {
	key := uintptr(reflect.ValueOf(owner).UnsafePointer())
	tables.Store(key, t)
	runtime.AddCleanup(owner, func(key uintptr) { tables.CompareAndDelete(key, t) }, key)
}

// Lookup returns the table registered for owner, a pointer.
func Lookup(owner any) (any, bool) {
	v := reflect.ValueOf(owner)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, false
	}
	return tables.Load(uintptr(v.UnsafePointer()))
}
