package cacheaside

// Closed reports whether Close was called. A closed Cache still reads
// and writes Redis, with no background work (no invalidation retries, no
// refreshes): callers whose writes need that upkeep (repo's) refuse to
// write with ErrClosed.
func (c *Cache) Closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}
