package bloom

// Test switches: unexported, so that no user can turn the rule off.

// IgnoreTrust turns off the completeness rule for f: untrusted shards
// answer from their bits, as before the rule, and start no rebuild. Call
// it before f is used.
func IgnoreTrust(f *Filter) { f.ignoreTrust = true }

// OnAutoRebuild sets a hook called with the outcome of each automatic
// rebuild attempt of f, once it is over. Call it before f is used.
func OnAutoRebuild(f *Filter, hook func(error)) { f.auto.hook = hook }

// AutoAttempts is how many automatic rebuild attempts f started.
func AutoAttempts(f *Filter) int64 { return f.auto.attempts.Load() }

// ErrLeaseHeld is the outcome of an attempt that found another process's
// lease.
var ErrLeaseHeld = errLeaseHeld
