package repo

import "github.com/asidekit/asidekit/internal/testswitch"

// SetListBumpsOff switches list invalidation off (true) or on, for the
// tests that show the list tests fail without it. Tests that use it must
// not run in parallel with other query tests.
func SetListBumpsOff(off bool) { testswitch.ListBumpsOff.Store(off) }
