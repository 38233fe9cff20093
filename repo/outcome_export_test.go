package repo

import "github.com/asidekit/asidekit/internal/testswitch"

// SetUnknownUpkeepOff switches off (true) or on the upkeep of writes whose
// outcome is unknown, for the tests that show what it prevents. Tests
// that use it must not run in parallel with other tests of writes.
func SetUnknownUpkeepOff(off bool) { testswitch.UnknownUpkeepOff.Store(off) }
