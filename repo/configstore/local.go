package configstore

import "sync"

// Local is an in-process copy of a scope's settings, fed by Watch:
//
//	ch, err := store.Watch(ctx)
//	...
//	for c := range ch {
//		local.Apply(c)
//	}
//
// It keeps each key's version (and deleted keys as tombstones), so changes
// that repeat or arrive out of order leave it at the newest state. The
// zero value is an empty copy, safe for concurrent use.
type Local struct {
	mu      sync.RWMutex
	entries map[string]Change // guarded by mu; Deleted entries are tombstones
}

// Apply records c if it is newer than what the copy holds for c.Key and
// reports whether it did. A change of the same version that says
// something else is recorded too: writers never publish two values under
// one version, so it is Reconcile repairing an entry changed in Redis
// alone, which the copy may have taken from a snapshot. A deletion with
// Version 0 (a foreign entry removed by Reconcile) removes the key
// outright.
//
// An entry changed in Redis to a version above the table's (a database
// restored from a backup) is repaired in the hash by Reconcile, but a copy
// that took it from a snapshot keeps it until the key is written again.
func (l *Local) Apply(c Change) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, ok := l.entries[c.Key]
	if c.Deleted && c.Version == 0 {
		delete(l.entries, c.Key)
		return ok
	}
	if ok && (c.Version < cur.Version || c.Version == cur.Version && c.Deleted == cur.Deleted && c.Value == cur.Value) {
		return false
	}
	if l.entries == nil {
		l.entries = make(map[string]Change)
	}
	l.entries[c.Key] = c
	return true
}

// Get returns key's value and whether it has one.
func (l *Local) Get(key string) (string, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	c, ok := l.entries[key]
	if !ok || c.Deleted {
		return "", false
	}
	return c.Value, true
}

// All returns a copy of every key with a value.
func (l *Local) All() map[string]string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make(map[string]string, len(l.entries))
	for k, c := range l.entries {
		if !c.Deleted {
			out[k] = c.Value
		}
	}
	return out
}
